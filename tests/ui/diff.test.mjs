// node:test for the pure part of server/web/static/diff.js: line diffs by LCS.
import assert from "node:assert/strict";
import { test } from "node:test";

import { diffLines } from "../../server/web/static/diff.js";

const ops = (lines) => lines.map((l) => `${l.op}${l.text}`);

test("unchanged, removed and added lines in order", () => {
  assert.deepEqual(ops(diffLines("a\nb\nc", "a\nB\nc")), [" a", "-b", "+B", " c"]);
});

test("a new file is all added; a deleted one all removed", () => {
  assert.deepEqual(ops(diffLines(null, "x\ny")), ["+x", "+y"]);
  assert.deepEqual(ops(diffLines("x\ny", "")), ["-x", "-y"]);
});

test("the longest common subsequence is kept", () => {
  const lines = diffLines("1\n2\n3\n4\n5", "0\n1\n3\n5\n6");
  assert.deepEqual(lines.filter((l) => l.op === " ").map((l) => l.text), ["1", "3", "5"]);
  assert.deepEqual(ops(lines), ["+0", " 1", "-2", " 3", "-4", " 5", "+6"]);
});

test("past the table limit: removed then added, nothing lost", () => {
  const old = Array.from({ length: 3000 }, (_, i) => `o${i}`).join("\n");
  const now = Array.from({ length: 2000 }, (_, i) => `n${i}`).join("\n");
  const lines = diffLines(old, now);
  assert.equal(lines.length, 5000);
  assert.equal(lines[0].op, "-");
  assert.equal(lines[4999].op, "+");
});
