// @ts-check
// A hundred sessions at a glance (API.md, Finding and keeping sessions): search snippets,
// usage per row, the purge and rename dialogs, queued prompts above the prompt box, the
// new-session choices from the agent's last known controls, and the keyboard shortcuts
// with their `?` overlay.

import { api, del, describe } from "./api.js";
import { clear, h, revealWhenShown } from "./dom.js";

// The snippet's highlight marks (store/search.py): U+E000 opens a match, U+E001 closes it.
const OPEN = "\ue000";
const CLOSE = "\ue001";

/** A snippet as text nodes with each match in <mark> (never HTML from the server). */
export function highlighted(snippet) {
  const parts = [];
  let inside = false;
  for (const piece of String(snippet || "").split(/([\ue000\ue001])/)) {
    if (piece === OPEN) inside = true;
    else if (piece === CLOSE) inside = false;
    else if (piece) parts.push(inside ? h("mark", {}, piece) : piece);
  }
  return parts;
}

/** "12.3k tok · $0.042" for a listed session's usage (empty when it has none). */
export function usageText(session) {
  const usage = session.usage;
  if (!usage) return "";
  const tokens = (usage.inputTokens || 0) + (usage.outputTokens || 0);
  const parts = [];
  if (tokens) parts.push(`${tokens >= 1000 ? `${(tokens / 1000).toFixed(1)}k` : tokens} tok`);
  if (usage.costUsd) parts.push(`$${usage.costUsd.toFixed(usage.costUsd < 1 ? 3 : 2)}`);
  if (session.runCount) parts.push(`${session.runCount} run${session.runCount === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

/** Scroll to message `seq` of the open session once it is on screen, and mark it. */
export function revealSeq(root, seq) {
  revealWhenShown(root, `.msg[data-seq="${Number(seq)}"]`);
}

// -- dialogs -----------------------------------------------------------------------------

function modal(id, title, body, actions) {
  document.getElementById(id)?.remove();
  const dialog = h(`dialog#${id}.glance-dialog`, { "aria-labelledby": `${id}-title` },
    h("form", { method: "dialog" }, h(`h2#${id}-title`, {}, title), body, h("div.form-actions", {}, actions)));
  document.body.append(dialog);
  dialog.addEventListener("close", () => dialog.remove());
  /** @type {HTMLDialogElement} */ (dialog).showModal();
  return /** @type {HTMLDialogElement} */ (dialog);
}

/** Purge an ended session, after a dialog naming everything that goes. */
export function confirmPurge(session, onDone) {
  const ws = session.workspace || {};
  const worktree = ws.isolation === "worktree";
  const keep = h("input#purge-keep-branch", { type: "checkbox" });
  const error = h("p.form-error", { role: "alert" });
  const items = [
    h("li", {}, `${session.lastSeq} stored messages`),
    h("li", {}, `${session.runCount ?? "its"} runs and their tool calls`),
    h("li", {}, "the images its prompts carried (no other session uses them)"),
    h("li", {}, "the checkpoints of its turns (git refs)"),
    worktree ? h("li", {}, "its worktree ", h("code", {}, ws.path || "")) : null,
  ];
  const confirm = h("button.danger.primary#purge-confirm", { type: "button" }, "Purge for good");
  const dialog = modal("purge-dialog", `Purge “${session.title || session.id.slice(0, 8)}”?`,
    [h("p", {}, "This cannot be undone. It removes:"), h("ul.purge-list", {}, items),
      worktree && ws.branch ? h("div.field.check-field", {}, keep,
        h("label", { for: "purge-keep-branch" }, "Keep its branch ", h("code", {}, ws.branch))) : null,
      error],
    [h("button.secondary", { type: "submit", value: "cancel" }, "Cancel"), confirm]);
  confirm.addEventListener("click", async () => {
    confirm.disabled = true;
    try {
      const branch = /** @type {HTMLInputElement} */ (keep).checked ? "&keepBranch=true" : "";
      await del(`/api/sessions/${session.id}?purge=true${branch}`);
      dialog.close();
      onDone();
    } catch (err) {
      error.textContent = describe(err);
      confirm.disabled = false;
    }
  });
  return dialog;
}

/** Rename a session (its title becomes the user's). */
export function rename(session, onDone) {
  const input = h("input#rename-input", { type: "text", value: session.title || "", maxlength: 500, required: true });
  const error = h("p.form-error", { role: "alert" });
  const save = h("button.primary#rename-save", { type: "submit", value: "save" }, "Rename");
  const dialog = modal("rename-dialog", "Rename the session",
    [h("label", { for: "rename-input" }, "Title"), input, error],
    [h("button.secondary", { type: "button", onclick: () => dialog.close() }, "Cancel"), save]);
  dialog.querySelector("form")?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const title = /** @type {HTMLInputElement} */ (input).value.trim();
    if (!title) return;
    try {
      onDone(await api("PATCH", `/api/sessions/${session.id}`, { title }));
      dialog.close();
    } catch (err) {
      error.textContent = describe(err);
    }
  });
  /** @type {HTMLInputElement} */ (input).select();
  return dialog;
}

export async function setArchived(session, archived) {
  return api("PATCH", `/api/sessions/${session.id}`, { archived });
}

// -- queued prompts ----------------------------------------------------------------------

/** The prompts waiting for the running turn, shown above the prompt box, each removable. */
export class QueueList {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.items = new Map();
    this.error = h("p.error-text", { role: "alert" });
    this.list = h("ol.queue-list", { "aria-label": "Queued prompts" });
    this.element = h("div.queue", { hidden: true }, this.list, this.error);
  }

  add(runId, text) {
    const item = h("li.queue-item", { dataset: { runId } },
      h("span.queue-text", {}, text),
      h("button.icon-button.queue-drop", {
        type: "button", "aria-label": `Remove the queued prompt “${text.slice(0, 40)}”`, title: "Remove",
        onclick: () => this.drop(runId),
      }, "×"));
    this.items.set(runId, item);
    this.list.append(item);
    this.render();
  }

  /** A run started or ended: it no longer waits. */
  gone(runId) {
    const item = this.items.get(runId);
    if (!item) return;
    item.remove();
    this.items.delete(runId);
    this.render();
  }

  async drop(runId) {
    this.error.textContent = "";
    try {
      await del(`/api/sessions/${this.sessionId}/queue/${runId}`);
    } catch (err) {
      if (!(err && err.status === 404)) this.error.textContent = describe(err);
    }
    this.gone(runId);
  }

  render() {
    this.element.hidden = !this.items.size && !this.error.textContent;
  }
}

// -- the new-session form's choices ------------------------------------------------------

/** Mode, model and base branch, from the chosen agent's last known controls. */
export class CreateChoices {
  constructor() {
    this.mode = h("select#new-mode", {});
    this.model = h("select#new-model", {});
    this.base = h("input#new-base", { type: "text", placeholder: "HEAD", autocomplete: "off", spellcheck: "false" });
    this.modeField = h("div.field", { hidden: true }, h("label", { for: "new-mode" }, "Start in mode"), this.mode);
    this.modelField = h("div.field", { hidden: true }, h("label", { for: "new-model" }, "Start with model"), this.model);
    this.baseField = h("div.field", { hidden: true }, h("label", { for: "new-base" }, "Base branch"), this.base);
    this.element = h("div.field-row.create-choices", {}, this.modeField, this.modelField, this.baseField);
    this.modelId = null;
  }

  /** Offer what `agent.controls` knows (nothing for an agent that never started). */
  show(agent) {
    const controls = agent?.controls || null;
    const modes = controls?.modes?.available || [];
    clear(this.mode, h("option", { value: "" }, "Agent's default"),
      modes.map((m) => h("option", { value: m.id, title: m.description || "" }, m.name || m.id)));
    this.modeField.hidden = !modes.length;
    const model = (controls?.config || []).find((o) => o.id === "model" || o.category === "model");
    this.modelId = model ? model.id : null;
    clear(this.model, h("option", { value: "" }, "Agent's default"),
      (model?.options || []).map((o) => h("option", { value: o.value }, o.name || o.value)));
    this.modelField.hidden = !model;
  }

  setIsolated(isolated) {
    this.baseField.hidden = !isolated;
  }

  /** The create body's additions. */
  body(isolated) {
    const out = {};
    const mode = /** @type {HTMLSelectElement} */ (this.mode).value;
    const model = /** @type {HTMLSelectElement} */ (this.model).value;
    const base = /** @type {HTMLInputElement} */ (this.base).value.trim();
    if (mode) out.modeId = mode;
    if (model && this.modelId) out.config = { [this.modelId]: model };
    if (isolated && base) out.baseRef = base;
    return out;
  }
}

// -- keyboard ----------------------------------------------------------------------------

export const SHORTCUTS = [
  ["n", "Start a new session"],
  ["j", "Next session in the list"],
  ["k", "Previous session in the list"],
  ["/", "Search sessions"],
  ["i", "Write to the agent (the prompt box)"],
  ["c", "Show the review (changes)"],
  ["?", "This list"],
];

function typing(target) {
  const el = /** @type {HTMLElement} */ (target);
  return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
}

export function showShortcuts() {
  return modal("shortcuts-dialog", "Keyboard shortcuts",
    [h("dl.shortcut-list", {}, SHORTCUTS.map(([key, what]) => [h("dt", {}, h("kbd", {}, key)), h("dd", {}, what)])),
      h("p.muted", {}, "Enter sends a prompt, Shift+Enter adds a line, Esc stops the agent.")],
    [h("button.primary", { type: "submit" }, "Close")]);
}

/** Single-key shortcuts, never while typing in a field or with a dialog open. */
export function installShortcuts({ sidebar, navigate }) {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target) || document.querySelector("dialog[open]")) return;
    const act = {
      "n": () => sidebar.focusCreate(),
      "j": () => sidebar.step(1, navigate),
      "k": () => sidebar.step(-1, navigate),
      "/": () => sidebar.focusSearch(),
      "i": () => document.getElementById("prompt-input")?.focus(),
      "c": () => /** @type {HTMLElement | null} */ (document.querySelector(".session-tab[data-tab=\"review\"]"))?.click(),
      "?": () => showShortcuts(),
    }[event.key];
    if (!act) return;
    event.preventDefault();
    act();
  });
}
