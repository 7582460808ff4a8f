// @ts-check
// The Users page (#/users, admins): add a user (their token is shown once, here and
// nowhere else), make another token for someone, revoke a token (in force at once: their
// open pages are signed out), remove a user (their sessions stay).

import { del, describe, get, post } from "./api.js";
import { ago, clear, h, when } from "./dom.js";
import { me } from "./me.js";

const ROLES = ["member", "viewer", "admin"];

/** The secret, shown once with a copy button; never stored by the page. */
function shownOnce(label, token) {
  const field = h("input.token-once", { type: "text", readonly: true, value: token, "aria-label": label });
  return h("div.card.token-shown", { role: "status" },
    h("p", {}, h("strong", {}, label), " — copy it now: it is not shown again."),
    h("div.inline-form", {}, field,
      h("button.secondary", { type: "button", onclick: () => { field.select(); navigator.clipboard?.writeText(token).catch(() => null); } }, "Copy")));
}

export class UsersPage {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.nameInput = h("input#user-name", { type: "text", required: true, autocomplete: "off", maxlength: 255 });
    this.roleSelect = h("select#user-role", {}, ROLES.map((r) => h("option", { value: r }, r)));
    this.error = h("p.form-error", { role: "alert" });
    this.shown = h("div.token-slot");
    this.list = h("ul.user-list", { "aria-label": "Users" });
    this.status = h("p.muted", { role: "status" });
    const form = h("form.card.add-user", { onsubmit: (e) => { e.preventDefault(); this.add(); } },
      h("h3.section-title", {}, "Add a user"),
      h("div.field-row", {},
        h("div.field", {}, h("label", { for: "user-name" }, "Name"), this.nameInput),
        h("div.field", {}, h("label", { for: "user-role" }, "Role"), this.roleSelect)),
      h("div.form-actions", {}, h("button.primary", { type: "submit" }, "Add user")), this.error);
    clear(root, h("div.page-head", {}, h("h2", { tabindex: -1 }, "Users"),
      h("p.muted", {}, "Admins do everything; members start sessions and drive their own; viewers read.")),
    form, this.shown, this.status, this.list);
  }

  async start() {
    if (me.role !== "admin") {
      this.status.textContent = "Only admins manage users.";
      return;
    }
    await this.refresh();
  }

  async refresh() {
    try {
      const { users } = await get("/api/users");
      this.status.textContent = users.length ? "" : "No users yet: the server is open to anyone who can reach it.";
      clear(this.list, await Promise.all(users.map((u) => this.item(u))));
    } catch (err) {
      this.status.textContent = `Could not load the users: ${describe(err)}`;
    }
  }

  async add() {
    this.error.textContent = "";
    try {
      const made = await post("/api/users", { name: this.nameInput.value.trim(), role: this.roleSelect.value });
      this.nameInput.value = "";
      clear(this.shown, shownOnce(`${made.user.name}'s token`, made.token));
      await this.refresh();
    } catch (err) {
      this.error.textContent = describe(err);
    }
  }

  async item(user) {
    const { tokens } = await get(`/api/users/${user.id}/tokens`).catch(() => ({ tokens: [] }));
    const rows = tokens.map((t) => h("li.token-row", { dataset: { tokenId: t.id } },
      h("span.token-name", {}, t.name || "token"),
      h("span.muted", { title: when(t.createdAt) }, ` made ${ago(t.createdAt)}`),
      t.expiresAt ? h("span.muted", {}, `, expires ${when(t.expiresAt)}`) : null,
      h("span.muted", {}, t.lastUsedAt ? `, used ${ago(t.lastUsedAt)}` : ", never used"),
      h("button.secondary.revoke-token", { type: "button", onclick: () => this.revoke(t) }, "Revoke")));
    return h("li.card.user-item", { dataset: { userId: user.id } },
      h("div.user-line", {}, h("strong.user-name", {}, user.name), h("span.badge.role-badge", {}, user.role),
        h("span.muted", { title: when(user.createdAt) }, ` added ${ago(user.createdAt)}`)),
      h("ul.token-list", { "aria-label": `${user.name}'s tokens` }, rows),
      h("div.form-actions", {},
        h("button.secondary.new-token", { type: "button", onclick: () => this.newToken(user) }, "New token"),
        user.id === me.id ? null
          : h("button.danger.remove-user", { type: "button", onclick: () => this.remove(user) }, "Remove user")));
  }

  async newToken(user) {
    try {
      const made = await post(`/api/users/${user.id}/tokens`, {});
      clear(this.shown, shownOnce(`A new token for ${user.name}`, made.token));
      await this.refresh();
    } catch (err) {
      this.status.textContent = describe(err);
    }
  }

  async revoke(token) {
    if (!confirm(`Revoke “${token.name || "token"}”? Pages signed in with it are signed out at once.`)) return;
    try {
      await del(`/api/tokens/${token.id}`);
      await this.refresh();
    } catch (err) {
      this.status.textContent = describe(err);
    }
  }

  async remove(user) {
    if (!confirm(`Remove ${user.name}? Their sessions stay; their tokens stop working at once.`)) return;
    try {
      await del(`/api/users/${user.id}`);
      await this.refresh();
    } catch (err) {
      this.status.textContent = describe(err);
    }
  }
}
