// @ts-check
// Pieces of the transcript for prompt content and the agent's questions: a user message's
// attachments (images from their attachments URL, files by path) and the line an answered
// elicitation leaves.

import { personName } from "./me.js";
import { h } from "./dom.js";

/** A user message's `attachments` (API.md "Prompt content"), or null when it has none. */
export function attachmentList(attachments) {
  if (!Array.isArray(attachments) || !attachments.length) return null;
  return h("div.msg-attachments", {}, attachments.map((a) => {
    if (a?.type === "image" && typeof a.url === "string") {
      const img = /** @type {HTMLImageElement} */ (h("img", { alt: `Attached image (${a.mimeType})` }));
      loadImage(img, a.url);
      return h("a.attachment-image", { href: a.url, target: "_blank", rel: "noopener", title: `${a.mimeType}, ${a.size} bytes` }, img);
    }
    if (a?.type === "file") {
      const where = a.line ? `:${a.line}` : "";
      return h("span.attachment-file", { title: a.embedded ? "Sent with its contents" : "Sent as a link" }, `@${a.path}${where}`);
    }
    return null;
  }));
}

/** The sign-in cookie goes with the image's request (same origin). */
function loadImage(img, url) {
  img.src = url;
  img.addEventListener("error", () => { img.alt = "Attached image (could not be loaded)"; }, { once: true });
}

const ACTIONS = { accept: "answered", decline: "declined", cancel: "cancelled" };

/** The note an answered elicitation leaves in the transcript. */
export function elicitationNote(content) {
  const action = content.outcome?.action;
  const answered = action === "accept";
  return h(`div.note.permission-note.elicitation-note${answered ? ".allowed" : ".rejected"}`, {},
    h("span.note-mark", { "aria-hidden": "true" }, answered ? "✓" : "✕"),
    `Question “${content.message || "input"}”: `, h("strong", {}, ACTIONS[action] || String(action)),
    content.by ? h("span.answered-by", {}, ` by ${personName(content.by)}`) : null);
}
