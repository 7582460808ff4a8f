// node:test for server/web/static/toolgroups.js: the Usage page's tool groups.
import assert from "node:assert/strict";
import { test } from "node:test";

import { groupTools, toolGroup } from "../../server/web/static/toolgroups.js";

const row = (toolName, calls, median, p95, failures = 0) => ({ toolName, calls, failures, durationMs: { median, p95 } });

test("a title's arguments are taken out; its verb names the kind", () => {
  assert.deepEqual(toolGroup("Read README.md"), { key: "read:read", label: "Read", kind: "read" });
  assert.deepEqual(toolGroup("Write src/parser.py"), { key: "edit:write", label: "Write", kind: "edit" });
  assert.deepEqual(toolGroup("Run npm test -- --watch"), { key: "execute:run", label: "Run", kind: "execute" });
  assert.deepEqual(toolGroup("mcp__client-tools__preview"), { key: "other:mcp__client-tools__preview", label: "mcp__client-tools__preview", kind: "other" });
  assert.equal(toolGroup(null).label, "(unnamed)");
});

test("rows of one group add up; p95 is the slowest member's, the median weighted", () => {
  const groups = groupTools([
    row("Read README.md", 3, 10, 20),
    row("Read parser.py", 1, 50, 90, 1),
    row("Write parser.py", 2, 30, 40),
  ]);
  const read = groups.find((g) => g.label === "Read");
  assert.deepEqual(read, { label: "Read", kind: "read", calls: 4, failures: 1, titles: 2, durationMs: { median: 20, p95: 90 } });
  assert.equal(groups.length, 2);
});

test("untimed rows keep a null duration", () => {
  assert.deepEqual(groupTools([row("Fetch x", 1, null, null)])[0].durationMs, { median: null, p95: null });
});
