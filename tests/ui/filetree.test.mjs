// node:test for server/web/static/filetree.js: the review's changed files as a tree.
import assert from "node:assert/strict";
import { test } from "node:test";

import { buildTree } from "../../server/web/static/filetree.js";

const names = (dir) => ({
  name: dir.name,
  dirs: dir.dirs.map(names),
  files: dir.files.map((f) => f.name),
});

test("directories first, sorted, files under their directory", () => {
  const tree = buildTree(["b.txt", "src/z.py", "src/a.py", "a.txt", "docs/x.md"], (p) => p);
  assert.deepEqual(names(tree), {
    name: "",
    dirs: [
      { name: "docs", dirs: [], files: ["x.md"] },
      { name: "src", dirs: [], files: ["a.py", "z.py"] },
    ],
    files: ["a.txt", "b.txt"],
  });
});

test("a directory holding only one directory is folded into one row", () => {
  const tree = buildTree(["server/web/static/app.js", "server/web/static/api.js"], (p) => p);
  assert.equal(tree.dirs.length, 1);
  assert.equal(tree.dirs[0].name, "server/web/static");
  assert.equal(tree.dirs[0].path, "server/web/static");
  assert.deepEqual(tree.dirs[0].files.map((f) => f.item), ["server/web/static/api.js", "server/web/static/app.js"]);
});

test("items keep their own data", () => {
  const tree = buildTree([{ path: "a/b.txt", n: 1 }], (f) => f.path);
  assert.deepEqual(tree.dirs[0].files[0].item, { path: "a/b.txt", n: 1 });
});
