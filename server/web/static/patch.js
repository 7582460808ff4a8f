// @ts-check
// A unified patch (git diff) split per file, and one file's hunks drawn unified or side by
// side with syntax-aware highlighting. Lines are appended in batches, each a short task
// of its own (a macrotask, so input is handled in between): a 5 000-line patch never
// blocks the page; a newer render cancels an older one.

import { h } from "./dom.js";

const BATCH = 250; // lines per task

/** @typedef {{op: " " | "+" | "-" | "@" | "\\", text: string, oldNo: number | null, newNo: number | null, hunk?: number}} PatchLine */
/** @typedef {{hunkAction?: (index: number) => Node | null, commentable?: boolean}} RenderOptions */

/** {path → lines} from a unified patch: the `diff --git` headers split it, the `+++ b/…`
 * (or `--- a/…` for a deletion) name the file, hunks carry their line numbers. */
export function splitPatch(patch) {
  /** @type {Map<string, PatchLine[]>} */
  const files = new Map();
  let lines = null;
  let oldPath = null;
  let oldNo = 0;
  let newNo = 0;
  let inHunks = false; // past the file's header: "--- x" is then a removed "-- x"
  let hunks = 0; // the file's hunks so far: API.md numbers them from 0 in this order
  for (const raw of String(patch || "").split("\n")) {
    if (raw.startsWith("diff --git ")) {
      lines = [];
      inHunks = false;
      hunks = 0;
      const match = / b\/(.*)$/.exec(raw);
      oldPath = null;
      if (match) files.set(match[1], lines);
      continue;
    }
    if (!lines) continue;
    if (!inHunks && raw.startsWith("--- ")) { oldPath = raw.slice(4).replace(/^a\//, ""); continue; }
    if (!inHunks && raw.startsWith("+++ ")) {
      const path = raw.slice(4) === "/dev/null" ? oldPath : raw.slice(4).replace(/^b\//, "");
      for (const [key, value] of files) if (value === lines && key !== path) files.delete(key);
      if (path) files.set(path, lines);
      continue;
    }
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(raw);
    if (hunk) {
      inHunks = true;
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      lines.push({ op: "@", text: raw, oldNo: null, newNo: null, hunk: hunks++ });
    } else if (raw.startsWith("+")) {
      lines.push({ op: "+", text: raw.slice(1), oldNo: null, newNo: newNo++ });
    } else if (raw.startsWith("-")) {
      lines.push({ op: "-", text: raw.slice(1), oldNo: oldNo++, newNo: null });
    } else if (raw.startsWith(" ")) {
      lines.push({ op: " ", text: raw.slice(1), oldNo: oldNo++, newNo: newNo++ });
    } else if (raw.startsWith("\\")) {
      lines.push({ op: "\\", text: raw, oldNo: null, newNo: null });
    }
  }
  return files;
}

// -- highlighting ---------------------------------------------------------------------

const KEYWORDS = {
  py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield self",
  js: "async await break case catch class const continue default delete do else export extends false finally for function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield",
  go: "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false",
  rs: "as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while",
  c: "auto break case char const continue default do double else enum extern float for goto if int long register return short signed sizeof static struct switch typedef union unsigned void volatile while class public private protected new delete this true false null",
  sh: "if then else elif fi for in do done while until case esac function return local export set",
};
const LANGUAGE = {
  py: "py", js: "js", mjs: "js", cjs: "js", ts: "js", tsx: "js", jsx: "js", json: "js",
  go: "go", rs: "rs", c: "c", h: "c", cc: "c", cpp: "c", hpp: "c", java: "c", cs: "c", kt: "c",
  sh: "sh", bash: "sh", zsh: "sh",
};
const HASH_COMMENTS = new Set(["py", "sh"]);
const sets = new Map(Object.entries(KEYWORDS).map(([k, v]) => [k, new Set(v.split(" "))]));

/** The language key of a path (null: shown plain). */
export function languageOf(path) {
  const ext = String(path).split(".").pop()?.toLowerCase() || "";
  return LANGUAGE[ext] || null;
}

const TOKEN = /(\/\/.*$|#.*$|"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?|\b\d[\d_.xXa-fA-F]*\b|\b[A-Za-z_][\w]*\b)/g;

/** A line as text and <span class="tok-…"> nodes (never HTML from the patch). */
export function highlight(text, language) {
  if (!language || text.length > 2000) return [text];
  const keywords = sets.get(language);
  const out = [];
  let last = 0;
  for (const match of text.matchAll(TOKEN)) {
    const token = match[0];
    const start = match.index || 0;
    let kind = null;
    if (token.startsWith("//")) kind = language === "py" || language === "sh" ? null : "comment";
    else if (token.startsWith("#")) kind = HASH_COMMENTS.has(language) ? "comment" : null;
    else if (/^["'`]/.test(token)) kind = "string";
    else if (/^\d/.test(token)) kind = "number";
    else if (keywords?.has(token)) kind = "keyword";
    if (!kind) continue;
    if (start > last) out.push(text.slice(last, start));
    out.push(h(`span.tok-${kind}`, {}, token));
    last = start + token.length;
    if (kind === "comment") break;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// -- rendering --------------------------------------------------------------------------

/** A line number; with comments on, a button that opens a comment on that line. */
function cell(no, side, options) {
  if (no === null || !options.commentable) {
    return h("span.ln", { "aria-hidden": "true" }, no === null ? "" : String(no));
  }
  return h("button.ln.ln-comment", {
    type: "button", dataset: { line: String(no), side },
    "aria-label": `Comment on ${side === "old" ? "old " : ""}line ${no}`, title: "Comment on this line",
  }, String(no));
}

function hunkRow(line, options) {
  const action = line.op === "@" && line.hunk !== undefined ? options.hunkAction?.(line.hunk) : null;
  return h("div.pl.hunk", { dataset: line.hunk !== undefined ? { hunk: String(line.hunk) } : {} },
    h("div.hunk-bar", {}, h("span.hunk-text", {}, line.text), action));
}

function unifiedRow(line, language, options) {
  if (line.op === "@" || line.op === "\\") return hunkRow(line, options);
  const cls = line.op === "+" ? ".add" : line.op === "-" ? ".del" : "";
  const at = {};
  if (line.op !== "+" && line.oldNo !== null) at.old = String(line.oldNo);
  if (line.op !== "-" && line.newNo !== null) at.new = String(line.newNo);
  return h(`div.pl${cls}`, { dataset: at }, cell(line.op === "+" ? null : line.oldNo, "old", options),
    cell(line.op === "-" ? null : line.newNo, "new", options),
    h("span.sign", { "aria-hidden": "true" }, line.op),
    line.op === " " ? null : h("span.sr-only", {}, line.op === "+" ? "added: " : "removed: "),
    h("span.code", {}, highlight(line.text, language)));
}

function side(line, language, op, options) {
  if (!line) return [h("span.ln.empty"), h("span.code.empty")];
  const no = op === "-" ? line.oldNo : line.newNo;
  const cls = line.op === " " ? "" : op === "-" ? ".del" : ".add";
  return [cell(no, op === "-" ? "old" : "new", options), h(`span.code${cls}`, {}, highlight(line.text, language))];
}

/** Side-by-side rows: context on both sides; a run of removals paired with the additions
 * that follow it, row by row. */
export function pairRows(lines) {
  const rows = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.op === "-" || line.op === "+") {
      const removed = [];
      const added = [];
      while (i < lines.length && lines[i].op === "-") removed.push(lines[i++]);
      while (i < lines.length && lines[i].op === "+") added.push(lines[i++]);
      for (let k = 0; k < Math.max(removed.length, added.length); k += 1) {
        rows.push({ left: removed[k] || null, right: added[k] || null, hunk: null });
      }
    } else {
      rows.push(line.op === " " ? { left: line, right: line, hunk: null } : { left: null, right: null, hunk: line });
      i += 1;
    }
  }
  return rows;
}

function splitRow(row, language, options) {
  if (row.hunk) return hunkRow(row.hunk, options);
  const at = {};
  if (row.left) at.old = String(row.left.oldNo);
  if (row.right) at.new = String(row.right.newNo);
  return h("div.pl.split", { dataset: at },
    ...side(row.left, language, "-", options), ...side(row.right, language, "+", options));
}

/** The widest line, in characters (tabs as 4): the code columns are at least that wide,
 * so a long line scrolls sideways instead of being cut. */
export function widestLine(lines) {
  let widest = 0;
  for (const line of lines) {
    if (line.op === "@" || line.op === "\\") continue;
    const text = line.text.includes("\t") ? line.text.replace(/\t/g, "    ") : line.text;
    if (text.length > widest) widest = text.length;
  }
  return widest;
}

/** Draw a file's lines into `target` in batches; returns a function that stops it.
 * `onDone` runs once every line is in. `options`: a hunk header's action (the review's
 * "Revert hunk"), line numbers as comment buttons.
 * @param {HTMLElement} target
 * @param {string} path
 * @param {PatchLine[]} lines
 * @param {string} mode
 * @param {() => void} [onDone]
 * @param {RenderOptions} [options]
 */
export function renderLines(target, path, lines, mode, onDone = () => {}, options = {}) {
  const language = languageOf(path);
  const rows = mode === "split" ? pairRows(lines) : lines;
  const draw = mode === "split" ? (r) => splitRow(r, language, options) : (r) => unifiedRow(r, language, options);
  target.replaceChildren();
  target.classList.toggle("split-view", mode === "split");
  target.style.setProperty("--code-w", `${widestLine(lines) + 2}ch`);
  let at = 0;
  let timer = 0;
  const step = () => {
    const end = Math.min(rows.length, at + BATCH);
    // One block per batch: off-screen blocks skip style, layout and paint
    // (content-visibility), so each append costs its own lines, not the whole file's.
    const chunk = h("div.pchunk");
    for (; at < end; at += 1) chunk.append(draw(rows[at]));
    target.append(chunk);
    if (at < rows.length) timer = window.setTimeout(step, 0);
    else onDone();
  };
  step();
  return () => clearTimeout(timer);
}
