// @ts-check
// Who is signed in (GET /api/me): the top bar shows them with "Sign out", admins get the
// Users page, and the rest of the page asks `me` whose a session is.

import { clear, h } from "./dom.js";
import { get, signOut } from "./api.js";

/** @type {{id: string | null, name: string | null, role: string}} */
export const me = { id: null, name: null, role: "viewer" };

/** Read /api/me (signing in first when the server wants it) and show it. */
export async function loadMe() {
  const found = await get("/api/me");
  Object.assign(me, found);
  const who = document.getElementById("whoami");
  if (who) {
    clear(who, me.id
      ? [h("span.whoami-name", {}, me.name || ""), h("span.badge.role-badge", {}, me.role),
        h("button.link-button.sign-out", { type: "button", onclick: () => signOut() }, "Sign out")]
      : []);
  }
  for (const link of document.querySelectorAll(".admin-only")) {
    /** @type {HTMLElement} */ (link).hidden = me.role !== "admin";
  }
  document.body.dataset.role = me.role;
  return me;
}

/** "alice" for a `{id, name}` (a session's owner, a message's `by`), or "" for none. */
export function personName(person) {
  if (!person) return "";
  return person.id === me.id ? `${person.name} (you)` : person.name;
}
