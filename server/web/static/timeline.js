// @ts-check
// A run's timeline: a waterfall of its tool calls (from the first event to the start of
// running: waiting, on permission when one was asked; running; end), coloured by status,
// the model's time between them (when no tool was busy), and the run's usage. Built from
// the run's stored messages (GET /api/agent-runs/{id}/messages): their timestamps are when
// the server received each event. A table beside the picture holds the same numbers.

import { describe, get, query } from "./api.js";
import { clear, count, duration, h, money } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const DONE = new Set(["completed", "error", "cancelled"]);

function svg(tag, attrs = {}) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

async function runMessages(runId) {
  const out = [];
  let cursor = null;
  do {
    const page = await get(`/api/agent-runs/${runId}/messages${query({ limit: 1000, cursor })}`);
    out.push(...(page.data || []));
    cursor = page.nextCursor;
  } while (cursor && out.length < 5000);
  return out;
}

/** Tool calls with their phases (ms from the run's start) and the model's gaps. */
export function phases(run, messages) {
  const t0 = Date.parse(run.createdAt);
  const at = (m) => Date.parse(m.timestamp) - t0;
  const end = run.completedAt ? Date.parse(run.completedAt) - t0
    : Math.max(0, ...messages.map(at));
  const tools = new Map();
  for (const m of messages) {
    const c = m.content || {};
    if (c.type !== "tool" && c.type !== "permission") continue;
    const id = c.toolCallId || c.requestId;
    if (!tools.has(id)) tools.set(id, { id, name: c.tool || id, start: at(m), permission: false, running: null, end: null, status: "pending" });
    const t = tools.get(id);
    if (c.type === "permission") {
      t.permission = true;
      continue;
    }
    if (c.tool) t.name = c.tool;
    t.status = c.status || t.status;
    if (c.status === "in_progress" && t.running === null) t.running = at(m);
    if (DONE.has(c.status) && t.end === null) t.end = at(m);
  }
  const calls = [...tools.values()].map((t) => {
    const stop = t.end ?? end;
    const running = t.running ?? (t.end !== null ? t.end : stop);
    return { ...t, end: stop, running, wait: running - t.start, ran: stop - running };
  }).sort((a, b) => a.start - b.start);
  const gaps = [];
  let cursor = 0;
  for (const c of calls) {
    if (c.start > cursor) gaps.push([cursor, c.start]);
    cursor = Math.max(cursor, c.end);
  }
  if (end > cursor) gaps.push([cursor, end]);
  return { calls, gaps, end, model: gaps.reduce((sum, [a, b]) => sum + (b - a), 0) };
}

/** The waterfall, `width` px wide (the dialog's width): the labels get the room their
 * longest needs (up to 40 % of it), so none loses its start. */
function picture({ calls, gaps, end }, width) {
  const rowH = 20;
  const longest = Math.max(5, ...calls.map((c) => String(c.name).length));
  const left = Math.min(Math.round(width * 0.4), 12 + longest * 6.6);
  const room = Math.floor((left - 10) / 6.6);
  const height = (calls.length + 1) * rowH + 24;
  const x = (ms) => left + (Math.max(0, ms) / Math.max(end, 1)) * (width - left - 10);
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart timeline-chart", role: "img",
    "aria-label": "Waterfall of the run's tool calls; the table beside lists the same numbers" });
  const row = (i, label) => {
    const text = svg("text", { x: left - 6, y: i * rowH + 14, class: "chart-axis", "text-anchor": "end" });
    text.textContent = label.length > room ? `${label.slice(0, room - 1)}…` : label;
    const tip = svg("title");
    tip.textContent = label;
    text.append(tip);
    root.append(text);
  };
  const bar = (i, from, to, cls, title) => {
    const rect = svg("rect", { x: x(from), y: i * rowH + 3, width: Math.max(x(to) - x(from), 1), height: rowH - 6, class: cls });
    const tip = svg("title");
    tip.textContent = title;
    rect.append(tip);
    root.append(rect);
  };
  row(0, "model");
  for (const [a, b] of gaps) bar(0, a, b, "tl-model", `model: ${duration(b - a)} (from +${duration(a)})`);
  calls.forEach((c, k) => {
    const i = k + 1;
    row(i, c.name);
    if (c.wait > 0) bar(i, c.start, c.running, c.permission ? "tl-permission" : "tl-wait", `${c.name}: ${c.permission ? "waited on permission" : "pending"} ${duration(c.wait)}`);
    bar(i, c.running, c.end, `tl-run tl-${c.status}`, `${c.name}: ${c.status}, ran ${duration(c.ran)} (+${duration(c.start)} → +${duration(c.end)})`);
  });
  for (const frac of [0, 0.5, 1]) {
    const tick = svg("text", { x: x(end * frac), y: height - 6, class: "chart-axis", "text-anchor": frac === 1 ? "end" : frac ? "middle" : "start" });
    tick.textContent = `+${duration(end * frac)}`;
    root.append(tick);
  }
  return root;
}

/** The run's usage in one line; the model's share only when tools took some of the time
 * (without tools it is the whole run, told twice with rounding apart). */
export function usageLine(run, model, tools) {
  const u = run.usage || {};
  const parts = [`took ${duration(run.durationMs)}`];
  if (tools > 0) parts.push(`model ${duration(model)}`);
  if (typeof u.inputTokens === "number") parts.push(`${count(u.inputTokens)} in / ${count(u.outputTokens)} out tokens`);
  if (typeof u.cachedReadTokens === "number") parts.push(`${count(u.cachedReadTokens)} cached`);
  if (money(run.cost)) parts.push(money(run.cost));
  return parts.join(" · ");
}

async function fill(panel, run) {
  clear(panel, h("p.muted.small", {}, "Loading the timeline…"));
  try {
    const data = phases(run, await runMessages(run.id));
    if (!data.calls.length) {
      clear(panel, h("p.timeline-usage", {}, usageLine(run, data.model, 0)),
        h("p.muted.timeline-empty", {}, "No tool calls in this run: the agent answered without tools."));
      return;
    }
    const width = Math.max(320, Math.min(1060, panel.clientWidth || 600));
    clear(panel,
      h("p.timeline-usage", {}, usageLine(run, data.model, data.calls.length)),
      h("ul.chart-legend", { "aria-hidden": "true" },
        [["tl-model", "model"], ["tl-permission", "permission wait"], ["tl-wait", "pending"], ["tl-completed", "completed"], ["tl-error", "error"], ["tl-cancelled", "cancelled"]]
          .map(([cls, label]) => h("li", {}, h(`span.swatch.${cls}`), label))),
      h("div.timeline-pair", {}, picture(data, width),
        h("div.table-wrap", {}, h("table.data-table.timeline-table", {},
          h("caption", {}, "Tool calls of this run, ms from its start"),
          h("thead", {}, h("tr", {}, ["Tool", "Start", "Waited", "Ran", "Status"].map((c, i) => h(i ? "th.num" : "th", { scope: "col" }, c)))),
          h("tbody", {}, data.calls.map((c) => h("tr", { dataset: { toolCallId: c.id } },
            h("th", { scope: "row" }, c.name), h("td.num", {}, `+${duration(c.start)}`),
            h("td.num", {}, `${duration(c.wait)}${c.permission ? " (permission)" : ""}`),
            h("td.num", {}, duration(c.ran)), h("td.num", {}, h(`span.badge.badge-${c.status}`, {}, c.status)))))))));
  } catch (err) {
    clear(panel, h("p.error-text", {}, `Could not load the timeline: ${describe(err)}`));
  }
}

/** A "Timeline" button for one run of the run history: the timeline opens wide, in a
 * dialog over the page (the history's side panel is too narrow for its labels and table). */
export function timelineToggle(run) {
  const panel = h("div.timeline", { dataset: { runId: run.id } });
  const close = h("button.icon-button.timeline-close", { type: "button", "aria-label": "Close the timeline", onclick: () => dialog.close() }, "✕");
  const dialog = /** @type {HTMLDialogElement} */ (h("dialog.timeline-dialog", { "aria-label": `Timeline of run ${run.id.slice(0, 8)}` },
    h("div.panel-head", {}, h("h3", {}, `Timeline · run ${run.id.slice(0, 8)}`), close), panel));
  const button = h("button.small-button.secondary.timeline-toggle", {
    type: "button", "aria-haspopup": "dialog",
    onclick: () => {
      dialog.showModal();
      fill(panel, run);
    },
  }, "Timeline");
  dialog.addEventListener("close", () => button.focus());
  return h("div.timeline-box", {}, button, dialog);
}
