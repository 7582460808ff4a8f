// @ts-check
// The agent's controls in the session header (API.md "Agent controls"): a mode picker and
// one picker per config option (e.g. the model). Disabled with the reason when the agent
// offers none or the session has ended; redrawn from every `controls` message; a change is
// sent as the WebSocket `set_mode` / `set_config` command and a refusal shown under it.

import { h, clear, announce } from "./dom.js";

export class ControlsBar {
  /**
   * @param {string} sessionId
   * @param {(command: object) => Promise<unknown>} send
   */
  constructor(sessionId, send) {
    this.sessionId = sessionId;
    this.send = send;
    this.controls = null;
    this.active = false;
    this.pickers = h("div.control-pickers");
    this.error = h("p.error-text.controls-error", { role: "alert" });
    this.element = h("div.agent-controls", { role: "group", "aria-label": "Agent controls" }, this.pickers, this.error);
  }

  /** @param {any} controls @param {boolean} active */
  update(controls, active) {
    if (controls !== undefined) this.controls = controls;
    this.active = active;
    this.render();
  }

  render() {
    const c = this.controls;
    const why = !this.active ? "The session has ended" : null;
    const modes = c?.modes;
    const modePicker = this.picker({
      id: `mode-${this.sessionId}`,
      label: "Mode",
      value: modes?.currentModeId ?? "",
      options: (modes?.available || []).map((m) => ({ value: m.id, name: m.name || m.id, description: m.description })),
      reason: why || (!modes || !modes.available?.length ? "This agent offers no modes" : null),
      onchange: (value) => this.change({ type: "set_mode", modeId: value }, `Mode ${value}`),
    });
    const config = Array.isArray(c?.config) ? c.config : [];
    const configPickers = config.map((option) => this.picker({
      id: `config-${this.sessionId}-${option.id}`,
      label: option.name || option.id,
      title: option.description,
      value: String(option.currentValue ?? ""),
      options: (option.options || []).map((o) => ({ value: String(o.value), name: o.name || String(o.value), description: o.description })),
      reason: why,
      onchange: (value) => this.change({ type: "set_config", configId: option.id, value }, `${option.name || option.id} ${value}`),
    }));
    if (!configPickers.length) {
      configPickers.push(this.picker({
        id: `config-${this.sessionId}-none`, label: "Model", value: "", options: [],
        reason: why || "This agent offers no options", onchange: () => {},
      }));
    }
    const focused = document.activeElement?.id;
    clear(this.pickers, modePicker, configPickers);
    if (focused && this.pickers.querySelector(`[id="${focused}"]`)) document.getElementById(focused)?.focus();
  }

  /**
   * @param {{id: string, label: string, title?: string, value: string,
   *   options: {value: string, name: string, description?: string}[], reason: string | null,
   *   onchange: (value: string) => void}} spec
   */
  picker(spec) {
    const reasonId = `${spec.id}-why`;
    const select = /** @type {HTMLSelectElement} */ (h("select.control-select", {
      id: spec.id,
      disabled: Boolean(spec.reason),
      title: spec.reason || spec.title || "",
      "aria-describedby": spec.reason ? reasonId : null,
      onchange: () => spec.onchange(select.value),
    }, spec.options.length
      ? spec.options.map((o) => h("option", { value: o.value, title: o.description || "" }, o.name))
      : h("option", { value: "" }, "—")));
    select.value = spec.value;
    return h("span.control", {},
      h("label.control-label", { for: spec.id }, spec.label),
      select,
      spec.reason ? h("span.sr-only", { id: reasonId }, spec.reason) : null);
  }

  /** @param {object} command @param {string} what */
  async change(command, what) {
    this.error.textContent = "";
    try {
      await this.send(command);
      announce(`${what} chosen`);
    } catch (err) {
      this.error.textContent = `Could not change it: ${err?.message || err}`;
    }
    this.render(); // the `controls` message (or the unchanged state) decides what shows
  }
}
