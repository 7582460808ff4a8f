// @ts-check
// The agent's questions (API.md `elicitation` messages): a form built from the
// requestedSchema (string, number, integer, boolean, enum; required fields marked), or a
// link for URL mode, answered with the WebSocket `elicitation` command. Pending ones show
// as cards next to permission requests; answered ones leave a line in the transcript.

import { h } from "./dom.js";
import { formContent, schemaFields } from "./prompt-helpers.js";

export const SHOWN_MODES = ["form", "url"];

export class Elicitations {
  /**
   * @param {HTMLElement} area where pending cards go
   * @param {(command: object) => Promise<unknown>} send
   */
  constructor(area, send) {
    this.area = area;
    this.send = send;
    /** @type {Map<string, HTMLElement>} */
    this.cards = new Map();
  }

  /** Every `elicitation` message: pending ones get a card, answered ones lose it. A mode
   * other than form or url is kept in the log but not shown (the server declines it). */
  update(content) {
    if (!SHOWN_MODES.includes(content.mode)) return;
    if (content.outcome) this.hide(content.requestId);
    else this.show(content);
  }

  clearAll() {
    for (const id of [...this.cards.keys()]) this.hide(id);
  }

  hide(requestId) {
    const card = this.cards.get(requestId);
    if (!card) return;
    card.remove();
    this.cards.delete(requestId);
  }

  show(content) {
    if (this.cards.has(content.requestId)) return;
    const id = `elicit-${content.requestId}`;
    const error = h("p.error-text", { role: "alert" });
    const fields = content.mode === "url" ? [] : schemaFields(content.requestedSchema);
    const inputs = new Map();
    const rows = fields.map((field) => {
      const fieldId = `${id}-${field.name}`;
      let control;
      if (field.kind === "boolean") {
        control = h("input", { type: "checkbox", id: fieldId, checked: field.defaultValue === true });
      } else if (field.kind === "enum") {
        control = h("select", { id: fieldId, required: field.required },
          field.required ? null : h("option", { value: "" }, "—"),
          field.options.map((o) => h("option", { value: o.value }, o.label)));
        if (field.defaultValue !== undefined) control.value = String(field.defaultValue);
      } else {
        const numeric = field.kind === "number" || field.kind === "integer";
        control = h("input", {
          id: fieldId, type: numeric ? "number" : field.format === "email" ? "email" : field.format === "uri" ? "url" : "text",
          step: field.kind === "integer" ? "1" : numeric ? "any" : null,
          min: field.minimum ?? null, max: field.maximum ?? null, required: field.required,
          value: field.defaultValue !== undefined ? String(field.defaultValue) : null,
        });
      }
      inputs.set(field.name, control);
      const note = field.description ? h("span.hint", { id: `${fieldId}-note` }, field.description) : null;
      if (note) control.setAttribute("aria-describedby", note.id);
      const required = field.required ? [h("span.required", { "aria-hidden": "true" }, " *"), h("span.sr-only", {}, " (required)")] : null;
      if (field.kind === "boolean") { // the box sits by its label, and the label ticks it
        return h("div.elicit-field.elicit-check", {}, h("label.check-label", { for: fieldId }, control, field.label, required), note);
      }
      return h("div.elicit-field", {}, h("label", { for: fieldId }, field.label, required), control, note);
    });
    const answer = async (action) => {
      error.textContent = "";
      /** @type {any} */
      const command = { type: "elicitation", requestId: content.requestId, action };
      if (action === "accept" && content.mode !== "url") {
        /** @type {Record<string, string | boolean>} */
        const values = {};
        for (const [name, node] of inputs) values[name] = node.type === "checkbox" ? node.checked : node.value;
        const { content: answerContent, errors } = formContent(fields, values);
        if (errors.length) {
          error.textContent = errors.join(" ");
          return;
        }
        command.content = answerContent;
      }
      for (const button of card.querySelectorAll("button")) button.disabled = true;
      try {
        await this.send(command);
      } catch (err) {
        if (err?.code === "elicitation_already_answered") return this.hide(content.requestId);
        error.textContent = err?.message || String(err);
        for (const button of card.querySelectorAll("button")) button.disabled = false;
      }
    };
    const card = h("form.permission-request.elicitation-request", {
      role: "group", "aria-labelledby": id, dataset: { requestId: content.requestId },
      onsubmit: (event) => { event.preventDefault(); answer("accept"); },
    },
    h("p.permission-question", { id },
      h("span.permission-icon", { "aria-hidden": "true" }, "?"),
      h("span", {}, content.message || "The agent asks for input.")),
    content.mode === "url" && content.url
      ? h("p", {}, h("a.elicit-link", { href: safeUrl(content.url), target: "_blank", rel: "noopener noreferrer" }, `Open ${content.url}`))
      : null,
    rows,
    h("div.permission-options", {},
      h("button.option.option-allow_once", { type: "submit" }, content.mode === "url" ? "Done" : "Submit"),
      h("button.option.option-reject_once", { type: "button", onclick: () => answer("decline") }, "Decline"),
      h("button.option", { type: "button", onclick: () => answer("cancel") }, "Cancel")),
    error);
    this.cards.set(content.requestId, card);
    this.area.append(card);
    const first = card.querySelector("input, select, button");
    if (document.activeElement === document.body) /** @type {HTMLElement} */ (first)?.focus({ preventScroll: true });
  }
}

/** Only http(s) links become clickable. */
function safeUrl(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : "about:blank";
  } catch {
    return "about:blank";
  }
}
