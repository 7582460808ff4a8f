// node:test for the pure part of server/web/static/patch.js: a git patch split per file
// with line numbers, and the side-by-side pairing.
import assert from "node:assert/strict";
import { test } from "node:test";

import { languageOf, pairRows, splitPatch } from "../../server/web/static/patch.js";

const PATCH = [
  "diff --git a/app.py b/app.py",
  "index 1111111..2222222 100644",
  "--- a/app.py",
  "+++ b/app.py",
  "@@ -1,3 +1,3 @@",
  " def main():",
  "--- a removed line that looks like a header",
  "+++ an added line that looks like a header",
  " end",
  "diff --git a/old.txt b/new.txt",
  "similarity index 90%",
  "rename from old.txt",
  "rename to new.txt",
  "--- a/old.txt",
  "+++ b/new.txt",
  "@@ -4,2 +4,2 @@ context",
  "-x",
  "+y",
  "diff --git a/gone.txt b/gone.txt",
  "deleted file mode 100644",
  "--- a/gone.txt",
  "+++ /dev/null",
  "@@ -1 +0,0 @@",
  "-bye",
  "diff --git a/logo.png b/logo.png",
  "Binary files a/logo.png and b/logo.png differ",
  "",
].join("\n");

test("one entry per file, keyed by its new path (the old one when deleted)", () => {
  assert.deepEqual([...splitPatch(PATCH).keys()], ["app.py", "new.txt", "gone.txt", "logo.png"]);
});

test("header-like lines inside a hunk are content, with their line numbers", () => {
  const lines = splitPatch(PATCH).get("app.py");
  assert.deepEqual(lines.map((l) => [l.op, l.text, l.oldNo, l.newNo]), [
    ["@", "@@ -1,3 +1,3 @@", null, null],
    [" ", "def main():", 1, 1],
    ["-", "-- a removed line that looks like a header", 2, null],
    ["+", "++ an added line that looks like a header", null, 2],
    [" ", "end", 3, 3],
  ]);
});

test("hunks start at their stated line numbers; binary files have no lines", () => {
  const renamed = splitPatch(PATCH).get("new.txt");
  assert.deepEqual(renamed.slice(1).map((l) => [l.op, l.oldNo, l.newNo]), [["-", 4, null], ["+", null, 4]]);
  assert.deepEqual(splitPatch(PATCH).get("logo.png"), []);
});

test("side by side: removals paired with the additions after them, context on both sides", () => {
  const lines = [
    { op: " ", text: "a", oldNo: 1, newNo: 1 },
    { op: "-", text: "b", oldNo: 2, newNo: null },
    { op: "-", text: "c", oldNo: 3, newNo: null },
    { op: "+", text: "B", oldNo: null, newNo: 2 },
    { op: " ", text: "d", oldNo: 4, newNo: 3 },
  ];
  const rows = pairRows(lines).map((r) => [r.left?.text ?? null, r.right?.text ?? null]);
  assert.deepEqual(rows, [["a", "a"], ["b", "B"], ["c", null], ["d", "d"]]);
});

test("the language of a path picks the highlighter", () => {
  assert.equal(languageOf("src/app.py"), "py");
  assert.equal(languageOf("web/app.TS"), "js");
  assert.equal(languageOf("README"), null);
});
