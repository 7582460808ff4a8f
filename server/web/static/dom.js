// @ts-check
// DOM building and formatting helpers. `h` sets text with textContent only: agent text
// reaches the page as HTML solely through markdown.js, which escapes it first.

/** h("button.primary#send", {onclick, type: "button"}, "Send") → an element. */
export function h(spec, attrs = {}, ...children) {
  const [tag, ...rest] = spec.split(/(?=[.#])/);
  const node = document.createElement(tag || "div");
  for (const part of rest) {
    if (part[0] === ".") node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "class") node.className = [node.className, value].filter(Boolean).join(" ");
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function ago(iso, now = Date.now()) {
  if (!iso) return "";
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.round(hours / 24);
  if (days < 30) return `${days} d ago`;
  return new Date(iso).toLocaleDateString();
}

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

export function money(cost) {
  if (!cost || typeof cost.amount !== "number") return null;
  const a = cost.amount;
  const digits = a === 0 || Math.abs(a) >= 0.01 ? 2 : Math.abs(a) >= 0.0001 ? 4 : 6;
  const amount = a.toFixed(digits);
  return cost.currency === "USD" || !cost.currency ? `$${amount}` : `${amount} ${cost.currency}`;
}

export function count(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "–";
}

export function shortId(id) {
  return String(id || "").slice(0, 8);
}

/** JSON for people: strings as they are, everything else pretty-printed. */
export function pretty(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function sessionTitle(session) {
  if (!session) return "";
  return session.title || `${session.repo?.name || "session"} · ${shortId(session.id)}`;
}

/** A live region for short announcements ("Turn finished", errors). */
export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  requestAnimationFrame(() => { region.textContent = text; });
}

/** Scroll to the first node of `root` matching `selector` once it is on screen (the
 * session's messages may still be loading), and mark it `revealed`. */
export function revealWhenShown(root, selector) {
  const show = (node) => {
    node.classList.add("revealed");
    node.scrollIntoView({ block: "center" });
  };
  const found = root.querySelector(selector);
  if (found) return show(found);
  const watcher = new MutationObserver(() => {
    const node = root.querySelector(selector);
    if (node) {
      watcher.disconnect();
      show(node);
    }
  });
  watcher.observe(root, { childList: true, subtree: true });
  setTimeout(() => watcher.disconnect(), 15000);
}
