// @ts-check
// One session: header (status, usage, actions), the live transcript, pending permission
// questions, the prompt box and the run history panel.
//
// "A turn is running" is derived from the `run` messages: a run that started (status
// running) and has not ended yet. The prompt box is disabled while one runs. (Only a run
// whose end a rewind dropped is settled by the session's activeRunId, see onLive.)

import { personName } from "./me.js";
import { describe, get, post, del } from "./api.js";
import { ago, announce, clear, count, h, money, sessionTitle, when } from "./dom.js";
import { Composer } from "./composer.js";
import { QueueList } from "./glance.js";
import { ControlsBar } from "./controls.js";
import { Elicitations } from "./elicitation.js";
import { ClientToolCalls } from "./client-tools.js";
import { attachChanges } from "./changes.js";
import { FileBrowser } from "./files.js";
import { RunsPanel } from "./runs.js";
import { SessionStream } from "./stream.js";
import { Transcript } from "./transcript.js";

const DOWN_NOTICE_MS = 2000;
// a phone's prompt box is narrow: a long placeholder would wrap one word a line
const PHONE = window.matchMedia("(max-width: 760px)");
const ENDED = {
  completed: "This session is completed",
  cancelled: "This session was ended",
  error: "This session stopped with an error",
};

export class SessionView {
  /**
   * @param {HTMLElement} root
   * @param {string} sessionId
   * @param {{onSessionChanged?: (session: object) => void, navigate?: (hash: string) => void}} [options]
   */
  constructor(root, sessionId, { onSessionChanged, navigate } = {}) {
    this.root = root;
    this.sessionId = sessionId;
    this.onSessionChanged = onSessionChanged;
    this.navigate = navigate;
    this.session = null;
    this.live = false;
    this.activeRun = null;
    this.awaitingRun = false;
    this.seenRuns = new Set();
    this.cancelling = false;
    this.usage = null;
    this.permissions = new Map();
    this.downTimer = 0;
    this.build();
    this.transcript = new Transcript(this.log, {
      onPermission: (content) => this.showPermission(content),
      onPermissionDecided: (content) => this.hidePermission(content.requestId),
      messageActions: (message) => this.messageActions(message),
      decorateFinal: (node, message) => this.decorateFinal(node, message),
      relativePath: (path) => this.relativePath(path),
      openPath: (path, line) => this.changesUi.openFile(path, line ?? null, null),
    });
    this.stream = new SessionStream(sessionId, {
      onHello: (session, _lastSeq, { first }) => this.onHello(session, first),
      onMessage: (message) => this.onMessage(message),
      onLive: ({ first }) => this.onLive(first),
      onConnection: (state) => this.onConnection(state),
      onFatal: (text) => this.onFatal(text),
    });
    document.addEventListener("keydown", this.onKey);
    document.addEventListener("focusin", this.onFocus);
    document.addEventListener("pointerdown", this.onFocus);
    this.ageTimer = setInterval(() => this.renderAges(), 30_000);
    this.stream.start();
  }

  destroy() {
    this.stream.stop();
    this.clientTools.close();
    clearInterval(this.ageTimer);
    clearTimeout(this.downTimer);
    document.removeEventListener("keydown", this.onKey);
    document.removeEventListener("focusin", this.onFocus);
    document.removeEventListener("pointerdown", this.onFocus);
  }

  /** Keep the keyboard in the prompt box (or on Stop) across a turn, while the person
   * has not gone elsewhere: a disabled box drops its focus to <body>. A click outside
   * the box counts as going elsewhere even where nothing takes the focus (the page's
   * background: no focusin), so a shortcut typed next is not sent into the box. */
  onFocus = (event) => {
    this.keepFocus = this.form.contains(event.target);
  };

  renderAges() {
    this.renderMeta();
    for (const node of this.root.querySelectorAll("time.ago")) {
      node.textContent = ago(/** @type {HTMLTimeElement} */ (node).dateTime);
    }
  }

  build() {
    this.title = h("h2.session-title", { tabindex: "-1" }, "Loading session…");
    this.badge = h("span.badge", {}, "…");
    this.conn = h("span.conn", { role: "status", "aria-live": "polite" });
    this.meta = h("p.session-meta");
    this.usageLine = h("p.session-usage", { hidden: true });
    this.runsButton = h("button.ghost-button", {
      type: "button", "aria-expanded": "false", "aria-controls": `runs-${this.sessionId}`,
      onclick: () => this.toggleRuns(),
    }, "Runs");
    this.forkButton = h("button.ghost-button", { type: "button", onclick: () => this.fork(null) }, "Fork");
    this.completeButton = h("button.ghost-button", { type: "button", onclick: () => this.complete() }, "Complete");
    this.deleteButton = h("button.ghost-button.danger", { type: "button", onclick: () => this.remove() }, "Delete");
    this.actionError = h("p.error-text", { role: "alert" });
    this.log = h("div.transcript", {
      role: "log", "aria-live": "polite", "aria-relevant": "additions text", "aria-label": "Conversation",
      tabindex: "0",
    });
    this.working = h("div.working", { hidden: true, "aria-hidden": "true" }, h("span.dots", {}, h("i"), h("i"), h("i")), h("span.working-text", {}, "Agent is working"));
    this.runsPanel = h("aside.runs-panel", { id: `runs-${this.sessionId}`, hidden: true, "aria-label": "Run history" });
    this.permissionArea = h("div.permissions", { role: "region", "aria-label": "Questions from the agent", "aria-live": "assertive" });
    this.input = h("textarea#prompt-input", {
      rows: 2, placeholder: "Connecting…", disabled: true, "aria-describedby": "prompt-hint",
      onkeydown: (event) => this.onPromptKey(event), oninput: () => this.autosize(),
    });
    this.sendButton = h("button.primary.send-button", { type: "submit", disabled: true }, "Send");
    this.stopButton = h("button.stop-button", { type: "button", hidden: true, onclick: () => this.cancel() },
      h("span.stop-square", { "aria-hidden": "true" }), "Stop");
    this.composerError = h("p.error-text.composer-error", { role: "alert" });
    const wsSend = (command) => this.stream.send(command);
    this.controlsBar = new ControlsBar(this.sessionId, wsSend);
    this.composer = new Composer(this.sessionId, /** @type {HTMLTextAreaElement} */ (this.input), this.composerError);
    this.elicitations = new Elicitations(this.permissionArea, wsSend);
    this.clientTools = new ClientToolCalls(this.permissionArea, wsSend, this.sessionId);
    this.queue = new QueueList(this.sessionId);  // prompts waiting for the running turn
    this.form = h("form.composer", { onsubmit: (event) => { event.preventDefault(); this.send(); } },
      h("label.sr-only", { for: "prompt-input" }, "Message to the agent"),
      h("div.composer-box", {}, this.input,
        h("div.composer-buttons", {}, this.composer.attachButton, this.stopButton, this.sendButton)),
      h("div.composer-foot", {},
        h("span#prompt-hint.hint", {}, "Enter sends · Shift+Enter for a new line · Esc stops the agent"),
        this.composerError));
    this.conversation = h("div.session-main", { id: `conversation-${this.sessionId}`, role: "tabpanel" },
      this.log, this.working, this.permissionArea, this.queue.element, this.form);
    this.changesUi = attachChanges(this);
    this.files = new FileBrowser(this.changesUi.filesPane, this.sessionId);
    clear(this.root,
      h("header.session-head", {},
        h("div.session-head-main", {},
          h("a.back-link", { href: "#/" }, h("span", { "aria-hidden": "true" }, "← "), "Sessions"),
          h("div.title-row", {}, this.title, this.badge, this.conn),
          this.meta, this.usageLine, this.controlsBar.element),
        h("div.session-actions", {}, this.runsButton, this.forkButton, this.completeButton, this.deleteButton),
        this.actionError),
      this.changesUi.tabs,
      h("div.session-body", {},
        this.conversation, this.changesUi.pane, this.changesUi.filesPane, this.runsPanel));
    this.composer.mount(this.input.parentElement, this.form);
  }

  /** A path inside the session's workspace (its worktree, or the repository), shown
   * relative to it. */
  relativePath(path) {
    if (typeof path !== "string") return path;
    for (const root of [this.session?.workspace?.path, this.session?.repo?.path]) {
      if (!root) continue;
      const prefix = root.endsWith("/") ? root : `${root}/`;
      if (path.startsWith(prefix)) return path.slice(prefix.length);
    }
    return path;
  }

  /** The session as the server has it now (after a commit or merge: `workspace.merged`). */
  async refresh() {
    try {
      this.setSession(await get(`/api/sessions/${this.sessionId}`));
    } catch {
      // the stream's next hello brings it anyway
    }
  }

  // -- stream ----------------------------------------------------------------------

  onHello(session, first) {
    this.helloSeq = session?.lastSeq ?? 0;
    this.setSession(session);
    if (first) this.transcript.reset();
  }

  onMessage(message) {
    const content = message.content || {};
    if (content.type === "run") {
      this.seenRuns.add(content.runId);
      this.queue.gone(content.runId);
      if (content.status === "running") {
        this.activeRun = content.runId;
        this.activeRunSeq = message.seq;
      } else if (content.runId === this.activeRun || !this.activeRun) {
        this.activeRun = null;
        this.cancelling = false;
        if (this.live) announce(`Turn ${content.status}`);
      }
      if (this.awaitingRun === content.runId) this.awaitingRun = false;
      if (this.live && content.status !== "running") this.changesUi.turnEnded();
      if (!this.runsPanel.hidden && this.live) this.runs?.load();
    } else if (content.type === "status") {
      this.setSession({ ...this.session, status: content.status });
      if (content.status !== "active") {
        this.activeRun = null;
        this.awaitingRun = false;
      }
    } else if (content.type === "controls") {
      this.setSession({ ...this.session, controls: content.controls });
    } else if (content.type === "elicitation") {
      this.elicitations.update(content);
    } else if (content.type === "client_tool") {
      this.clientTools.update(content);
    } else if (content.type === "usage") {
      this.usage = content;
      this.renderUsage();
    }
    this.transcript.add(message);
    this.renderComposer();
  }

  onLive(first) {
    this.live = true;
    this.clientTools.open();
    // A run whose end was rewound away looks unfinished in the replay; the session says
    // whether one runs (a run that started after the hello is newer than it, so kept).
    if (this.activeRun && !this.session?.activeRunId && this.activeRunSeq <= this.helloSeq) {
      this.activeRun = null;
    }
    this.transcript.flush();
    this.renderComposer();
    if (first && this.session?.status === "active" && !this.activeRun) this.input.focus({ preventScroll: true });
  }

  onConnection(state) {
    clearTimeout(this.downTimer);
    if (state === "live") {
      this.conn.textContent = "";
      this.conn.className = "conn";
      return;
    }
    if (state === "down" || state === "connecting") {
      // a short drop stays invisible; a longer one gets a quiet note
      this.downTimer = setTimeout(() => {
        this.conn.textContent = "Reconnecting…";
        this.conn.className = "conn conn-down";
      }, this.live ? DOWN_NOTICE_MS : 400);
    }
  }

  onFatal(text) {
    clearTimeout(this.downTimer);
    this.conn.textContent = "";
    this.title.textContent = "Session unavailable";
    this.actionError.textContent = text;
    this.live = false;
    this.renderComposer();
  }

  setSession(session) {
    if (!session) return;
    this.session = session;
    this.title.textContent = sessionTitle(session);
    document.title = `${sessionTitle(session)} · Agent Sessions`;
    this.badge.textContent = session.status;
    this.badge.className = `badge badge-${session.status}`;
    this.renderMeta();
    this.controlsBar.update(session.controls, session.status === "active");
    this.composer.setControls(session.controls);
    this.onSessionChanged?.(session);
  }

  renderMeta() {
    const s = this.session;
    if (!s) return;
    clear(this.meta,
      h("span", { title: s.repo?.path || "" }, h("span.meta-label", {}, "repo "), s.repo?.name || s.repoId),
      h("span", {}, h("span.meta-label", {}, "agent "), s.agentId),
      s.owner ? h("span.session-owner", {}, h("span.meta-label", {}, "owner "), personName(s.owner)) : null,
      s.visibility === "private" ? h("span.badge.private-badge", {}, "private") : null,
      h("span", { title: when(s.createdAt) }, `started ${ago(s.createdAt)}`),
      s.forkedFrom ? h("a", { href: `#/s/${s.forkedFrom.sessionId}` }, `forked at #${s.forkedFrom.seq}`) : null,
      this.changesUi.branchLabel(s));
    this.changesUi.update(s);
    const ended = s.status !== "active";
    this.completeButton.hidden = ended;
    this.completeButton.title = "End this session gracefully";
    this.deleteButton.hidden = ended;
    this.deleteButton.title = "Stop the agent (and everything it started) and end this session";
  }

  renderUsage() {
    const u = this.usage;
    if (!u) return;
    const pct = u.size ? Math.min(100, Math.round((u.used / u.size) * 100)) : null;
    const cost = money(u.cost);
    clear(this.usageLine,
      h("span", {}, `Context ${count(u.used)}${u.size ? ` / ${count(u.size)}` : ""} tokens`),
      pct !== null ? h("meter", { min: 0, max: 100, value: pct, "aria-label": "Context used", title: `${pct}% of the context window` }) : null,
      cost ? h("span", {}, ` · cost ${cost}`) : null);
    this.usageLine.hidden = false;
  }

  get turnRunning() {
    return Boolean(this.activeRun);
  }

  renderComposer() {
    const active = this.session?.status === "active";
    const busy = this.turnRunning || Boolean(this.awaitingRun);
    // the box stays usable during a turn: what is sent then is queued (glance.js)
    const usable = this.live && active && !this.awaitingRun;
    const focused = document.activeElement;
    const hadFocus = this.keepFocus && (!focused || focused === document.body || this.form.contains(focused));
    this.input.disabled = !usable;
    this.sendButton.disabled = !usable;
    this.composer.disabled = !usable;
    this.sendButton.textContent = busy ? "Queue" : "Send";
    this.stopButton.hidden = !this.turnRunning || !active;
    this.stopButton.disabled = this.cancelling;
    this.stopButton.lastChild.textContent = this.cancelling ? "Stopping…" : "Stop";
    this.working.hidden = !(this.turnRunning && active);
    this.input.placeholder = !this.session ? "Connecting…"
      : !active ? `${ENDED[this.session.status] || "This session has ended"}; it takes no more prompts (fork it to go on).`
        : this.turnRunning ? (PHONE.matches ? "Working… type to queue" : "The agent is working… type the next prompt to queue it (Esc stops)")
          : "Ask the agent to do something";
    this.root.classList.toggle("turn-running", this.turnRunning);
    if (hadFocus && focused !== this.input && this.turnRunning && !this.stopButton.hidden && !this.stopButton.disabled) {
      this.stopButton.focus({ preventScroll: true });
    } else if (hadFocus && usable) {
      this.input.focus({ preventScroll: true });
    }
  }

  // -- prompt ------------------------------------------------------------------------

  onPromptKey(event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    }
  }

  onKey = (event) => {
    if (event.key !== "Escape" || !this.turnRunning) return;
    if (document.querySelector("dialog[open]")) return;
    event.preventDefault();
    this.cancel();
  };

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  async send() {
    if (this.composer.empty || this.input.disabled) return;
    this.composerError.textContent = "";
    this.awaitingRun = true;
    this.renderComposer();
    try {
      const body = this.composer.body();
      const queued = this.turnRunning;
      if (queued) body.queue = true;
      const { runId, position } = await post(`/api/sessions/${this.sessionId}/prompt`, body);
      if (position && !this.seenRuns.has(runId)) this.queue.add(runId, body.text || this.input.value);
      this.awaitingRun = queued || this.seenRuns.has(runId) ? false : runId;
      this.input.value = "";
      this.composer.reset();
      this.autosize();
      this.transcript.stick = true;
    } catch (err) {
      this.awaitingRun = false;
      this.composerError.textContent = describe(err);
    }
    this.renderComposer();
  }

  async cancel() {
    if (!this.turnRunning || this.cancelling) return;
    this.cancelling = true;
    this.renderComposer();
    try {
      await post(`/api/sessions/${this.sessionId}/cancel`, {});
      announce("Stopping the agent");
    } catch (err) {
      this.cancelling = false;
      this.composerError.textContent = describe(err);
      this.renderComposer();
    }
  }

  // -- permissions -------------------------------------------------------------------

  showPermission(content) {
    if (this.permissions.has(content.requestId)) return;
    const error = h("p.error-text", { role: "alert" });
    const buttons = (content.options || []).map((option) => h(
      `button.option.option-${/^[a-z_]+$/.test(option.kind || "") ? option.kind : "other"}`,
      { type: "button", dataset: { optionId: option.optionId }, onclick: () => this.answer(content, option, card, error) },
      option.name || option.optionId));
    const card = h("section.permission-request", {
      role: "group", "aria-labelledby": `perm-${content.requestId}`, dataset: { requestId: content.requestId },
    },
    h("p.permission-question", { id: `perm-${content.requestId}` },
      h("span.permission-icon", { "aria-hidden": "true" }, "?"),
      h("span", {}, "The agent asks permission to ", h("strong", {}, content.tool || content.toolCallId || "use a tool"), "."),
      h("span.sr-only", {}, " Choose an answer:")),
    h("div.permission-options", {}, buttons), error);
    this.permissions.set(content.requestId, card);
    this.permissionArea.append(card);
    this.transcript.scroll();
    const first = buttons[0];
    if (first && (document.activeElement === document.body || document.activeElement === this.stopButton
      || document.activeElement === this.input)) first.focus({ preventScroll: true });
  }

  hidePermission(requestId) {
    const card = this.permissions.get(requestId);
    if (!card) return;
    const hadFocus = card.contains(document.activeElement);
    card.remove();
    this.permissions.delete(requestId);
    if (hadFocus) {
      this.keepFocus = true;
      (this.stopButton.hidden ? this.input : this.stopButton).focus({ preventScroll: true });
    }
  }

  async answer(content, option, card, error) {
    for (const button of card.querySelectorAll("button")) button.disabled = true;
    error.textContent = "";
    try {
      await post(`/api/sessions/${this.sessionId}/permissions/${content.requestId}`, { optionId: option.optionId });
      this.input.focus({ preventScroll: true });  // answered: back to the prompt box
    } catch (err) {
      if (err.code === "permission_already_decided" || err.code === "permission_not_found") {
        this.hidePermission(content.requestId);
        return;
      }
      error.textContent = describe(err);
      for (const button of card.querySelectorAll("button")) button.disabled = false;
    }
  }

  // -- fork / rewind / complete / delete ---------------------------------------------

  /** Fork and rewind points: a reply keeps its whole turn (up to the end of its run);
   * a prompt goes back to just before it, and rewinding puts its text back in the box. */
  messageActions(message) {
    const isPrompt = message.role === "user";
    const upTo = () => (isPrompt ? Math.max(1, message.seq - 1)
      : this.transcript.runEndSeq(message.runId) ?? message.seq);
    return h("span.msg-actions", {},
      h("button.link-button.fork-action", {
        type: "button",
        title: isPrompt ? "Start a new session with the conversation before this prompt"
          : "Start a new session with the conversation up to this reply",
        onclick: () => this.fork(upTo()),
      }, isPrompt ? "Fork before this" : "Fork from here"),
      h("button.link-button.rewind-action", {
        type: "button",
        title: isPrompt ? "Drop this prompt and everything after it, and edit it again"
          : "Drop everything after this reply",
        onclick: () => this.rewind(upTo(), isPrompt ? message.content?.text : null),
      }, isPrompt ? "Rewind & edit" : "Rewind to here"),
      this.changesUi.turnActions(message));
  }

  decorateFinal(node, message) {
    const head = node.querySelector(".msg-head");
    if (head && !head.querySelector(".msg-actions")) head.append(this.messageActions(message));
  }

  async fork(seq) {
    this.actionError.textContent = "";
    try {
      const session = await post(`/api/sessions/${this.sessionId}/fork`, seq === null ? {} : { uptoSeq: seq });
      this.navigate?.(`#/s/${session.id}`);
    } catch (err) {
      this.actionError.textContent = `Could not fork: ${describe(err)}`;
    }
  }

  async rewind(seq, text = null, restoreFiles = false) {
    const files = restoreFiles ? " The files go back to how they were then." : "";
    if (!window.confirm(`Drop every message after #${seq}? The agent forgets them before the next turn.${files}`)) return;
    this.actionError.textContent = "";
    try {
      await post(`/api/sessions/${this.sessionId}/rewind`, restoreFiles ? { toSeq: seq, restoreFiles } : { toSeq: seq });
      this.live = false;
      this.activeRun = null;
      for (const id of [...this.permissions.keys()]) this.hidePermission(id);
      this.elicitations.clearAll();
      this.clientTools.clearAll();
      this.stream.restart();
      if (text) {
        this.input.value = text;
        this.autosize();
        this.keepFocus = true;
      }
    } catch (err) {
      this.actionError.textContent = `Could not rewind: ${describe(err)}`;
    }
  }

  async complete() {
    this.actionError.textContent = "";
    try {
      this.setSession(await post(`/api/sessions/${this.sessionId}/complete`, {}));
      this.renderComposer();
    } catch (err) {
      this.actionError.textContent = describe(err);
    }
  }

  async remove() {
    if (!window.confirm("Stop the agent and end this session? Its history stays readable.")) return;
    this.actionError.textContent = "";
    try {
      this.setSession(await del(`/api/sessions/${this.sessionId}`));
      this.renderComposer();
    } catch (err) {
      this.actionError.textContent = describe(err);
    }
  }

  toggleRuns() {
    const open = this.runsPanel.hidden;
    this.runsPanel.hidden = !open;
    this.runsButton.setAttribute("aria-expanded", String(open));
    this.root.classList.toggle("runs-open", open);
    if (open) {
      if (!this.runs) this.runs = new RunsPanel(this.runsPanel, this.sessionId, {
        onClose: () => { this.toggleRuns(); this.runsButton.focus(); },
      });
      this.runs.load();
    }
  }
}
