// @ts-check
// The Errors page (#/errors): failed and interrupted runs, newest first, each with its
// error message and the last messages before it, and a link to the session at that point
// (#/s/<id>/r/<runId>: the session view scrolls to where that run ended and marks it).

import { describe, get, query } from "./api.js";
import { ago, clear, h, revealWhenShown, shortId, when } from "./dom.js";

const SHOWN = 4; // the last messages shown before the error

function summary(message) {
  const c = message.content || {};
  switch (c.type) {
    case "text": return `${message.role === "user" ? "You" : "Agent"}: ${c.text}`;
    case "tool": return `Tool ${c.tool || c.toolCallId}: ${c.status}`;
    case "status": return `Session ${c.status}${c.reason ? ` (${c.reason})` : ""}`;
    case "permission": return `Permission asked for ${c.tool || c.toolCallId}`;
    case "run": return `Run ${c.status}`;
    default: return c.type || "message";
  }
}

async function lastMessages(run) {
  let all = [];
  let cursor = null;
  do {
    const page = await get(`/api/agent-runs/${run.id}/messages${query({ limit: 1000, cursor })}`);
    all = all.concat(page.data || []).slice(-50);
    cursor = page.nextCursor;
  } while (cursor);
  const shown = all.filter((m) => ["text", "tool", "status", "permission"].includes(m.content?.type));
  return shown.slice(-SHOWN);
}

export class ErrorsPage {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.list = h("ol.error-runs", { "aria-label": "Failed and interrupted runs, newest first" });
    this.status = h("p.muted", { role: "status" });
    clear(root, h("div.page-head", {}, h("h2", { tabindex: -1 }, "Errors"),
      h("p.muted", {}, "Runs that failed or were interrupted, newest first.")), this.status, this.list);
  }

  async start() {
    this.status.textContent = "Loading…";
    try {
      const page = await get(`/api/agent-runs${query({ status: "failed,interrupted", limit: 50 })}`);
      const runs = page.data || [];
      this.status.textContent = runs.length ? "" : "No failed or interrupted runs.";
      for (const run of runs) this.list.append(await this.item(run));
    } catch (err) {
      this.status.textContent = `Could not load the errors: ${describe(err)}`;
    }
  }

  async item(run) {
    const last = await lastMessages(run).catch(() => []);
    return h("li.error-run", { dataset: { runId: run.id, status: run.status } },
      h("div.run-line", {},
        h(`span.badge.badge-${run.status}`, {}, run.status),
        h("span", {}, run.agentId),
        h("span.run-when", { title: when(run.createdAt) }, ago(run.createdAt)),
        h("a.error-link", { href: `#/s/${run.sessionId}/r/${run.id}` }, `Open session ${shortId(run.sessionId)} where it ended`)),
      h("p.run-error", {}, run.errorMessage || "(no error message)"),
      last.length ? h("ol.error-context", { "aria-label": "The last messages before it" },
        last.map((m) => h("li", { dataset: { seq: m.seq } }, h("span.muted.small", {}, `#${m.seq} `),
          summary(m).slice(0, 300)))) : null);
  }
}

/** Scroll the session view to where run `runId` ended once that is on screen; mark it. */
export function revealRun(root, runId) {
  revealWhenShown(root, `.run-marker[data-run-id="${CSS.escape(runId)}"]:not(.run-running)`);
}
