// @ts-check
// Run history of a session (API.md, Runs and tool calls): each run with its status,
// steps, duration and cost; its tool calls with their durations; resume for a paused or
// interrupted run.

import { ApiError, describe, get, post, query } from "./api.js";
import { ago, clear, count, duration, h, money, shortId, when } from "./dom.js";
import { timelineToggle } from "./timeline.js";


export class RunsPanel {
  /**
   * @param {HTMLElement} root
   * @param {string} sessionId
   * @param {{onClose?: () => void}} [options]
   */
  constructor(root, sessionId, { onClose } = {}) {
    this.root = root;
    this.sessionId = sessionId;
    this.cursor = null;
    this.expanded = new Set();
    this.loading = false;
    this.list = h("ol.runs-list", { "aria-label": "Runs, newest first" });
    this.more = h("button.link-button", { type: "button", hidden: true, onclick: () => this.load(true) }, "Older runs");
    this.status = h("p.muted.runs-status", { role: "status" });
    clear(root,
      h("div.panel-head", {},
        h("h3", {}, "Run history"),
        h("span", {},
          h("button.icon-button", { type: "button", title: "Refresh runs", "aria-label": "Refresh runs", onclick: () => this.load() }, "↻"),
          onClose ? h("button.icon-button", { type: "button", title: "Close", "aria-label": "Close run history", onclick: onClose }, "✕") : null),
      ),
      this.status, this.list, this.more);
  }

  async load(more = false) {
    if (this.loading) return;
    this.loading = true;
    try {
      const page = await get(`/api/agent-runs${query({ sessionId: this.sessionId, limit: 20, cursor: more ? this.cursor : null })}`);
      if (!more) clear(this.list);
      for (const run of page.data || []) this.list.append(this.renderRun(run));
      this.cursor = page.nextCursor;
      this.more.hidden = !page.nextCursor;
      this.status.textContent = this.list.children.length ? "" : "No runs yet: send a prompt to start one.";
    } catch (err) {
      this.status.textContent = err instanceof ApiError && err.status === 404
        ? "This server does not keep run history."
        : `Could not load runs: ${describe(err)}`;
    } finally {
      this.loading = false;
    }
  }

  renderRun(run) {
    const calls = h("div.run-calls", { hidden: !this.expanded.has(run.id) });
    const toggle = h("button.run-toggle", {
      type: "button", "aria-expanded": String(this.expanded.has(run.id)),
      onclick: () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        calls.hidden = !open;
        if (open) {
          this.expanded.add(run.id);
          this.loadCalls(run, calls);
        } else {
          this.expanded.delete(run.id);
        }
      },
    },
    h("span.run-line", {},
      h(`span.badge.badge-${run.status}`, {}, run.status),
      h("span.run-when", { title: when(run.createdAt) }, ago(run.createdAt))),
    h("span.run-facts", {},
      h("span", {}, `${count(run.stepCount)} step${run.stepCount === 1 ? "" : "s"}`, run.maxSteps ? ` / ${run.maxSteps}` : ""),
      h("span", {}, duration(run.durationMs)),
      money(run.cost) ? h("span", {}, money(run.cost)) : null),
    run.summary ? h("span.run-summary", {}, run.summary) : null,
    run.errorMessage ? h("span.run-error", {}, run.errorMessage) : null);
    const item = h("li.run", { dataset: { runId: run.id, status: run.status } }, toggle,
      run.resumedFrom ? h("div.muted.small", {}, `resumed from run ${shortId(run.resumedFrom)}`) : null,
      run.status === "paused" || run.status === "interrupted"
        ? this.resumeButton(run) : null,
      run.status === "running" ? null : timelineToggle(run),
      calls);
    if (this.expanded.has(run.id)) this.loadCalls(run, calls);
    return item;
  }

  resumeButton(run) {
    const note = h("span.error-text", { role: "alert" });
    const button = h("button.small-button.primary", {
      type: "button",
      onclick: async () => {
        button.disabled = true;
        note.textContent = "";
        try {
          await post(`/api/agent-runs/${run.id}/resume`, {});
          await this.load();
        } catch (err) {
          note.textContent = describe(err);
          button.disabled = false;
        }
      },
    }, "Resume run");
    return h("div.run-actions", {}, button, note);
  }

  async loadCalls(run, node) {
    clear(node, h("p.muted.small", {}, "Loading tool calls…"));
    try {
      const rows = [];
      let cursor = null;
      do {
        const page = await get(`/api/agent-runs/${run.id}/tool-calls${query({ limit: 200, cursor })}`);
        rows.push(...(page.data || []));
        cursor = page.nextCursor;
      } while (cursor && rows.length < 1000);
      if (!rows.length) {
        clear(node, h("p.muted.small", {}, "No tool calls in this run."));
        return;
      }
      clear(node, h("table.calls", {},
        h("caption.sr-only", {}, "Tool calls of this run"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, "Tool"),
          h("th", { scope: "col" }, "Status"), h("th.num", { scope: "col" }, "Time"))),
        h("tbody", {}, rows.map((call) => h("tr", {},
          h("td.num", {}, call.stepNumber ?? ""),
          h("td", {}, h("span.call-name", {}, call.toolName || call.toolCallId), h("span.muted.small", {}, ` ${call.kind || ""}`)),
          h("td", {}, h(`span.badge.badge-${call.status}`, {}, call.status)),
          h("td.num", {}, duration(call.durationMs)))))));
    } catch (err) {
      clear(node, h("p.error-text", {}, `Could not load tool calls: ${describe(err)}`));
    }
  }
}
