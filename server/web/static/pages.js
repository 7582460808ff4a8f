// @ts-check
// The pages beside sessions: #/usage and #/errors (issue 15). `pageRoute` renders the one
// the hash names into the main column and says whether it did.

import { clear, h } from "./dom.js";
import { ErrorsPage } from "./errors.js";
import { UsagePage } from "./usage.js";

const PAGES = {
  "#/usage": { title: "Usage", make: (root) => new UsagePage(root) },
  "#/errors": { title: "Errors", make: (root) => new ErrorsPage(root) },
};

/**
 * @param {string} hash
 * @param {HTMLElement} main
 * @param {() => void} leave  called first: closes the session view, if one is open
 */
export function pageRoute(hash, main, leave) {
  const page = PAGES[hash];
  markNav(hash);
  if (!page) return false;
  leave();
  document.body.dataset.view = "page";
  document.title = `${page.title} · Agent Sessions`;
  const root = h("div.page-view");
  clear(main, root);
  page.make(root).start();
  root.querySelector("h2")?.focus({ preventScroll: true });
  return true;
}

/** The top navigation marks the page the hash names, and nothing on any other view (a
 * session opened from the Errors page is not the Errors page). */
export function markNav(hash) {
  for (const link of document.querySelectorAll(".topnav a")) {
    if (link.getAttribute("href") === hash) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}
