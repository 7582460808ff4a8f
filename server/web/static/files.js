// @ts-check
// The files of a session (API.md, Review): its workspace as it is now, or its base commit,
// as a tree (a directory's entries load when it opens) and a read-only viewer with line
// numbers and the same highlighting as diffs. Tool cards and the review open paths here.

import { ApiError, describe, get, getFile, query } from "./api.js";
import { clear, h } from "./dom.js";
import { highlight, languageOf } from "./patch.js";

const MAX_LINES = 20_000; // drawn at most; past it the viewer says so

export class FileBrowser {
  /** @param {HTMLElement} root @param {string} sessionId */
  constructor(root, sessionId) {
    this.root = root;
    this.sessionId = sessionId;
    this.session = null;
    this.ref = "";
    this.path = null;
    this.line = null;
    this.loaded = false;
    this.ticket = 0;
    this.refSelect = h("select.files-ref", { "aria-label": "Which files", onchange: () => this.changeRef() },
      h("option", { value: "" }, "Workspace now"));
    this.treeRoot = h("div.files-tree", { role: "navigation", "aria-label": "Workspace files" });
    this.treeStatus = h("p.muted.files-status", { role: "status" });
    this.viewerTitle = h("h3.viewer-path");
    this.viewerNote = h("p.muted.viewer-note", { role: "status" });
    this.viewer = h("div.file-view", { role: "region", "aria-label": "File", tabindex: "0" });
    clear(root,
      h("div.review-head", {},
        h("h2.review-title", { tabindex: "-1" }, "Files"),
        h("div.changes-toolbar", {}, this.refSelect,
          h("span.muted.read-only-note", {}, "read-only"),
          h("button.icon-button", { type: "button", title: "Reload", "aria-label": "Reload files", onclick: () => this.reload() }, "↻"))),
      h("div.review-body", {},
        h("div.review-side", {}, this.treeStatus, this.treeRoot),
        h("div.review-main", {}, h("div.review-file-head", {}, this.viewerTitle), this.viewerNote, this.viewer)));
  }

  setSession(session) {
    this.session = session;
    const base = session?.workspace?.baseCommit;
    const chosen = this.refSelect.value;
    clear(this.refSelect, h("option", { value: "" }, "Workspace now"),
      base ? h("option", { value: base }, `Base commit ${base.slice(0, 8)}`) : null);
    this.refSelect.value = [...this.refSelect.options].some((o) => o.value === chosen) ? chosen : "";
  }

  /** The tab opened: load the top level once. */
  show() {
    if (!this.loaded) this.reload();
  }

  reload() {
    this.loaded = true;
    this.ref = this.refSelect.value;
    this.treeStatus.textContent = "Loading…";
    clear(this.treeRoot);
    this.loadDir("", this.treeRoot).then(() => { if (this.path) this.reveal(this.path); });
    if (this.path) this.openFile(this.path, this.line);
  }

  changeRef() {
    this.reload();
  }

  /** Open `path` (relative to the workspace, or absolute inside it) at `line`. */
  open(path, line = null, ref = null) {
    if (ref !== null && ref !== this.refSelect.value) {
      this.refSelect.value = ref;
    }
    this.path = this.relative(path);
    this.line = line;
    if (!this.loaded || this.ref !== this.refSelect.value) this.reload();
    else {
      this.reveal(this.path);
      this.openFile(this.path, line);
    }
  }

  relative(path) {
    const root = this.session?.workspace?.path;
    if (root && path.startsWith(`${root}/`)) return path.slice(root.length + 1);
    return path.replace(/^\.\//, "");
  }

  async loadDir(path, into) {
    try {
      const found = await get(`/api/sessions/${this.sessionId}/tree${query({ path, ref: this.ref })}`);
      this.treeStatus.textContent = "";
      clear(into, h("ul.tree-level", {}, found.entries.map((entry) => this.entry(entry))));
      if (!found.entries.length && !path) this.treeStatus.textContent = "The workspace is empty.";
    } catch (err) {
      clear(into, h("p.error-text", {}, `Could not list ${path || "the workspace"}: ${describe(err)}`));
      this.treeStatus.textContent = "";
    }
  }

  entry(entry) {
    if (entry.type === "dir") {
      const children = h("div.tree-children");
      const details = h("details.tree-dir", { dataset: { path: entry.path } },
        h("summary.tree-dir-name", {}, h("span.tree-icon", { "aria-hidden": "true" }, "▸"), `${entry.name}/`), children);
      details.addEventListener("toggle", () => {
        if (details.open && !details.dataset.loaded) {
          details.dataset.loaded = "1";
          details.dataset.loading = "1";
          this.loadDir(entry.path, children).then(() => {
            delete details.dataset.loading;
            if (this.path?.startsWith(`${entry.path}/`)) this.reveal(this.path);
          });
        }
      });
      return h("li", {}, details);
    }
    return h("li", {}, h("button.tree-file", {
      type: "button", dataset: { path: entry.path }, "aria-pressed": String(entry.path === this.path),
      onclick: () => { this.path = entry.path; this.line = null; this.openFile(entry.path, null); },
    }, h("span.file-path", {}, entry.name), entry.size !== null ? h("span.muted.file-size", {}, size(entry.size)) : null));
  }

  /** Open the directories down to `path` and mark its file. */
  reveal(path) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i += 1) {
      const dir = /** @type {HTMLDetailsElement | null} */ (this.treeRoot.querySelector(`details.tree-dir[data-path="${CSS.escape(parts.slice(0, i).join("/"))}"]`));
      if (!dir) return;
      if (!dir.open) { dir.open = true; return; } // its toggle loads it, then reveals again
      if (dir.dataset.loading) return;
    }
    for (const button of this.treeRoot.querySelectorAll("button.tree-file")) {
      const mine = /** @type {HTMLElement} */ (button).dataset.path === path;
      button.setAttribute("aria-pressed", String(mine));
      if (mine) button.scrollIntoView({ block: "nearest" });
    }
  }

  async openFile(path, line) {
    const ticket = ++this.ticket;
    this.viewerTitle.textContent = path;
    this.viewerNote.textContent = "Loading…";
    for (const button of this.treeRoot.querySelectorAll("button.tree-file")) {
      button.setAttribute("aria-pressed", String(/** @type {HTMLElement} */ (button).dataset.path === path));
    }
    try {
      const file = await getFile(`/api/sessions/${this.sessionId}/file${query({ path, ref: this.ref })}`);
      if (ticket !== this.ticket) return;
      if (file.binary) {
        this.viewerNote.textContent = `A binary file (${size(file.size)}): not shown.`;
        this.viewer.replaceChildren();
        return;
      }
      this.viewerNote.textContent = this.ref ? `As at the base commit ${this.ref.slice(0, 8)}.` : "";
      this.draw(path, file.text || "", line);
    } catch (err) {
      if (ticket !== this.ticket) return;
      this.viewer.replaceChildren();
      this.viewerNote.textContent = err instanceof ApiError && err.status === 413
        ? "This file is larger than the server shows in the browser (MAX_EMBED_BYTES)."
        : err instanceof ApiError && err.status === 404
          ? `${path} is not in ${this.ref ? "the base commit" : "the workspace"}.`
          : `Could not open ${path}: ${describe(err)}`;
    }
  }

  draw(path, text, line) {
    const language = languageOf(path);
    const lines = text.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    const shown = lines.slice(0, MAX_LINES);
    const widest = shown.reduce((w, l) => Math.max(w, l.replace(/\t/g, "    ").length), 0);
    this.viewer.style.setProperty("--code-w", `${widest + 2}ch`);
    this.viewer.replaceChildren(...shown.map((l, i) => h(`div.fl${i + 1 === line ? ".target" : ""}`, { dataset: { line: String(i + 1) } },
      h("span.ln", { "aria-hidden": "true" }, String(i + 1)), h("span.code", {}, highlight(l, language)))));
    if (lines.length > MAX_LINES) this.viewerNote.textContent = `Only the first ${MAX_LINES} of ${lines.length} lines are shown.`;
    const target = line ? this.viewer.querySelector(`.fl[data-line="${line}"]`) : null;
    if (target) target.scrollIntoView({ block: "center" });
    else this.viewer.scrollTop = 0;
  }
}

function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
