// @ts-check
// Line diffs for tool calls' `diff` content blocks ({path, oldText, newText}).

import { h } from "./dom.js";

const MAX_CELLS = 4_000_000; // LCS table size limit; past it, show removed then added

/** [{op: " " | "-" | "+", text}] for two texts, by longest common subsequence of lines. */
export function diffLines(oldText, newText) {
  const a = oldText ? String(oldText).split("\n") : [];
  const b = newText ? String(newText).split("\n") : [];
  if (a.length * b.length > MAX_CELLS) {
    return [...a.map((text) => ({ op: "-", text })), ...b.map((text) => ({ op: "+", text }))];
  }
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: " ", text: a[i] });
      i += 1;
      j += 1;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: "-", text: a[i] });
      i += 1;
    } else {
      out.push({ op: "+", text: b[j] });
      j += 1;
    }
  }
  while (i < n) out.push({ op: "-", text: a[i++] });
  while (j < m) out.push({ op: "+", text: b[j++] });
  return out;
}

/** A diff block as a <figure> with its path and coloured lines; with `onOpen` the path is
 * a button that opens the file. `notApplied`: the write was rejected or failed. */
export function renderDiff(block, onOpen = null, notApplied = false) {
  const lines = diffLines(block.oldText, block.newText);
  const added = lines.filter((l) => l.op === "+").length;
  const removed = lines.filter((l) => l.op === "-").length;
  const isNew = block.oldText === null || block.oldText === undefined;
  return h(`figure.diff${notApplied ? ".not-applied" : ""}`, {},
    h("figcaption", {},
      onOpen && block.path
        ? h("button.link-button.diff-path.path-link", { type: "button", title: "Open this file", onclick: () => onOpen() }, block.path)
        : h("span.diff-path", {}, block.path || "(file)"),
      notApplied ? h("span.not-applied-label", {}, "not applied") : null,
      h("span.diff-stat", {},
        isNew ? h("span.diff-new", {}, "new file ") : null,
        h("span.add", {}, `+${added}`), " ", h("span.del", {}, `−${removed}`))),
    h("pre.diff-lines", {}, lines.map((line) =>
      h(`span.line${line.op === "+" ? ".add" : line.op === "-" ? ".del" : ""}`, {},
        h("span.sign", { "aria-hidden": "true" }, line.op),
        line.op === " " ? null : h("span.sr-only", {}, line.op === "+" ? "added: " : "removed: "),
        line.text || " "))),
  );
}
