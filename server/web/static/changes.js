// @ts-check
// The review (API.md, Worktrees and changes; Review): what the session changed, full
// width in the main area, the conversation one click away. Changed files as a tree; a
// file's diff unified or side by side (long lines scroll sideways); per file and per hunk a
// revert; comments on lines, sent to the agent together as one review prompt; commit,
// merge and the merged state; a session without a worktree says its changes are the
// repository's. The patch is drawn per file and in batches (see patch.js).

import { ApiError, del, describe, get, post, query } from "./api.js";
import { ago, announce, clear, h, when } from "./dom.js";
import { buildTree } from "./filetree.js";
import { renderLines, splitPatch } from "./patch.js";

const MARK = { added: "A", modified: "M", deleted: "D", renamed: "R" };

/** @typedef {{path: string, line: number, side: "new" | "old", body: string}} Comment */

export class ReviewView {
  /**
   * @param {HTMLElement} root
   * @param {string} sessionId
   * @param {{onChanged?: () => void, onOpenFile?: (path: string, line?: number | null, ref?: string | null) => void, onSent?: () => void}} [options]
   */
  constructor(root, sessionId, { onChanged, onOpenFile, onSent } = {}) {
    this.root = root;
    this.sessionId = sessionId;
    this.onChanged = onChanged;
    this.onOpenFile = onOpenFile;
    this.onSent = onSent;
    this.session = null;
    this.mode = "unified";
    this.runId = "";
    this.files = [];
    this.patches = new Map();
    this.selected = null;
    /** @type {Map<string, Comment>} */
    this.comments = new Map();
    this.stopRender = () => {};
    this.loading = 0;
    this.runSelect = h("select.changes-run", { "aria-label": "Which changes", onchange: () => this.load() },
      h("option", { value: "" }, "Whole session"));
    this.modeButton = h("button.ghost-button.changes-mode", {
      type: "button", "aria-pressed": "false", onclick: () => this.toggleMode(),
    }, "Side by side");
    this.merged = h("div.review-merged", { hidden: true, role: "status" });
    this.scope = h("p.review-scope", { hidden: true });
    this.status = h("p.muted.changes-status", { role: "status" });
    this.summary = h("p.changes-summary");
    this.fileList = h("div.changes-tree", { role: "navigation", "aria-label": "Changed files" });
    this.diffTitle = h("h3.changes-file-title");
    this.fileCounts = h("span.file-counts");
    this.viewButton = h("button.ghost-button.view-file", { type: "button", onclick: () => this.viewFile() }, "View file");
    this.revertButton = h("button.ghost-button.danger.revert-file", { type: "button", onclick: () => this.revert(null) }, "Revert file");
    this.fileError = h("p.error-text.review-error", { role: "alert" });
    this.diff = h("div.patch-view", {
      role: "region", "aria-label": "Diff", tabindex: "0",
      onclick: (event) => this.onDiffClick(event),
    });
    this.reviewText = h("textarea.review-text", { rows: 1, placeholder: "A note for the agent with the comments (optional)", "aria-label": "Review note" });
    this.sendButton = h("button.primary.send-review", { type: "button", onclick: () => this.sendReview() }, "Send review");
    this.reviewCount = h("span.review-count");
    this.reviewError = h("p.error-text", { role: "alert" });
    this.reviewBar = h("div.review-bar", { hidden: true },
      this.reviewCount, this.reviewText, this.sendButton, this.reviewError);
    this.message = h("textarea.commit-message", { rows: 2, placeholder: "Commit message", "aria-label": "Commit message" });
    this.commitButton = h("button.primary.commit-button", { type: "submit" }, "Commit");
    this.squash = h("input.merge-squash", { type: "checkbox" });
    this.mergeButton = h("button.ghost-button.merge-button", { type: "button", onclick: () => this.merge() }, "Merge into base");
    this.deleteButton = h("button.ghost-button.danger.delete-worktree", { type: "button", onclick: () => this.deleteWorktree() }, "Delete worktree");
    this.result = h("div.changes-result", { role: "alert" });
    this.branchName = h("span.branch");
    this.gitActions = h("section.git-actions", { hidden: true, "aria-label": "Branch" },
      h("h3.git-title", {}, "Branch ", this.branchName),
      h("form.commit-form", { onsubmit: (e) => { e.preventDefault(); this.commit(); } }, this.message, this.commitButton),
      h("div.merge-row", {}, this.mergeButton,
        h("label.merge-squash-label", {}, this.squash, " squash"), this.deleteButton),
      this.result);
    clear(root,
      h("div.review-head", {},
        h("h2.review-title", { tabindex: "-1" }, "Review"),
        h("div.changes-toolbar", {}, this.runSelect, this.modeButton,
          h("button.icon-button", { type: "button", title: "Refresh changes", "aria-label": "Refresh changes", onclick: () => this.load() }, "↻"))),
      this.merged, this.scope, this.reviewBar,
      h("div.review-body", {},
        h("div.review-side", {}, this.status, this.summary, this.fileList, this.gitActions),
        h("div.review-main", {},
          h("div.review-file-head", {}, this.diffTitle, this.fileCounts,
            h("span.review-file-actions", {}, this.viewButton, this.revertButton)),
          this.fileError, this.diff)));
  }

  /** The session as last seen (workspace, merged state): shows what applies to it. */
  setSession(session) {
    this.session = session;
    const ws = session?.workspace;
    const worktree = ws?.isolation === "worktree";
    this.gitActions.hidden = !worktree;
    this.branchName.textContent = ws?.branch || "";
    this.mergeButton.textContent = `Merge into ${ws?.baseRef && ws.baseRef !== "HEAD" ? ws.baseRef : "base"}`;
    this.deleteButton.hidden = session?.status === "active";
    const merged = ws?.merged;
    this.merged.hidden = !merged;
    if (merged) {
      clear(this.merged,
        h("span.merged-mark", { "aria-hidden": "true" }, "✓"),
        h("span", {}, h("strong", {}, `Merged into ${merged.into}`),
          merged.commit ? [" as ", h("code.merged-commit", { title: merged.commit }, merged.commit.slice(0, 12))] : null,
          " · ", h("time", { datetime: merged.at, title: when(merged.at) }, ago(merged.at)), ". ",
          "The changes below are the branch's against its base commit; they are in ", merged.into, " now."));
    }
    this.scope.hidden = worktree || !ws?.baseCommit;
    clear(this.scope,
      h("strong", {}, "These are the repository's changes, not only this session's. "),
      "The session works in the repository itself (no worktree), so this lists every uncommitted change since ",
      h("code", {}, (ws?.baseCommit || "").slice(0, 12)),
      ", whoever made it: other sessions, people, merges.");
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
    this.status.textContent = this.files.length ? "" : (this.runId ? "This turn changed no file." : "No changes.");
    clear(this.summary, this.files.length ? [
      `${this.files.length} file${this.files.length === 1 ? "" : "s"} `,
      h("span.add", {}, `+${added}`), " ", h("span.del", {}, `−${removed}`),
      found.truncated ? h("span.muted", {}, " · the patch was cut at the server's limit") : null,
    ] : []);
    clear(this.fileList, this.renderTree(buildTree(this.files, (f) => f.path)));
    const keep = this.files.some((f) => f.path === this.selected) ? this.selected : this.files[0]?.path ?? null;
    this.select(keep);
  }

  renderTree(dir) {
    return h("ul.tree-level", { role: dir.path ? "group" : null },
      dir.dirs.map((sub) => h("li.tree-dir", {},
        h("details", { open: true },
          h("summary.tree-dir-name", {}, h("span.tree-icon", { "aria-hidden": "true" }, "▸"), `${sub.name}/`),
          this.renderTree(sub)))),
      dir.files.map(({ name, item: file }) => h("li", {},
        h("button.changes-file", {
          type: "button", dataset: { path: file.path }, onclick: () => this.select(file.path),
          "aria-pressed": "false", title: file.oldPath ? `${file.oldPath} → ${file.path}` : file.path,
        },
        h(`span.file-status.status-${file.status}`, { title: file.status }, MARK[file.status] || "?"),
        h("span.file-path", {}, file.oldPath ? `${name} (was ${file.oldPath})` : name),
        this.commentBadge(file.path),
        file.binary ? h("span.muted", {}, "binary")
          : h("span.file-counts", {}, h("span.add", {}, `+${file.additions}`), " ", h("span.del", {}, `−${file.deletions}`))))));
  }

  commentBadge(path) {
    const n = [...this.comments.values()].filter((c) => c.path === path).length;
    const label = `${n} comment${n === 1 ? "" : "s"}`;
    return n ? h("span.comment-badge", { title: label, "aria-label": label }, String(n)) : null;
  }

  select(path) {
    this.stopRender();
    this.selected = path;
    this.fileError.textContent = "";
    for (const button of this.fileList.querySelectorAll("button.changes-file")) {
      button.setAttribute("aria-pressed", String(/** @type {HTMLElement} */ (button).dataset.path === path));
    }
    const file = this.files.find((f) => f.path === path);
    this.diffTitle.textContent = file ? file.path : "";
    clear(this.fileCounts, file && !file.binary
      ? [h("span.add", {}, `+${file.additions}`), " ", h("span.del", {}, `−${file.deletions}`)] : []);
    this.viewButton.hidden = !file || file.status === "deleted";
    this.revertButton.hidden = !file || Boolean(this.runId);
    this.revertButton.title = file?.status === "added" ? "Delete this new file" : "Put this file back as it was at the base commit";
    if (!file) { this.diff.replaceChildren(); return; }
    if (file.binary) { clear(this.diff, h("p.muted", {}, "A binary file: not shown.")); return; }
    const lines = this.patches.get(path);
    if (!lines) { clear(this.diff, h("p.muted", {}, "Past the patch's size limit: not shown.")); return; }
    this.diff.dataset.state = "drawing";
    const whole = !this.runId; // hunks and lines of the whole session's patch only
    this.stopRender = renderLines(this.diff, path, lines, this.mode, () => {
      this.diff.dataset.state = "done";
      this.placeComments();
    }, {
      commentable: whole,
      hunkAction: whole ? (index) => h("button.link-button.revert-hunk", {
        type: "button", dataset: { hunk: String(index) }, title: "Put this hunk back as it was at the base commit",
      }, "Revert hunk") : undefined,
    });
  }

  toggleMode() {
    this.mode = this.mode === "unified" ? "split" : "unified";
    this.modeButton.setAttribute("aria-pressed", String(this.mode === "split"));
    this.modeButton.textContent = this.mode === "split" ? "Unified" : "Side by side";
    this.select(this.selected);
  }

  viewFile(line = null) {
    if (this.selected) this.onOpenFile?.(this.selected, line, null);
  }

  // -- revert ------------------------------------------------------------------------

  onDiffClick(event) {
    const target = /** @type {HTMLElement} */ (event.target);
    const hunk = target.closest("button.revert-hunk");
    if (hunk) { this.revert([Number(/** @type {HTMLElement} */ (hunk).dataset.hunk)]); return; }
    const ln = /** @type {HTMLElement | null} */ (target.closest("button.ln-comment"));
    if (ln) this.openCommentForm(ln);
  }

  async revert(hunks) {
    const path = this.selected;
    if (!path) return;
    const what = hunks ? `hunk ${hunks[0] + 1} of ${path}` : path;
    if (!window.confirm(`Put ${what} back as it was at the base commit? The agent's change there is lost.`)) return;
    this.fileError.textContent = "";
    try {
      const found = await post(`/api/sessions/${this.sessionId}/changes/revert`, hunks ? { path, hunks } : { path });
      announce(hunks ? "Hunk reverted" : "File reverted");
      this.show(found);
    } catch (err) {
      this.fileError.textContent = `Could not revert: ${describe(err)}`;
    }
  }

  // -- comments ----------------------------------------------------------------------

  key(path, side, line) {
    return `${side}:${line}:${path}`;
  }

  /** The row that shows `line` of `side` in the drawn diff (null: not drawn). */
  rowOf(side, line) {
    return this.diff.querySelector(`.pl[data-${side}="${line}"]`);
  }

  openCommentForm(button) {
    const side = button.dataset.side === "old" ? "old" : "new";
    const line = Number(button.dataset.line);
    const row = button.closest(".pl");
    if (!row || !this.selected) return;
    const existing = this.comments.get(this.key(this.selected, side, line));
    row.parentElement?.querySelector(`.comment-form[data-at="${side}:${line}"]`)?.remove();
    const text = h("textarea.comment-body", { rows: 3, "aria-label": `Comment on line ${line}`, placeholder: "What should the agent change here?" });
    text.value = existing?.body || "";
    const path = this.selected;
    const form = h("form.comment-form", {
      dataset: { at: `${side}:${line}` },
      onsubmit: (event) => {
        event.preventDefault();
        const body = text.value.trim();
        if (!body) return;
        this.comments.set(this.key(path, side, line), { path, line, side, body });
        form.remove();
        this.placeComments();
        this.renderReviewBar();
      },
    }, h("div.comment-where", {}, `${side === "old" ? "Old line" : "Line"} ${line}`), text,
    h("div.form-actions", {},
      h("button.secondary", { type: "button", onclick: () => form.remove() }, "Cancel"),
      h("button.primary", { type: "submit" }, existing ? "Update comment" : "Add comment")));
    row.after(form);
    text.focus();
  }

  /** The pending comments of the shown file, each under its line. */
  placeComments() {
    for (const node of this.diff.querySelectorAll(".review-comment")) node.remove();
    for (const [key, comment] of this.comments) {
      if (comment.path !== this.selected) continue;
      const row = this.rowOf(comment.side, comment.line);
      if (!row) continue;
      row.after(h("div.review-comment", { dataset: { key } },
        h("span.comment-where", {}, `${comment.side === "old" ? "Old line" : "Line"} ${comment.line}`),
        h("span.comment-text", {}, comment.body),
        h("button.link-button.comment-delete", {
          type: "button", onclick: () => { this.comments.delete(key); this.placeComments(); this.renderReviewBar(); },
        }, "Delete")));
    }
  }

  renderReviewBar() {
    const n = this.comments.size;
    this.reviewBar.hidden = n === 0;
    this.reviewCount.textContent = `${n} comment${n === 1 ? "" : "s"} on ${new Set([...this.comments.values()].map((c) => c.path)).size} file(s)`;
    this.sendButton.textContent = `Send review (${n})`;
    for (const button of this.fileList.querySelectorAll("button.changes-file")) {
      const path = /** @type {HTMLElement} */ (button).dataset.path || "";
      button.querySelector(".comment-badge")?.remove();
      const badge = this.commentBadge(path);
      if (badge) button.querySelector(".file-path")?.after(badge);
    }
  }

  async sendReview() {
    if (!this.comments.size) return;
    this.reviewError.textContent = "";
    const text = this.reviewText.value.trim();
    const comments = [...this.comments.values()];
    this.sendButton.disabled = true;
    try {
      await post(`/api/sessions/${this.sessionId}/review`, text ? { comments, text } : { comments });
      this.comments.clear();
      this.reviewText.value = "";
      this.placeComments();
      this.renderReviewBar();
      announce("Review sent to the agent");
      this.onSent?.();
    } catch (err) {
      this.reviewError.textContent = err instanceof ApiError && err.code === "turn_in_progress"
        ? "The agent is working: send the review when its turn ends."
        : `Could not send the review: ${describe(err)}`;
    } finally {
      this.sendButton.disabled = false;
    }
  }

  // -- branch ------------------------------------------------------------------------

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
      const already = err instanceof ApiError && err.code === "nothing_to_commit" && this.session?.workspace?.merged;
      clear(this.result, h(already ? "p.muted" : "p.error-text", {}, describe(err)),
        files.length ? h("ul.conflict-files", { "aria-label": "Conflicting files" }, files.map((f) => h("li", {}, f))) : null);
    }
  }

  open() {
    this.loadRuns();
    return this.load();
  }
}

/**
 * The session's main area as tabs: the conversation, the review (git sessions) and the
 * files; the branch in the header; per prompt "Changes" and "Restore files to here".
 * @param {{sessionId: string, root: HTMLElement, rewind: (seq: number, text: string | null, restoreFiles: boolean) => Promise<void>, refresh: () => void, conversation: HTMLElement, files: {open: (path: string, line?: number | null, ref?: string | null) => void, setSession: (s: object) => void, show: () => void}}} view
 */
export function attachChanges(view) {
  const pane = h("section.review-pane", { id: `review-${view.sessionId}`, role: "tabpanel", hidden: true, "aria-label": "Review" });
  const filesPane = h("section.files-pane", { id: `files-${view.sessionId}`, role: "tabpanel", hidden: true, "aria-label": "Files" });
  /** @type {ReviewView | null} */
  let review = null;
  let session = null;
  const tab = (name, label, controls) => h("button.session-tab", {
    type: "button", role: "tab", id: `tab-${name}-${view.sessionId}`, dataset: { tab: name },
    "aria-selected": "false", "aria-controls": controls, onclick: () => select(name),
  }, label);
  const tabs = {
    conversation: tab("conversation", "Conversation", `conversation-${view.sessionId}`),
    review: tab("review", "Review", pane.id),
    files: tab("files", "Files", filesPane.id),
  };
  const count = h("span.tab-count");
  tabs.review.append(count);
  const bar = h("div.session-tabs", {
    role: "tablist", "aria-label": "Session views",
    onkeydown: (event) => { // arrows move between the tabs, as a tablist's do
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const shown = Object.values(tabs).filter((t) => !t.hidden);
      const at = shown.indexOf(/** @type {HTMLElement} */ (document.activeElement));
      if (at < 0) return;
      const next = shown[(at + (event.key === "ArrowRight" ? 1 : shown.length - 1)) % shown.length];
      next.focus();
      next.click();
    },
  }, Object.values(tabs));
  const ensure = () => {
    if (!review) {
      review = new ReviewView(pane, view.sessionId, {
        onChanged: () => view.refresh(),
        onOpenFile: (path, line, ref) => openFile(path, line, ref),
        onSent: () => select("conversation"),
      });
      review.setSession(session);
    }
    return review;
  };
  let current = "conversation";
  /** @param {string} name */
  const select = (name) => {
    current = name;
    for (const [key, button] of Object.entries(tabs)) button.setAttribute("aria-selected", String(key === name));
    view.conversation.hidden = name !== "conversation";
    pane.hidden = name !== "review";
    filesPane.hidden = name !== "files";
    view.root.dataset.tab = name;
    if (name === "review") ensure().open();
    if (name === "files") view.files.show();
  };
  const openFile = (path, line = null, ref = null) => {
    select("files");
    view.files.open(path, line, ref);
  };
  const git = () => Boolean(session?.workspace?.baseCommit);
  select("conversation");
  return {
    tabs: bar,
    pane,
    filesPane,
    select,
    openFile,
    get current() { return current; },
    /** The session changed: the tabs, the review's actions, the merged state. */
    update(s) {
      session = s;
      tabs.review.hidden = !git();
      review?.setSession(s);
      view.files.setSession(s);
    },
    /** A turn ended: what the review shows may have changed. */
    turnEnded() {
      if (current === "review") review?.load();
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
          onclick: () => { select("review"); ensure().showRun(message.runId); },
        }, "Changes"),
        h("button.link-button.restore-action", {
          type: "button", title: "Drop this prompt and everything after it, and put the files back as they were before it",
          onclick: () => view.rewind(Math.max(0, message.seq - 1), message.content?.text ?? null, true),
        }, "Restore files to here"),
      ];
    },
  };
}
