// @ts-check
// The Changes panel (API.md, Worktrees and changes): what the session changed in its
// workspace, or what one turn changed; files with their +/− counts; a file's diff unified
// or side by side; Commit, Merge into base (conflicts listed) and Delete worktree for
// isolated sessions. The patch is drawn per file and in batches (see patch.js).

import { ApiError, del, describe, get, post, query } from "./api.js";
import { clear, h } from "./dom.js";
import { renderLines, splitPatch } from "./patch.js";

const MARK = { added: "A", modified: "M", deleted: "D", renamed: "R" };

export class ChangesPanel {
  /**
   * @param {HTMLElement} root
   * @param {string} sessionId
   * @param {{onClose?: () => void, onChanged?: () => void}} [options]
   */
  constructor(root, sessionId, { onClose, onChanged } = {}) {
    this.root = root;
    this.sessionId = sessionId;
    this.onChanged = onChanged;
    this.session = null;
    this.mode = "unified";
    this.runId = "";
    this.files = [];
    this.patches = new Map();
    this.selected = null;
    this.stopRender = () => {};
    this.loading = 0;
    this.runSelect = h("select.changes-run", { "aria-label": "Which changes", onchange: () => this.load() },
      h("option", { value: "" }, "Whole session"));
    this.modeButton = h("button.ghost-button.changes-mode", {
      type: "button", "aria-pressed": "false", onclick: () => this.toggleMode(),
    }, "Side by side");
    this.status = h("p.muted.changes-status", { role: "status" });
    this.summary = h("p.changes-summary");
    this.fileList = h("ul.changes-files", { "aria-label": "Changed files" });
    this.diffTitle = h("h4.changes-file-title");
    this.diff = h("div.patch-view", { role: "region", "aria-label": "Diff", tabindex: "0" });
    this.message = h("textarea.commit-message", { rows: 2, placeholder: "Commit message", "aria-label": "Commit message" });
    this.commitButton = h("button.primary.commit-button", { type: "submit" }, "Commit");
    this.squash = h("input.merge-squash", { type: "checkbox" });
    this.mergeButton = h("button.ghost-button.merge-button", { type: "button", onclick: () => this.merge() }, "Merge into base");
    this.deleteButton = h("button.ghost-button.danger.delete-worktree", { type: "button", onclick: () => this.deleteWorktree() }, "Delete worktree");
    this.result = h("div.changes-result", { role: "alert" });
    this.gitActions = h("div.git-actions", { hidden: true },
      h("form.commit-form", { onsubmit: (e) => { e.preventDefault(); this.commit(); } }, this.message, this.commitButton),
      h("div.merge-row", {}, this.mergeButton,
        h("label.merge-squash-label", {}, this.squash, " squash"), this.deleteButton),
      this.result);
    clear(root,
      h("div.panel-head", {},
        h("h3", {}, "Changes"),
        h("span", {},
          h("button.icon-button", { type: "button", title: "Refresh changes", "aria-label": "Refresh changes", onclick: () => this.load() }, "↻"),
          onClose ? h("button.icon-button", { type: "button", title: "Close", "aria-label": "Close changes", onclick: onClose }, "✕") : null)),
      h("div.changes-toolbar", {}, this.runSelect, this.modeButton),
      this.status, this.summary, this.fileList, this.diffTitle, this.diff, this.gitActions);
  }

  /** The session as last seen (status, workspace): shows what applies to it. */
  setSession(session) {
    this.session = session;
    const ws = session?.workspace;
    const worktree = ws?.isolation === "worktree";
    this.gitActions.hidden = !worktree;
    this.mergeButton.textContent = `Merge into ${ws?.baseRef && ws.baseRef !== "HEAD" ? ws.baseRef : "base"}`;
    this.deleteButton.hidden = session?.status === "active";
  }

  /** Show one turn's changes (from "what did this turn change"). */
  showRun(runId) {
    if (![...this.runSelect.options].some((o) => o.value === runId)) {
      this.runSelect.append(h("option", { value: runId }, `Turn ${runId.slice(0, 8)}`));
    }
    this.runSelect.value = runId;
    return this.load();
  }

  async loadRuns() {
    try {
      const page = await get(`/api/agent-runs${query({ sessionId: this.sessionId, limit: 100 })}`);
      const runs = [...page.data].reverse();
      const chosen = this.runSelect.value;
      clear(this.runSelect, h("option", { value: "" }, "Whole session"),
        runs.map((run, i) => h("option", { value: run.id }, `Turn ${i + 1} · ${run.status}`)));
      this.runSelect.value = runs.some((r) => r.id === chosen) ? chosen : "";
    } catch {
      // the filter keeps what it had; the changes themselves still load
    }
  }

  async load() {
    const ticket = ++this.loading;
    this.runId = this.runSelect.value;
    this.status.textContent = "Loading changes…";
    try {
      const found = await get(`/api/sessions/${this.sessionId}/changes${query({ run: this.runId })}`);
      if (ticket !== this.loading) return;
      this.show(found);
    } catch (err) {
      if (ticket !== this.loading) return;
      this.status.textContent = err instanceof ApiError && err.code === "not_a_git_repo"
        ? "This repository is not a git repository: there are no changes to show."
        : `Could not load the changes: ${describe(err)}`;
    }
  }

  show(found) {
    this.files = found.files;
    this.patches = splitPatch(found.patch);
    const added = this.files.reduce((n, f) => n + f.additions, 0);
    const removed = this.files.reduce((n, f) => n + f.deletions, 0);
    this.status.textContent = this.files.length ? "" : (this.runId ? "This turn changed no file." : "No changes yet.");
    clear(this.summary, this.files.length ? [
      `${this.files.length} file${this.files.length === 1 ? "" : "s"} `,
      h("span.add", {}, `+${added}`), " ", h("span.del", {}, `−${removed}`),
      found.truncated ? h("span.muted", {}, " · the patch was cut at the server's limit") : null,
    ] : []);
    clear(this.fileList, this.files.map((file) => h("li", {},
      h("button.changes-file", {
        type: "button", dataset: { path: file.path }, onclick: () => this.select(file.path),
        "aria-pressed": "false",
      },
        h(`span.file-status.status-${file.status}`, { title: file.status }, MARK[file.status] || "?"),
        h("span.file-path", {}, file.oldPath ? `${file.oldPath} → ${file.path}` : file.path),
        file.binary ? h("span.muted", {}, "binary")
          : h("span.file-counts", {}, h("span.add", {}, `+${file.additions}`), " ", h("span.del", {}, `−${file.deletions}`))))));
    const keep = this.files.some((f) => f.path === this.selected) ? this.selected : this.files[0]?.path ?? null;
    this.select(keep);
  }

  select(path) {
    this.stopRender();
    this.selected = path;
    for (const button of this.fileList.querySelectorAll("button.changes-file")) {
      button.setAttribute("aria-pressed", String(/** @type {HTMLElement} */ (button).dataset.path === path));
    }
    const file = this.files.find((f) => f.path === path);
    this.diffTitle.textContent = file ? file.path : "";
    if (!file) { this.diff.replaceChildren(); return; }
    if (file.binary) { clear(this.diff, h("p.muted", {}, "A binary file: not shown.")); return; }
    const lines = this.patches.get(path);
    if (!lines) { clear(this.diff, h("p.muted", {}, "Past the patch's size limit: not shown.")); return; }
    this.diff.dataset.state = "drawing";
    this.stopRender = renderLines(this.diff, path, lines, this.mode, () => { this.diff.dataset.state = "done"; });
  }

  toggleMode() {
    this.mode = this.mode === "unified" ? "split" : "unified";
    this.modeButton.setAttribute("aria-pressed", String(this.mode === "split"));
    this.modeButton.textContent = this.mode === "split" ? "Unified" : "Side by side";
    this.select(this.selected);
  }

  async commit() {
    const message = this.message.value.trim();
    if (!message) { this.result.textContent = "Write a commit message first."; return; }
    await this.act(async () => {
      const made = await post(`/api/sessions/${this.sessionId}/commit`, { message });
      this.message.value = "";
      return `Committed ${made.commit.slice(0, 12)} (${made.files.length} file${made.files.length === 1 ? "" : "s"}) on ${this.session?.workspace?.branch}.`;
    });
  }

  async merge() {
    await this.act(async () => {
      const body = this.squash.checked ? { strategy: "squash" } : {};
      const merged = await post(`/api/sessions/${this.sessionId}/merge`, body);
      return `Merged into ${merged.into} as ${merged.commit.slice(0, 12)}.`;
    });
  }

  async deleteWorktree() {
    if (!window.confirm("Delete this session's worktree directory? Its branch stays.")) return;
    await this.act(async () => {
      await del(`/api/sessions/${this.sessionId}/worktree`);
      return "The worktree was deleted; its branch stays.";
    });
  }

  async act(action) {
    clear(this.result);
    try {
      this.result.textContent = await action();
      this.onChanged?.();
      await this.load();
    } catch (err) {
      const files = err instanceof ApiError && err.code === "merge_conflict" ? err.details.files || [] : [];
      clear(this.result, h("p.error-text", {}, describe(err)),
        files.length ? h("ul.conflict-files", { "aria-label": "Conflicting files" }, files.map((f) => h("li", {}, f))) : null);
    }
  }

  open() {
    this.loadRuns();
    return this.load();
  }
}

/**
 * What the session view shows for workspaces: a Changes button and panel, the branch in
 * the header, and per prompt "Changes of this turn" and "Restore files to here".
 * @param {{sessionId: string, root: HTMLElement, rewind: (seq: number, text: string | null, restoreFiles: boolean) => Promise<void>}} view
 */
export function attachChanges(view) {
  const panel = h("aside.changes-panel", { id: `changes-${view.sessionId}`, hidden: true, "aria-label": "Changes" });
  const button = h("button.ghost-button.changes-button", {
    type: "button", hidden: true, "aria-expanded": "false", "aria-controls": panel.id, onclick: () => toggle(),
  }, "Changes");
  /** @type {ChangesPanel | null} */
  let changes = null;
  let session = null;
  const ensure = () => {
    if (!changes) {
      changes = new ChangesPanel(panel, view.sessionId, { onClose: () => { toggle(false); button.focus(); } });
      changes.setSession(session);
    }
    return changes;
  };
  const toggle = (open = panel.hidden) => {
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    view.root.classList.toggle("changes-open", open);
    if (open) ensure().open();
  };
  const git = () => Boolean(session?.workspace?.baseCommit);
  return {
    button,
    panel,
    /** The session changed: the button, the panel's actions. */
    update(s) {
      session = s;
      button.hidden = !git();
      changes?.setSession(s);
    },
    /** The branch, for the header's meta line. */
    branchLabel(s) {
      const branch = s?.workspace?.branch;
      return branch ? h("span.branch", { title: s.workspace.path }, h("span.meta-label", {}, "branch "), branch) : null;
    },
    /** Actions on a prompt: its turn's changes, and putting the files back to before it. */
    turnActions(message) {
      if (message.role !== "user" || !message.runId || !git()) return null;
      return [
        h("button.link-button.turn-changes-action", {
          type: "button", title: "What this turn changed in the files",
          onclick: () => { toggle(true); ensure().showRun(message.runId); },
        }, "Changes"),
        h("button.link-button.restore-action", {
          type: "button", title: "Drop this prompt and everything after it, and put the files back as they were before it",
          onclick: () => view.rewind(Math.max(0, message.seq - 1), message.content?.text ?? null, true),
        }, "Restore files to here"),
      ];
    },
  };
}
