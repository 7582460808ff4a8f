// node:test for server/web/static/markdown.js (pure): the markup it makes, and that agent
// text can never inject markup of its own.
import assert from "node:assert/strict";
import { test } from "node:test";

import { escapeHtml, renderMarkdown } from "../../server/web/static/markdown.js";

const CASES = [
  ["# Title\n\nSome **bold**, *it* and `code`",
    "<h3>Title</h3><p>Some <strong>bold</strong>, <em>it</em> and <code>code</code></p>"],
  ["- a\n- b\n\n1. one\n2. two", "<ul><li>a</li><li>b</li></ul><ol><li>one</li><li>two</li></ol>"],
  ["> quote", "<blockquote><p>quote</p></blockquote>"],
  ["```py\nprint('<b>')\n```",
    '<pre class="code"><span class="code-lang">py</span><code class="language-py">print(&#39;&lt;b&gt;&#39;)</code></pre>'],
  // a fence still open while the reply streams is already a code block
  ["```js\nstill streaming",
    '<pre class="code"><span class="code-lang">js</span><code class="language-js">still streaming</code></pre>'],
  ["see https://example.com/x.",
    '<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>'],
];

for (const [source, html] of CASES) {
  test(`renders ${JSON.stringify(source)}`, () => {
    assert.equal(renderMarkdown(source), html);
  });
}

test("agent text cannot inject tags or attributes", () => {
  const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror="y">');
  assert.ok(!html.includes("<script"), html);
  assert.ok(!html.includes("<img"), html);
  assert.ok(html.includes("&lt;script&gt;"), html);
});

test("links only for http(s) URLs, their query escaped", () => {
  const html = renderMarkdown("[x](javascript:alert(1)) [y](https://e.com/a?b=1&c=2)");
  assert.ok(!html.includes('href="javascript'), html);
  assert.ok(html.includes('<a href="https://e.com/a?b=1&amp;c=2"'), html);
});

test("escapeHtml escapes the five characters", () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
});

test("null and CRLF input", () => {
  assert.equal(renderMarkdown(null), "");
  assert.equal(renderMarkdown("a\r\nb"), renderMarkdown("a\nb"));
});
