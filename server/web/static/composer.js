// @ts-check
// What the prompt box adds to plain text: `/` opens the agent's slash commands, `@` a fuzzy
// file picker (GET …/files?query=), and images come by paste, drag-and-drop or the Attach
// button, shown as removable thumbnails until sent as image blocks.

import { get, describe } from "./api.js";
import { h, clear } from "./dom.js";
import { activeToken, fuzzyFilter, promptContent } from "./prompt-helpers.js";

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const MAX_ITEMS = 12;

export class Composer {
  /**
   * @param {string} sessionId
   * @param {HTMLTextAreaElement} input
   * @param {HTMLElement} errorLine
   */
  constructor(sessionId, input, errorLine) {
    this.sessionId = sessionId;
    this.input = input;
    this.errorLine = errorLine;
    this.commands = [];
    this.canImage = true;
    /** @type {{mimeType: string, data: string, url: string, name: string}[]} */
    this.images = [];
    /** @type {string[]} */
    this.files = [];
    this.items = [];
    this.index = 0;
    this.token = null;
    this.fileQuery = 0;
    this.list = h("ul.suggest", { id: `suggest-${sessionId}`, role: "listbox", hidden: true, "aria-label": "Suggestions" });
    this.thumbs = h("div.thumbs", { role: "list", "aria-label": "Images to send" });
    this.picker = /** @type {HTMLInputElement} */ (h("input.sr-only", {
      type: "file", accept: IMAGE_TYPES.join(","), multiple: true, tabindex: "-1", "aria-hidden": "true",
      onchange: () => { this.addFiles(this.picker.files); this.picker.value = ""; },
    }));
    this.attachButton = h("button.ghost-button.attach-button", {
      type: "button", title: "Attach images (or paste / drop them in the box)",
      onclick: () => this.picker.click(),
    }, "Attach image");
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-controls", this.list.id);
    input.addEventListener("input", () => this.refresh());
    input.addEventListener("click", () => this.refresh());
    input.addEventListener("keydown", (event) => this.onKey(event), { capture: true });
    // (a click on the list lands first; a box disabled during a turn loses focus too, and
    // must not close a list opened once it is back)
    input.addEventListener("blur", () => setTimeout(() => {
      if (document.activeElement !== input) this.close();
    }, 150));
    input.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        event.preventDefault();
        this.addFiles(files);
      }
    });
  }

  /** Where the composer's parts go: the list above the box, thumbnails and the button. */
  mount(box, form) {
    box.before(this.list, this.thumbs);
    form.append(this.picker);
    form.addEventListener("dragover", (event) => {
      if ([...(event.dataTransfer?.types || [])].includes("Files")) {
        event.preventDefault();
        form.classList.add("dropping");
      }
    });
    form.addEventListener("dragleave", () => form.classList.remove("dropping"));
    form.addEventListener("drop", (event) => {
      form.classList.remove("dropping");
      if (!event.dataTransfer?.files?.length) return;
      event.preventDefault();
      this.addFiles(event.dataTransfer.files);
    });
  }

  /** @param {any} controls */
  setControls(controls) {
    if (!controls) return;
    this.commands = Array.isArray(controls.commands) ? controls.commands : [];
    this.canImage = controls.promptCapabilities?.image !== false;
    this.attachButton.hidden = !this.canImage;
  }

  set disabled(value) {
    /** @type {HTMLButtonElement} */ (this.attachButton).disabled = value;
  }

  // -- content ---------------------------------------------------------------------

  get empty() {
    return !this.input.value.trim() && !this.images.length;
  }

  /** The prompt body: `{text}` alone, or `{content}` when images or files come along. */
  body() {
    const text = this.input.value;
    const content = promptContent(text, this.images, this.files);
    return content.some((b) => b.type !== "text") ? { content } : { text };
  }

  /** After a prompt was accepted. */
  reset() {
    for (const image of this.images) URL.revokeObjectURL(image.url);
    this.images = [];
    this.files = [];
    this.renderThumbs();
  }

  /** @param {Iterable<File>} files */
  async addFiles(files) {
    this.errorLine.textContent = "";
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        this.errorLine.textContent = `${file.name}: only PNG, JPEG, GIF and WebP images can be attached.`;
        continue;
      }
      if (!this.canImage) {
        this.errorLine.textContent = "This agent does not take images.";
        return;
      }
      const data = await base64(file);
      this.images.push({ mimeType: file.type, data, url: URL.createObjectURL(file), name: file.name || "pasted image" });
    }
    this.renderThumbs();
  }

  renderThumbs() {
    clear(this.thumbs, this.images.map((image, i) => h("div.thumb", { role: "listitem" },
      h("img", { src: image.url, alt: image.name }),
      h("button.thumb-remove", {
        type: "button", "aria-label": `Remove ${image.name}`, title: "Remove",
        onclick: () => {
          URL.revokeObjectURL(image.url);
          this.images.splice(i, 1);
          this.renderThumbs();
          this.input.focus();
        },
      }, "×"))));
  }

  // -- the `/` and `@` list --------------------------------------------------------

  refresh() {
    const token = activeToken(this.input.value, this.input.selectionStart ?? this.input.value.length);
    this.token = token;
    if (!token) return this.close();
    if (token.trigger === "/") {
      const found = fuzzyFilter(token.query, this.commands, (c) => c.name).slice(0, MAX_ITEMS);
      this.show(found.map((c) => ({
        value: `/${c.name} `, label: `/${c.name}`, detail: c.description || "",
        hint: c.inputHint || c.input?.hint || "",
      })), "No commands match");
    } else {
      this.searchFiles(token.query);
    }
  }

  async searchFiles(query) {
    const ticket = ++this.fileQuery;
    try {
      const { files } = await get(`/api/sessions/${this.sessionId}/files?query=${encodeURIComponent(query)}&limit=${MAX_ITEMS}`);
      if (ticket !== this.fileQuery || this.token?.trigger !== "@") return;
      this.show((files || []).map((path) => ({ value: `@${path} `, label: path, detail: "", hint: "", path })), "No files match");
    } catch (err) {
      if (ticket === this.fileQuery) this.show([], `Files unavailable: ${describe(err)}`);
    }
  }

  show(items, emptyText) {
    this.items = items;
    this.index = 0;
    clear(this.list, items.length ? items.map((item, i) => h("li.suggest-item", {
      id: `${this.list.id}-${i}`, role: "option", "aria-selected": String(i === 0),
      onmousedown: (event) => { event.preventDefault(); this.pick(i); },
    }, h("span.suggest-label", {}, item.label),
    item.hint ? h("span.suggest-hint", {}, ` ${item.hint}`) : null,
    item.detail ? h("span.suggest-detail", {}, item.detail) : null))
      : h("li.suggest-empty", { role: "option", "aria-disabled": "true" }, emptyText));
    this.list.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.highlight();
  }

  close() {
    this.list.hidden = true;
    this.items = [];
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  get open() {
    return !this.list.hidden;
  }

  highlight() {
    this.list.querySelectorAll(".suggest-item").forEach((node, i) => {
      node.setAttribute("aria-selected", String(i === this.index));
      if (i === this.index) node.scrollIntoView({ block: "nearest" });
    });
    if (this.items.length) this.input.setAttribute("aria-activedescendant", `${this.list.id}-${this.index}`);
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (!this.open) return;
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopImmediatePropagation();
      this.close();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!this.items.length) return;
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.index = (this.index + step + this.items.length) % this.items.length;
      this.highlight();
    } else if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && this.items.length) {
      event.preventDefault();
      event.stopImmediatePropagation();
      this.pick(this.index);
    }
  }

  pick(i) {
    const item = this.items[i];
    const token = this.token;
    if (!item || !token) return;
    const text = this.input.value;
    this.input.value = text.slice(0, token.start) + item.value + text.slice(token.end);
    const caret = token.start + item.value.length;
    this.input.setSelectionRange(caret, caret);
    if (item.path && !this.files.includes(item.path)) this.files.push(item.path);
    this.close();
    this.input.focus();
    this.input.dispatchEvent(new Event("input"));
  }
}

/** @param {Blob} file @returns {Promise<string>} base64 of its bytes */
function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}
