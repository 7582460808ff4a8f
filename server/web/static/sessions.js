// @ts-check
// The sidebar: start a session, register a repository, and the sessions list with
// search, filters (repository, status, archived, mine or everyone's), activity order and
// paging by nextCursor; each row names the session's owner.

import { personName } from "./me.js";
import { ApiError, describe, get, post, query } from "./api.js";
import { ago, clear, h, sessionTitle, when } from "./dom.js";
import { SESSION_STATUSES } from "./enums.js";
import { CreateChoices, confirmPurge, highlighted, rename, setArchived, usageText } from "./glance.js";

// Page size of the list: 20, or ?pageSize=N on the page's URL (1..200).
const PAGE = Math.min(200, Math.max(1, Number(new URLSearchParams(location.search).get("pageSize")) || 20));

export class Sidebar {
  constructor(root, { navigate }) {
    this.root = root;
    this.navigate = navigate;
    this.repos = [];
    this.agents = [];
    this.cursor = null;
    this.shown = 0;
    this.currentId = null;
    this.retryTimer = 0;
    this.build();
  }

  build() {
    // New session
    this.repoSelect = h("select#new-repo", { required: true });
    this.agentSelect = h("select#new-agent");
    this.titleInput = h("input#new-title", { type: "text", placeholder: "optional", autocomplete: "off", maxlength: 200 });
    this.createButton = h("button.primary", { type: "submit" }, "Start session");
    this.isolatedInput = h("input#new-isolated", { type: "checkbox", onchange: () => this.choices.setIsolated(this.isolatedInput.checked) });
    this.choices = new CreateChoices();
    this.agentSelect.addEventListener("change", () => this.choices.show(this.agents.find((a) => a.id === this.agentSelect.value)));
    this.createError = h("div.form-error", { role: "alert" });
    this.createForm = h("form.card.new-session", { onsubmit: (e) => { e.preventDefault(); this.create(); } },
      h("h2.section-title", {}, "New session"),
      h("div.field", {}, h("label", { for: "new-repo" }, "Repository"), this.repoSelect),
      h("div.field-row", {},
        h("div.field", {}, h("label", { for: "new-agent" }, "Agent"), this.agentSelect),
        h("div.field", {}, h("label", { for: "new-title" }, "Title"), this.titleInput)),
      h("div.field.check-field", {}, this.isolatedInput,
        h("label", { for: "new-isolated", title: "Work in its own git worktree on a new branch agent/…" }, "Isolated worktree")),
      h("div.field.check-field", {}, this.privateInput,
        h("label", { for: "new-private", title: "Only you and admins see it" }, "Private")),
      this.choices.element,
      h("div.form-actions", {}, this.createButton), this.createError);

    // Register a repository
    this.pathInput = h("input#repo-path", {
      type: "text", placeholder: "my-project or /abs/path/in/workspace", autocomplete: "off", required: true, spellcheck: "false",
    });
    this.repoError = h("p.form-error", { role: "alert" });
    this.repoNote = h("p.form-ok", { role: "status" });
    this.repoForm = h("form.repo-form", { onsubmit: (e) => { e.preventDefault(); this.register(); } },
      h("label", { for: "repo-path" }, "Directory inside the workspace root"),
      h("div.inline-form", {}, this.pathInput, h("button.secondary", { type: "submit" }, "Register")),
      this.repoError, this.repoNote);
    this.repoDetails = h("details.card.register", {}, h("summary", {}, "Register a repository"), this.repoForm);

    // Sessions list
    this.filterRepo = h("select#filter-repo", { onchange: () => this.refresh() }, h("option", { value: "" }, "All repositories"));
    this.filterStatus = h("select#filter-status", { onchange: () => this.refresh() },
      h("option", { value: "" }, "Any status"), SESSION_STATUSES.map((s) => h("option", { value: s }, s)));
    this.filterOwner = h("select#filter-owner", { onchange: () => this.refresh() },
      h("option", { value: "" }, "Everyone's"), h("option", { value: "me" }, "Mine"));
    this.privateInput = h("input#new-private", { type: "checkbox" });
    this.searchInput = h("input#session-search", {
      type: "search", placeholder: "Search sessions  ( / )", autocomplete: "off", spellcheck: "false",
      oninput: () => { clearTimeout(this.searchTimer); this.searchTimer = setTimeout(() => this.refresh(), 200); },
    });
    this.filterSort = h("select#filter-sort", { onchange: () => this.refresh() },
      h("option", { value: "activity" }, "Latest activity"), h("option", { value: "created" }, "Newest created"));
    this.archivedInput = h("input#show-archived", { type: "checkbox", onchange: () => this.refresh() });
    this.list = h("ul.session-list", { "aria-label": "Sessions" });
    this.listStatus = h("p.muted.list-status", { role: "status" });
    this.moreButton = h("button.secondary.more-button", { type: "button", hidden: true, onclick: () => this.loadMore() }, "Load more");
    this.listSection = h("section.sessions", { "aria-labelledby": "sessions-heading" },
      h("div.list-head", {},
        h("h2#sessions-heading.section-title", {}, "Sessions"),
        h("button.icon-button", { type: "button", "aria-label": "Refresh the list", title: "Refresh", onclick: () => this.refresh() }, "↻")),
      h("label.sr-only", { for: "session-search" }, "Search sessions"), this.searchInput,
      h("div.filters", {},
        h("label.sr-only", { for: "filter-repo" }, "Filter by repository"), this.filterRepo,
        h("label.sr-only", { for: "filter-status" }, "Filter by status"), this.filterStatus,
        h("label.sr-only", { for: "filter-owner" }, "Mine or everyone's"), this.filterOwner,
        h("label.sr-only", { for: "filter-sort" }, "Order"), this.filterSort),
      h("div.field.check-field", {}, this.archivedInput, h("label", { for: "show-archived" }, "Show archived")),
      this.list, this.listStatus, this.moreButton);

    clear(this.root, this.createForm, this.repoDetails, this.listSection);
  }

  async start() {
    await Promise.all([this.loadRepos(), this.loadAgents()]);
    await this.refresh();
    this.poll = setInterval(() => {
      const busy = this.list.contains(document.activeElement) || this.root.querySelector("select:focus");
      if (!document.hidden && this.shown <= PAGE && !busy) this.refresh({ quiet: true });
    }, 15_000);
  }

  async loadRepos() {
    try {
      const { repos } = await get("/api/repos");
      this.repos = repos;
    } catch (err) {
      this.createError.textContent = `Could not load repositories: ${describe(err)}`;
      return;
    }
    const keep = this.repoSelect.value;
    const keepFilter = this.filterRepo.value;
    clear(this.repoSelect, this.repos.length ? null : h("option", { value: "" }, "No repository yet: register one below"),
      this.repos.map((r) => h("option", { value: r.id, title: r.path }, r.name)));
    clear(this.filterRepo, h("option", { value: "" }, "All repositories"),
      this.repos.map((r) => h("option", { value: r.id }, r.name)));
    if (keep && this.repos.some((r) => r.id === keep)) this.repoSelect.value = keep;
    if (keepFilter) this.filterRepo.value = keepFilter;
    if (!this.repos.length) this.repoDetails.open = true;
  }

  async loadAgents() {
    try {
      const { agents } = await get("/api/agents");
      this.agents = agents;
    } catch {
      this.agents = [{ id: "default", default: true }];
    }
    const ordered = [...this.agents].sort((a, b) => Number(b.default) - Number(a.default));
    clear(this.agentSelect, ordered.map((a) => h("option", { value: a.id, title: a.command || "" }, a.id)));
    const dflt = this.agents.find((a) => a.default);
    if (dflt) this.agentSelect.value = dflt.id;
    this.choices.show(this.agents.find((a) => a.id === this.agentSelect.value));
  }

  async register() {
    const path = this.pathInput.value.trim();
    this.repoError.textContent = "";
    this.repoNote.textContent = "";
    if (!path) return;
    try {
      const repo = await post("/api/repos", { path });
      this.pathInput.value = "";
      this.repoNote.textContent = `Registered “${repo.name}”${repo.isGitRepo ? "" : " (not a git repository)"}.`;
      await this.loadRepos();
      this.repoSelect.value = repo.id;
    } catch (err) {
      this.repoError.textContent = describe(err);
      this.pathInput.focus();
    }
  }

  async create() {
    clearInterval(this.retryTimer);
    clear(this.createError);
    const repoId = this.repoSelect.value;
    if (!repoId) {
      this.createError.textContent = "Register a repository first.";
      return;
    }
    this.createButton.disabled = true;
    this.createButton.textContent = "Starting the agent…";
    try {
      const body = { repoId, agentId: this.agentSelect.value || undefined };
      if (this.titleInput.value.trim()) body.title = this.titleInput.value.trim();
      if (this.isolatedInput.checked) body.isolation = "worktree";
      if (this.privateInput.checked) body.visibility = "private";
      Object.assign(body, this.choices.body(this.isolatedInput.checked));
      const session = await post("/api/sessions", body);
      this.titleInput.value = "";
      await this.refresh({ quiet: true });
      this.navigate(`#/s/${session.id}`);
    } catch (err) {
      this.showCreateError(err);
    } finally {
      this.createButton.disabled = false;
      this.createButton.textContent = "Start session";
    }
  }

  showCreateError(err) {
    if (err instanceof ApiError && (err.code === "session_limit_reached" || err.code === "user_session_limit_reached")) {
      let left = err.retryAfter || 60;
      const counter = h("strong", {}, `${left} s`);
      clear(this.createError, h("p", {}, h("strong", {}, "Too many sessions are running. "), err.message),
        h("p", {}, "You can try again in ", counter, " — or complete a session you no longer need."));
      this.retryTimer = setInterval(() => {
        left -= 1;
        counter.textContent = left > 0 ? `${left} s` : "a moment (now)";
        if (left <= 0) clearInterval(this.retryTimer);
      }, 1000);
      this.refresh({ quiet: true });
      return;
    }
    if (err instanceof ApiError && err.code === "agent_start_failed") {
      const tail = err.details?.stderrTail;
      clear(this.createError, h("p", {}, h("strong", {}, "The agent did not start. "), describe(err)),
        tail ? h("details", { open: true }, h("summary", {}, "Agent error output (last lines)"), h("pre.stderr", {}, String(tail))) : null,
        h("p.muted", {}, "Check the agent's command (AGENT_COMMAND / AGENTS_FILE) and its credentials, then try again."));
      this.refresh({ quiet: true });
      return;
    }
    this.createError.textContent = describe(err);
  }

  filters() {
    const q = this.searchInput.value.trim();
    return {
      repoId: this.filterRepo.value, status: this.filterStatus.value, owner: this.filterOwner.value, q,
      sort: q ? undefined : this.filterSort.value, archived: this.archivedInput.checked ? "all" : undefined,
    };
  }

  focusSearch() {
    this.searchInput.focus();
    this.searchInput.select();
  }

  focusCreate() {
    this.repoSelect.focus();
  }

  /** Open the next (1) or previous (-1) session of the list. */
  step(delta, navigate) {
    const rows = [...this.list.querySelectorAll("li.session-item")];
    if (!rows.length) return;
    const at = rows.findIndex((li) => li.dataset.id === this.currentId);
    const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + delta))];
    navigate(`#/s/${next.dataset.id}`);
    next.querySelector("a")?.focus({ preventScroll: false });
  }

  async refresh({ quiet = false } = {}) {
    if (!quiet) this.listStatus.textContent = "Loading…";
    try {
      const f = this.filters();
      const page = await get(`/api/sessions${query({ ...f, limit: PAGE })}`);
      clear(this.list, page.sessions.map((s) => this.item(s)));
      this.shown = page.sessions.length;
      this.cursor = page.nextCursor || (f.q && this.shown < page.total ? "more" : null);
      this.total = page.total;
      this.renderListStatus();
    } catch (err) {
      this.listStatus.textContent = `Could not load sessions: ${describe(err)}`;
    }
  }

  async loadMore() {
    if (!this.cursor) return;
    this.moreButton.disabled = true;
    try {
      const more = this.filters().q ? { offset: this.shown } : { cursor: this.cursor };
      const page = await get(`/api/sessions${query({ ...this.filters(), limit: PAGE, ...more })}`);
      for (const s of page.sessions) {
        if (!this.list.querySelector(`[data-id="${s.id}"]`)) this.list.append(this.item(s));
      }
      this.shown = this.list.children.length;
      this.cursor = page.nextCursor || (this.filters().q && this.shown < page.total ? "more" : null);
      this.total = page.total;
      this.renderListStatus();
    } catch (err) {
      this.listStatus.textContent = `Could not load more: ${describe(err)}`;
    } finally {
      this.moreButton.disabled = false;
    }
  }

  renderListStatus() {
    this.moreButton.hidden = !this.cursor;
    const f = this.filters();
    if (!this.shown) {
      this.listStatus.textContent = f.q ? "No session matches this search."
        : f.repoId || f.status || f.owner ? "No session matches these filters." : "No sessions yet. Start one above.";
    } else {
      this.listStatus.textContent = this.total > this.shown ? `Showing ${this.shown} of ${this.total}` : "";
    }
  }

  item(session) {
    const current = session.id === this.currentId;
    const match = session.match;
    const href = match && match.seq ? `#/s/${session.id}/m/${match.seq}` : `#/s/${session.id}`;
    const ended = session.status !== "active";
    const actions = h("span.session-actions-row", {},
      h("button.link-button.rename-button", { type: "button", onclick: () => rename(session, () => this.refresh({ quiet: true })) }, "Rename"),
      ended ? h("button.link-button.archive-button", { type: "button", onclick: () => this.archive(session) },
        session.archived ? "Unarchive" : "Archive") : null,
      ended ? h("button.link-button.danger.purge-button", { type: "button", onclick: () => confirmPurge(session, () => this.purged(session)) }, "Purge…") : null);
    return h("li.session-item", { dataset: { id: session.id, status: session.status, archived: String(Boolean(session.archived)) } },
      h("a.session-link", { href, "aria-current": current ? "page" : null },
        h("span.session-line", {},
          h(`span.status-dot.dot-${session.status}`, { "aria-hidden": "true" }),
          h("span.session-name", {}, sessionTitle(session)),
          session.archived ? h("span.badge.badge-archived", {}, "archived") : null,
          h(`span.badge.badge-${session.status}`, {}, session.status)),
        match ? h("span.session-snippet", {}, highlighted(match.snippet)) : null,
        h("span.session-sub", {},
          h("span", {}, session.repo?.name || ""),
          h("span", {}, session.agentId),
          session.owner ? h("span.session-owner", { title: "Owner" }, personName(session.owner)) : null,
          session.visibility === "private" ? h("span.badge.private-badge", { title: "Only its owner and admins see it" }, "private") : null,
          h("span.session-row-usage", {}, usageText(session)),
          h("time", { datetime: session.lastActivityAt || session.createdAt, title: when(session.lastActivityAt || session.createdAt) },
            ago(session.lastActivityAt || session.createdAt)))),
      actions);
  }

  async archive(session) {
    try {
      await setArchived(session, !session.archived);
    } catch (err) {
      this.listStatus.textContent = describe(err);
      return;
    }
    await this.refresh({ quiet: true });
  }

  purged(session) {
    if (this.currentId === session.id) this.navigate("#/");
    this.refresh({ quiet: true });
  }

  /** Mark the open session and keep its row in step with what the view knows. */
  setCurrent(id, session = null) {
    this.currentId = id;
    for (const link of this.list.querySelectorAll(".session-link")) {
      const li = link.closest("li");
      if (li.dataset.id === id) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (session) {
      const row = this.list.querySelector(`[data-id="${session.id}"]`);
      if (row && row.dataset.status !== session.status) row.replaceWith(this.item(session));
      else if (!row) this.refresh({ quiet: true });
    }
  }
}
