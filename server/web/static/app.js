// @ts-check
// Entry point: hash routing between the home view (#/) and a session (#/s/<id>).
// On a laptop both columns show; on a phone one at a time (body[data-view]).

import { clear, h } from "./dom.js";
import { Sidebar } from "./sessions.js";
import { SessionView } from "./session-view.js";
import { markNav, pageRoute } from "./pages.js";
import { revealRun } from "./errors.js";
import { loadMe } from "./me.js";
import { installShortcuts, revealSeq } from "./glance.js";

const sidebarRoot = document.getElementById("sidebar");
const mainRoot = document.getElementById("main");
let view = null;

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

const sidebar = new Sidebar(sidebarRoot, { navigate });

function welcome() {
  return h("section.welcome", { "aria-labelledby": "welcome-title" },
    h("div.welcome-card", {},
      h("div.welcome-mark", { "aria-hidden": "true" }, "◆"),
      h("h2#welcome-title", {}, "Work with coding agents"),
      h("p", {}, "Pick a repository and start a session. The agent's replies, its plan, the tools it runs and the files it changes stream in here as they happen."),
      h("ul.welcome-tips", {},
        h("li", {}, "Enter sends a prompt, Shift+Enter adds a line, Esc stops the agent."),
        h("li", {}, "When the agent wants to change a file it asks first; every open tab sees the question."),
        h("li", {}, "Close the tab any time: the session keeps running on the server."))));
}

function route() {
  const match = /^#\/s\/([0-9a-fA-F-]{36})(?:\/r\/([0-9a-fA-F-]{36})|\/m\/(\d+))?$/.exec(location.hash);
  const id = match ? match[1].toLowerCase() : null;
  markNav(location.hash);
  if (!id && pageRoute(location.hash, mainRoot, () => { if (view) view.destroy(); view = null; sidebar.setCurrent(null); })) return;
  if (view && view.sessionId === id) {
    if (match[2]) revealRun(mainRoot, match[2].toLowerCase());
    if (match[3]) revealSeq(mainRoot, match[3]);  // a search hit
    return;
  }
  if (view) {
    view.destroy();
    view = null;
  }
  if (id) {
    document.body.dataset.view = "session";
    const root = h("div.session-view", { dataset: { sessionId: id } });
    clear(mainRoot, root);
    view = new SessionView(root, id, {
      navigate,
      onSessionChanged: (session) => sidebar.setCurrent(session.id, session),
    });
    sidebar.setCurrent(id);
    root.querySelector(".session-title")?.focus({ preventScroll: true });
    if (match[2]) revealRun(root, match[2].toLowerCase());
    if (match[3]) revealSeq(root, match[3]);  // a search hit
  } else {
    document.body.dataset.view = "home";
    document.title = "Agent Sessions";
    clear(mainRoot, welcome());
    sidebar.setCurrent(null);
  }
}

window.addEventListener("hashchange", route);
loadMe().catch(() => null).then(() => {
  route();
  sidebar.start();
  installShortcuts({ sidebar, navigate });
});
