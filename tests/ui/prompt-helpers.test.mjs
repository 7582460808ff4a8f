// Unit tests of the UI's pure helpers (server/web/static/prompt-helpers.js), run by
// `node --test tests/ui` (tests/ui/test_node_units.py runs them under pytest).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  activeToken, formContent, fuzzyFilter, fuzzyScore, promptContent, schemaFields,
} from "../../server/web/static/prompt-helpers.js";

test("fuzzyScore matches subsequences case-insensitively and refuses the rest", () => {
  assert.notEqual(fuzzyScore("wfac", "src/Widget_Factory.py"), null);
  assert.equal(fuzzyScore("xyz", "src/widget_factory.py"), null);
  assert.equal(fuzzyScore("ab", "ba"), null);
  assert.equal(fuzzyScore("", "anything"), 0);
});

test("fuzzyFilter ranks consecutive letters and word starts first, ties keep order", () => {
  const files = ["docs/readme_old.txt", "README.md", "src/reader.py", "lib/r/e/a/d.js"];
  assert.deepEqual(fuzzyFilter("read", files, (f) => f), ["README.md", "src/reader.py", "docs/readme_old.txt", "lib/r/e/a/d.js"]);
  assert.deepEqual(fuzzyFilter("zz", files, (f) => f), []);
  const commands = [{ name: "help" }, { name: "files" }];
  assert.deepEqual(fuzzyFilter("", commands, (c) => c.name), commands);
  assert.deepEqual(fuzzyFilter("f", commands, (c) => c.name), [{ name: "files" }]);
});

test("activeToken: / only at the start, @ at a word start, nothing after a space", () => {
  assert.deepEqual(activeToken("/he", 3), { trigger: "/", query: "he", start: 0, end: 3 });
  assert.equal(activeToken("/help me", 8), null);
  assert.equal(activeToken("say /help", 9), null);
  assert.deepEqual(activeToken("look at @src/w", 14), { trigger: "@", query: "src/w", start: 8, end: 14 });
  assert.deepEqual(activeToken("@", 1), { trigger: "@", query: "", start: 0, end: 1 });
  assert.equal(activeToken("mail me@example.com", 19), null);
  // the caret decides, not the end of the text
  assert.deepEqual(activeToken("@a and more", 2), { trigger: "@", query: "a", start: 0, end: 2 });
});

test("promptContent: text, then images, then the picked files still mentioned", () => {
  const images = [{ mimeType: "image/png", data: "AAAA" }];
  assert.deepEqual(promptContent("see @a.py", images, ["a.py", "gone.py"]), [
    { type: "text", text: "see @a.py" },
    { type: "image", mimeType: "image/png", data: "AAAA" },
    { type: "file", path: "a.py" },
  ]);
  assert.deepEqual(promptContent("  ", images, []), [{ type: "image", mimeType: "image/png", data: "AAAA" }]);
});

const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", title: "Branch name", description: "Where to write" },
    count: { type: "integer", minimum: 1 },
    ratio: { type: "number" },
    force: { type: "boolean", default: true },
    color: { type: "string", enum: ["r", "g"], enumNames: ["Red", "Green"] },
    size: { type: "string", oneOf: [{ const: "s", title: "Small" }, { const: "l", title: "Large" }] },
  },
  required: ["name", "color"],
};

test("schemaFields maps each property kind, labels, required and options", () => {
  const fields = schemaFields(SCHEMA);
  assert.deepEqual(fields.map((f) => [f.name, f.kind, f.required]), [
    ["name", "string", true], ["count", "integer", false], ["ratio", "number", false],
    ["force", "boolean", false], ["color", "enum", true], ["size", "enum", false],
  ]);
  assert.equal(fields[0].label, "Branch name");
  assert.equal(fields[0].description, "Where to write");
  assert.equal(fields[1].label, "count");
  assert.equal(fields[1].minimum, 1);
  assert.equal(fields[3].defaultValue, true);
  assert.deepEqual(fields[4].options, [{ value: "r", label: "Red" }, { value: "g", label: "Green" }]);
  assert.deepEqual(fields[5].options, [{ value: "s", label: "Small" }, { value: "l", label: "Large" }]);
  assert.deepEqual(schemaFields(null), []);
});

test("formContent converts values, leaves out empty optional ones and names the problems", () => {
  const fields = schemaFields(SCHEMA);
  assert.deepEqual(
    formContent(fields, { name: "fix", count: "3", ratio: "0.5", force: false, color: "g", size: "" }),
    { content: { name: "fix", count: 3, ratio: 0.5, force: false, color: "g" }, errors: [] });
  const bad = formContent(fields, { name: " ", count: "2.5", ratio: "x", force: true, color: "blue", size: "" });
  assert.deepEqual(bad.errors, [
    "Branch name is required.", "count must be a whole number.", "ratio must be a number.",
    "color: choose one of the offered values.",
  ]);
});
