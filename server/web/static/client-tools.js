// @ts-check
// Client tools (API.md "Client tools"): a pending `client_tool` call shows as a card like a
// permission request (the tool's name, its input), answered with JSON or as an error
// through the WebSocket `client_tool_result` command; an answered one leaves a line in the
// transcript. A page can define tools it carries out itself through
// `window.agentSessions.clientTools` (docs/client-tools.md): they join the open session's
// set and their calls are answered by running them.

import { api } from "./api.js";
import { h } from "./dom.js";

/**
 * @typedef {{ name: string, description?: string, inputSchema: object,
 *   run: (input: any) => unknown | Promise<unknown> }} PageTool
 */

/** @type {Map<string, PageTool>} */
const pageTools = new Map();
/** @type {Set<ClientToolCalls>} */
const openViews = new Set();

const OUTCOMES = {
  answered: "answered",
  timeout: "not answered in time",
  cancelled: "cancelled",
  server_restarted: "ended by a server restart",
};

/** The window-level hook an embedding page uses. */
export const clientTools = Object.freeze({
  /** @param {PageTool} tool */
  define(tool) {
    if (!tool || typeof tool.name !== "string" || typeof tool.run !== "function") {
      throw new TypeError("a client tool needs a name and a run function");
    }
    pageTools.set(tool.name, { ...tool });
    for (const view of openViews) view.register();
  },
  /** @param {string} name */
  remove(name) {
    pageTools.delete(name);
    for (const view of openViews) view.register();
  },
  list() {
    return [...pageTools.keys()];
  },
});

/** A transcript line for an ended call. */
export function clientToolNote(content) {
  const answered = content.outcome === "answered" && !content.isError;
  const how = OUTCOMES[content.outcome] || String(content.outcome);
  return h(`div.note.permission-note.client-tool-note${answered ? ".allowed" : ".rejected"}`, {},
    h("span.note-mark", { "aria-hidden": "true" }, answered ? "✓" : "✕"),
    `Client tool ${content.name}: `, h("strong", {}, content.isError && content.outcome === "answered" ? "answered as an error" : how));
}

export class ClientToolCalls {
  /**
   * @param {HTMLElement} area where pending cards go
   * @param {(command: object) => Promise<unknown>} send
   * @param {string} sessionId
   */
  constructor(area, send, sessionId) {
    this.area = area;
    this.send = send;
    this.sessionId = sessionId;
    /** @type {Map<string, HTMLElement>} */
    this.cards = new Map();
    /** @type {Set<string>} calls a page tool is running */
    this.running = new Set();
    this.live = false;
  }

  /** The view is live: page tools join the session's set from now on. */
  open() {
    this.live = true;
    openViews.add(this);
    this.register();
  }

  close() {
    this.live = false;
    openViews.delete(this);
  }

  /** Add the page's tools to the session's set, keeping the tools others registered. */
  async register() {
    if (!this.live || pageTools.size === 0) return;
    const path = `/api/sessions/${this.sessionId}/client-tools`;
    try {
      const current = /** @type {{tools: any[]}} */ (await api("GET", path)).tools;
      const mine = [...pageTools.values()].map((t) => ({ name: t.name, description: t.description || "", inputSchema: t.inputSchema }));
      const others = current.filter((t) => !pageTools.has(t.name));
      await api("PUT", path, { tools: [...others, ...mine] });
    } catch (err) {
      console.warn("client tools not registered", err);
    }
  }

  /** Every `client_tool` message: pending ones get a card (or run), ended ones lose it. */
  update(content) {
    if (content.outcome !== null && content.outcome !== undefined) {
      this.hide(content.callId);
      return;
    }
    const tool = pageTools.get(content.name);
    if (tool && this.live) this.runPageTool(tool, content);
    else this.show(content);
  }

  clearAll() {
    for (const id of [...this.cards.keys()]) this.hide(id);
  }

  hide(callId) {
    const card = this.cards.get(callId);
    if (!card) return;
    card.remove();
    this.cards.delete(callId);
  }

  async runPageTool(tool, content) {
    if (this.running.has(content.callId)) return;
    this.running.add(content.callId);
    /** @type {any} */
    const command = { type: "client_tool_result", callId: content.callId };
    try {
      command.result = await tool.run(content.input);
    } catch (err) {
      command.isError = true;
      command.content = [{ type: "text", text: err instanceof Error ? err.message : String(err) }];
    }
    try {
      await this.send(command);
    } catch (err) {
      if (err?.code !== "client_tool_already_answered") console.warn("client tool answer refused", err);
    } finally {
      this.running.delete(content.callId);
    }
  }

  show(content) {
    if (this.cards.has(content.callId)) return;
    const id = `client-tool-${content.callId}`;
    const error = h("p.error-text", { role: "alert" });
    const field = h("textarea.client-tool-answer", {
      id: `${id}-answer`, rows: 3, placeholder: '{"result": "…"}  or any JSON value',
    });
    const answer = async (asError) => {
      error.textContent = "";
      /** @type {any} */
      const command = { type: "client_tool_result", callId: content.callId };
      const text = /** @type {HTMLTextAreaElement} */ (field).value.trim();
      if (asError) {
        command.isError = true;
        command.content = [{ type: "text", text: text || "The person declined." }];
      } else {
        try {
          command.result = text ? JSON.parse(text) : null;
        } catch {
          error.textContent = "The answer is not JSON (a string needs quotes).";
          return;
        }
      }
      for (const button of card.querySelectorAll("button")) button.disabled = true;
      try {
        await this.send(command);
      } catch (err) {
        if (err?.code === "client_tool_already_answered") return this.hide(content.callId);
        error.textContent = err?.message || String(err);
        for (const button of card.querySelectorAll("button")) button.disabled = false;
      }
    };
    const card = h("form.permission-request.client-tool-request", {
      role: "group", "aria-labelledby": id, dataset: { callId: content.callId },
      onsubmit: (event) => { event.preventDefault(); answer(false); },
    },
    h("p.permission-question", { id },
      h("span.permission-icon", { "aria-hidden": "true" }, "⚙"),
      h("span", {}, "The agent is waiting on a client: tool ", h("strong.client-tool-name", {}, content.name))),
    h("pre.client-tool-input", { "aria-label": "Input" }, JSON.stringify(content.input, null, 2)),
    h("label", { for: `${id}-answer` }, "Answer (JSON)"),
    field,
    h("div.permission-options", {},
      h("button.option.option-allow_once", { type: "submit" }, "Answer"),
      h("button.option.option-reject_once", { type: "button", onclick: () => answer(true) }, "Answer as error")),
    error);
    this.cards.set(content.callId, card);
    this.area.append(card);
  }
}

// The hook, for a page that embeds the UI (docs/client-tools.md).
const root = /** @type {any} */ (window);
root.agentSessions = { ...(root.agentSessions || {}), clientTools };
