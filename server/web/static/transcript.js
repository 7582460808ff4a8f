// @ts-check
// The conversation of one session, built from stream messages (API.md, Messages).
//
// Every message arrives once, in seq order. Streamed text and thoughts grow in place and
// are replaced by the final whole text; the plan of a run is one checklist updated in
// place; tool calls are cards keyed by run and toolCallId, updated in place; a pending
// permission request is handed to the view (onPermission) and taken back once decided.

import { personName } from "./me.js";
import { renderDiff } from "./diff.js";
import { ago, clear, duration, h, pretty, when } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { attachmentList, elicitationNote } from "./attachments.js";
import { SHOWN_MODES } from "./elicitation.js";
import { clientToolNote } from "./client-tools.js";

const KIND_LABELS = {
  read: "Read", edit: "Edit", delete: "Delete", move: "Move", search: "Search",
  execute: "Run", think: "Think", fetch: "Fetch", switch_mode: "Mode", other: "Tool",
};
const STATUS_LABELS = {
  pending: "pending", in_progress: "running", completed: "done", error: "failed", cancelled: "cancelled",
};
const STEP_LABELS = { pending: "to do", in_progress: "in progress", completed: "done" };

export class Transcript {
  /**
   * root: the scrolling log element. hooks: onPermission(content, message) for a pending
   * request, onPermissionDecided(content), messageActions(message) → element | null.
   */
  constructor(root, hooks = {}) {
    this.root = root;
    this.hooks = hooks;
    this.open = {}; // type ("text" | "thought") → {node, body, text, runId}
    this.tools = new Map(); // runId:toolCallId → {node, ...}
    this.plans = new Map(); // runId → node
    this.runEnds = new Map(); // runId → seq of the message that ended it
    this.controls = null; // the last controls seen: a config change says what changed
    this.dirty = new Set();
    this.frame = 0;
    this.stick = true;
    this.count = 0;
    root.addEventListener("scroll", () => {
      this.stick = root.scrollHeight - root.scrollTop - root.clientHeight < 60;
    }, { passive: true });
  }

  reset() {
    clear(this.root);
    this.open = {};
    this.tools.clear();
    this.plans.clear();
    this.runEnds.clear();
    this.controls = null;
    this.dirty.clear();
    this.stick = true;
    this.count = 0;
  }

  add(message) {
    const content = message.content || {};
    this.count += 1;
    switch (content.type) {
      case "text":
        if (message.role === "user") this.addUser(message, content);
        else this.addStreamed("text", message, content);
        break;
      case "thought":
        this.addStreamed("thought", message, content);
        break;
      case "plan":
        this.setPlan(message, content);
        break;
      case "tool":
        this.setTool(message, content);
        break;
      case "permission":
        this.setPermission(message, content);
        break;
      case "status":
        this.addStatus(message, content);
        break;
      case "run":
        this.addRun(message, content);
        break;
      case "controls":
        this.addControls(message, content);
        break;
      case "review":
        this.addReview(message, content);
        break;
      case "elicitation":
        if (content.outcome && SHOWN_MODES.includes(content.mode)) this.append(elicitationNote(content));
        break;
      case "client_tool":
        if (content.outcome) this.append(clientToolNote(content));
        break;
      default:
        break; // usage and other updates are shown by the header, not the log
    }
    this.scroll();
  }

  append(node) {
    this.root.append(node);
    return node;
  }

  addUser(message, content) {
    this.closeAll();
    const who = content.by ? personName(content.by) : "You";
    this.append(h("article.msg.msg-user", { dataset: { seq: message.seq }, "aria-label": who },
      h("div.msg-head", {}, h("span.who", {}, who),
        h("time.ago", { datetime: message.timestamp, title: when(message.timestamp) }, ago(message.timestamp)),
        this.hooks.messageActions?.(message)),
      h("div.msg-body.plain", {}, content.text || ""),
      attachmentList(content.attachments)));
  }

  /** A streamed text or thought: chunks grow one block; the final message replaces it. */
  addStreamed(type, message, content) {
    let block = this.open[type];
    if (block && block.runId !== message.runId) {
      this.close(type);
      block = null;
    }
    if (!block) {
      block = type === "thought" ? this.newThought(message) : this.newText(message);
      this.open[type] = block;
    }
    if (content.partial) {
      block.text += content.text || "";
      block.node.classList.add("streaming");
    } else {
      block.text = content.text || "";
      block.seq = message.seq;
      block.node.dataset.seq = String(message.seq);  // a search hit opens here
      this.close(type);
      this.hooks.decorateFinal?.(block.node, message);
    }
    this.markDirty(block);
  }

  newText(message) {
    const body = h("div.msg-body.md");
    const head = h("div.msg-head", {}, h("span.who", {}, "Agent"),
      h("time.ago", { datetime: message.timestamp, title: when(message.timestamp) }, ago(message.timestamp)));
    const node = this.append(h("article.msg.msg-agent", { "aria-label": "Agent" }, head, body));
    return { node, body, head, text: "", runId: message.runId };
  }

  newThought(message) {
    const body = h("div.thought-body.md");
    const node = this.append(h("details.thought", {},
      h("summary", {}, h("span.thought-label", {}, "Thinking"), h("span.thought-preview")), body));
    return { node, body, text: "", runId: message.runId, thought: true };
  }

  close(type) {
    const block = this.open[type];
    if (!block) return;
    block.node.classList.remove("streaming");
    if (block.thought) block.node.querySelector(".thought-label").textContent = "Thought";
    this.open[type] = null;
  }

  closeAll() {
    this.close("text");
    this.close("thought");
  }

  markDirty(block) {
    this.dirty.add(block);
    if (document.hidden) {
      this.flush();
    } else if (!this.frame) {
      this.frame = requestAnimationFrame(() => this.flush());
    }
  }

  flush() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const block of this.dirty) {
      block.body.innerHTML = renderMarkdown(block.text); // safe: the renderer escapes first
      if (block.thought) {
        const preview = block.text.trim().split("\n")[0];
        block.node.querySelector(".thought-preview").textContent = preview ? ` — ${preview}` : "";
      }
    }
    this.dirty.clear();
    this.scroll();
  }

  setPlan(message, content) {
    const key = message.runId || "none";
    let node = this.plans.get(key);
    if (!node) {
      node = this.append(h("section.plan.card", { "aria-label": "Plan" }));
      this.plans.set(key, node);
    }
    const steps = Array.isArray(content.steps) ? content.steps : [];
    const done = steps.filter((s) => s.status === "completed").length;
    clear(node,
      h("div.card-head", {}, h("span.card-title", {}, "Plan"),
        h("span.plan-progress", {}, `${done}/${steps.length} done`)),
      h("ul.checklist", {}, steps.map((step) => h(`li.step.step-${step.status || "pending"}`, {},
        h("span.check", { "aria-hidden": "true" }, step.status === "completed" ? "✓" : step.status === "in_progress" ? "◐" : ""),
        h("span.step-text", {}, step.content || ""),
        h("span.sr-only", {}, ` (${STEP_LABELS[step.status] || step.status})`),
        step.priority === "high" ? h("span.priority", { title: "high priority" }, "high") : null))));
  }

  toolKey(message, content) {
    return `${message.runId || "none"}:${content.toolCallId}`;
  }

  setTool(message, content) {
    this.closeAll();
    const key = this.toolKey(message, content);
    let card = this.tools.get(key);
    if (!card) {
      card = this.newToolCard(content, key);
      this.tools.set(key, card);
      card.started = Date.parse(message.timestamp);
    }
    const status = content.status || "pending";
    card.node.className = `tool card tool-${status}${card.awaiting ? " awaiting" : ""}`;
    card.kind.className = `tool-kind kind-${content.kind || "other"}`;
    card.kind.textContent = KIND_LABELS[content.kind] || content.kind || "Tool";
    card.title.textContent = content.tool || content.toolCallId || "tool call";
    card.status.textContent = card.awaiting && status === "pending" ? "needs permission" : STATUS_LABELS[status] || status;
    card.status.className = `badge badge-${status}`;
    card.statusValue = status;
    if (["completed", "error", "cancelled"].includes(status) && card.started) {
      card.time.textContent = duration(Date.parse(message.timestamp) - card.started);
    }
    const diffs = (content.content || []).filter((b) => b && b.type === "diff");
    const texts = (content.content || [])
      .filter((b) => b && b.type === "content" && b.content?.type === "text")
      .map((b) => b.content.text);
    const terminals = (content.content || []).filter((b) => b && b.type === "terminal");
    const rel = (path) => this.hooks.relativePath?.(path) ?? path;
    const open = this.hooks.openPath;
    const place = (l) => (l.line ? `${rel(l.path)}:${l.line}` : rel(l.path));
    const locations = (content.locations || []).filter((l) => l && typeof l.path === "string");
    const result = content.result;
    // a write the person rejected, or one that failed or was cancelled, changed nothing
    const notApplied = diffs.length > 0 && (status === "error" || status === "cancelled");
    card.notApplied.hidden = !notApplied;
    clear(card.body,
      locations.length ? section("Files", h("ul.locations", {}, locations.map((l) => h("li", {},
        open ? h("button.link-button.path-link", { type: "button", title: "Open this file", onclick: () => open(l.path, l.line ?? null) }, h("code", {}, place(l)))
          : h("code", {}, place(l)))))) : null,
      content.args !== null && content.args !== undefined ? section("Arguments", h("pre.json", {}, pretty(relativize(content.args, rel)))) : null,
      diffs.length ? section(notApplied ? "Changes (not applied)" : "Changes",
        diffs.map((d) => renderDiff({ ...d, path: rel(d.path) }, open && !notApplied ? () => open(d.path, null) : null, notApplied))) : null,
      texts.length && !sameAsResult(texts, result) ? section("Output", h("pre.output", {}, texts.join("\n"))) : null,
      terminals.length ? section("Terminal", terminals.map((t) => h("code", {}, t.terminalId))) : null,
      result !== null && result !== undefined ? section(status === "error" ? "Error" : "Result", h("pre.json", {}, pretty(relativize(result, rel)))) : null,
    );
    if (diffs.length && !card.opened) {
      card.node.open = true; // edits are what people check; the rest stays folded
      card.opened = true;
    }
    if (status === "error" && !card.opened) {
      card.node.open = true;
      card.opened = true;
    }
  }

  newToolCard(content, key) {
    const kind = h("span.tool-kind");
    const title = h("span.tool-title");
    const status = h("span.badge");
    const time = h("span.tool-time");
    const notApplied = h("span.not-applied-badge", { hidden: true }, "not applied");
    const body = h("div.tool-body");
    const node = this.append(h("details.tool.card", { dataset: { key, toolCallId: content.toolCallId } },
      h("summary", {}, kind, title, time, notApplied, status), body));
    node.addEventListener("toggle", () => { if (node.open) this.scroll(); });
    return { node, kind, title, status, time, body, notApplied, awaiting: false, opened: false };
  }

  setPermission(message, content) {
    this.closeAll();
    const card = this.tools.get(this.toolKey(message, content));
    if (content.outcome) {
      if (card) {
        card.awaiting = false;
        card.node.classList.remove("awaiting");
        card.status.textContent = STATUS_LABELS[card.statusValue] || card.statusValue;
      }
      this.hooks.onPermissionDecided?.(content);
      const chosen = content.outcome.outcome === "selected"
        ? (content.options || []).find((o) => o.optionId === content.outcome.optionId) : null;
      const verdict = chosen ? chosen.name : "cancelled";
      const rejected = chosen ? /^reject/.test(chosen.kind || "") : true;
      const why = content.reason && content.reason !== "user" ? ` (${content.reason.replace(/_/g, " ")})` : "";
      this.append(h(`div.note.permission-note${rejected ? ".rejected" : ".allowed"}`, {},
        h("span.note-mark", { "aria-hidden": "true" }, rejected ? "✕" : "✓"),
        `Permission for “${content.tool || content.toolCallId || "a tool"}”: `, h("strong", {}, verdict), why,
        content.by ? h("span.answered-by", {}, ` by ${personName(content.by)}`) : null));
    } else {
      if (card) {
        card.awaiting = true;
        card.node.classList.add("awaiting");
        if (card.statusValue === "pending") card.status.textContent = "needs permission";
      }
      this.hooks.onPermission?.(content, message);
    }
  }

  addStatus(message, content) {
    this.closeAll();
    if (content.status === "active" && content.reason === "created") {
      this.append(h("div.note.status-note", {}, `Session started · ${when(message.timestamp)}`));
      return;
    }
    const reason = content.reason ? content.reason.replace(/_/g, " ") : "";
    const detail = content.detail || {};
    const text = {
      active: "Session is active again",
      completed: "Session completed",
      cancelled: "Session ended",
      error: "Session stopped with an error",
    }[content.status] || `Session ${content.status}`;
    this.append(h(`div.note.status-note.status-${content.status}`, { role: content.status === "error" ? "alert" : null },
      h("strong", {}, text), reason ? ` — ${reason}` : "",
      detail.message ? h("div", {}, detail.message) : null,
      detail.exitCode !== undefined && detail.exitCode !== null ? h("div", {}, `Exit code ${detail.exitCode}`) : null,
      detail.stderrTail ? h("pre.stderr", { "aria-label": "Agent error output" }, String(detail.stderrTail)) : null));
  }

  /** A mode or model (config) change leaves a line: what it is now, and who changed it. */
  addControls(message, content) {
    const controls = content.controls || {};
    const before = this.controls;
    this.controls = controls;
    if (content.change !== "mode" && content.change !== "config") return;
    const by = content.by === "client" ? "by you" : "by the agent";
    const parts = [];
    if (content.change === "mode") {
      const modes = controls.modes || {};
      const mode = (modes.available || []).find((m) => m.id === modes.currentModeId);
      parts.push(["Mode", mode?.name || modes.currentModeId || "none"]);
    } else {
      const old = new Map((before?.config || []).map((o) => [o.id, o.currentValue]));
      for (const option of controls.config || []) {
        if (before && old.get(option.id) === option.currentValue) continue;
        const value = (option.options || []).find((v) => v.value === option.currentValue);
        parts.push([option.name || option.id, value?.name ?? String(option.currentValue)]);
      }
    }
    if (!parts.length) return;
    this.closeAll();
    this.append(h("div.note.controls-note", { dataset: { change: content.change } },
      h("span.note-mark", { "aria-hidden": "true" }, "⚙"),
      parts.map(([name, value], i) => [i ? "; " : "", `${name} set to `, h("strong", {}, value)]),
      ` ${by} · `,
      h("time.ago", { datetime: message.timestamp, title: when(message.timestamp) }, ago(message.timestamp))));
  }

  /** A change a person undid in review. */
  addReview(message, content) {
    const stamp = h("time.ago", { datetime: message.timestamp, title: when(message.timestamp) }, ago(message.timestamp));
    const by = content.by && typeof content.by === "object" ? [` by ${personName(content.by)}`] : [];
    const short = (commit) => h("code", {}, String(commit || "").slice(0, 12));
    if (content.action === "revert") {
      this.closeAll();
      const hunks = Array.isArray(content.hunks) && content.hunks.length
        ? ` (hunk${content.hunks.length === 1 ? "" : "s"} ${content.hunks.map((i) => i + 1).join(", ")})` : "";
      this.append(h("div.note.review-note", {},
        h("span.note-mark", { "aria-hidden": "true" }, "↶"),
        `Reverted in review: `, h("code", {}, content.path || ""), hunks, " · ", stamp));
    } else if (content.action === "commit") {
      this.closeAll();
      const files = Array.isArray(content.files) ? content.files.length : 0;
      this.append(h("div.note.review-note.commit-note", {},
        h("span.note-mark", { "aria-hidden": "true" }, "●"),
        "Committed ", short(content.commit), ` on ${content.branch || "the branch"} (${files} file${files === 1 ? "" : "s"})`,
        ...by, " · ", stamp));
    } else if (content.action === "merge") {
      this.closeAll();
      this.append(h("div.note.review-note.merge-note", {},
        h("span.note-mark", { "aria-hidden": "true" }, "⤵"),
        `Merged into ${content.into || "?"}`, content.commit ? [" as ", short(content.commit)] : "",
        content.strategy === "squash" ? " (squashed)" : "", ...by, " · ", stamp));
    }
  }

  runEndSeq(runId) {
    return this.runEnds.get(runId) ?? null;
  }

  addRun(message, content) {
    if (content.status === "running") return;
    this.runEnds.set(content.runId, message.seq);
    this.closeAll();
    const text = {
      completed: "Turn finished", cancelled: "Turn cancelled", failed: "Turn failed",
      paused: "Turn paused (step limit reached)", interrupted: "Turn interrupted (server stopped)",
    }[content.status] || `Turn ${content.status}`;
    const reason = content.status === "completed" && content.stopReason && content.stopReason !== "end_turn"
      ? content.stopReason.replace(/_/g, " ") : null;
    const took = content.durationMs !== null && content.durationMs !== undefined ? duration(content.durationMs) : null;
    this.append(h(`div.run-marker.run-${content.status}`, { dataset: { runId: content.runId } },
      h("span", {}, [text, reason, took].filter(Boolean).join(" · "))));
  }

  scroll() {
    if (this.stick) this.root.scrollTop = this.root.scrollHeight;
  }
}

/** Strings that are paths inside the repository, shown relative to it (display only). */
function relativize(value, rel, depth = 0) {
  if (typeof value === "string") return rel(value);
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => relativize(v, rel, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, relativize(v, rel, depth + 1)]));
}

function section(label, ...content) {
  return h("div.tool-section", {}, h("div.tool-section-label", {}, label), content);
}

/** When a tool has no rawOutput, its result is its content: do not show that twice. */
function sameAsResult(_texts, result) {
  return Array.isArray(result);
}
