// @ts-check
// A small, safe Markdown renderer for agent text.
//
// Safety rule: the input is HTML-escaped before any markup is produced, so agent text can
// never inject tags or attributes; the only tags in the output are the ones made here.
// Links are made only for http(s) URLs. Supported: fenced code blocks (also an unclosed
// fence while a reply is still streaming), inline code, **bold**, *italic* / _italic_,
// ~~strike~~, headings, bullet and numbered lists, block quotes, horizontal rules,
// [text](http…) links and bare http(s) URLs.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;

/** Markdown source → an HTML string that is safe to assign to innerHTML. */
export function renderMarkdown(source) {
  const text = String(source ?? "").replace(/[\u0000\u0001]/g, "").replace(/\r\n?/g, "\n");
  const out = [];
  const lines = text.split("\n");
  let prose = [];
  let i = 0;
  const flushProse = () => {
    if (prose.length) out.push(renderBlocks(prose));
    prose = [];
  };
  while (i < lines.length) {
    const open = FENCE.exec(lines[i]);
    if (!open) {
      prose.push(lines[i]);
      i += 1;
      continue;
    }
    flushProse();
    const marker = open[1];
    const lang = open[2];
    const body = [];
    i += 1;
    while (i < lines.length && !isClosingFence(lines[i], marker)) {
      body.push(lines[i]);
      i += 1;
    }
    i += 1; // the closing fence (or past the end while still streaming)
    const cls = lang ? ` class="language-${escapeHtml(lang)}"` : "";
    const label = lang ? `<span class="code-lang">${escapeHtml(lang)}</span>` : "";
    out.push(`<pre class="code">${label}<code${cls}>${escapeHtml(body.join("\n"))}</code></pre>`);
  }
  flushProse();
  return out.join("");
}

function isClosingFence(line, marker) {
  const trimmed = line.trim();
  return trimmed.length >= marker.length && trimmed[0] === marker[0] && /^(`+|~+)$/.test(trimmed);
}

const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    let m;
    if ((m = HEADING.exec(line))) {
      const level = Math.min(m[1].length + 2, 6); // h3..h6: the page owns h1/h2
      out.push(`<h${level}>${renderInline(m[2])}</h${level}>`);
      i += 1;
    } else if (RULE.test(line)) {
      out.push("<hr>");
      i += 1;
    } else if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        quoted.push(m[1]);
        i += 1;
      }
      out.push(`<blockquote>${renderBlocks(quoted)}</blockquote>`);
    } else if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = !BULLET.test(line);
      const items = [];
      let start = null;
      while (i < lines.length) {
        const item = ordered ? ORDERED.exec(lines[i]) : BULLET.exec(lines[i]);
        if (item) {
          if (ordered && start === null) start = Number(item[2]);
          items.push([ordered ? item[3] : item[2]]);
          i += 1;
        } else if (items.length && /^\s{2,}\S/.test(lines[i])) {
          items[items.length - 1].push(lines[i].trim()); // a continuation line
          i += 1;
        } else {
          break;
        }
      }
      const tag = ordered ? "ol" : "ul";
      const startAttr = ordered && start !== null && start !== 1 ? ` start="${start}"` : "";
      const lis = items.map((parts) => `<li>${parts.map(renderInline).join("<br>")}</li>`).join("");
      out.push(`<${tag}${startAttr}>${lis}</${tag}>`);
    } else {
      const para = [];
      while (
        i < lines.length && lines[i].trim() && !HEADING.test(lines[i]) && !RULE.test(lines[i])
        && !QUOTE.test(lines[i]) && !BULLET.test(lines[i]) && !ORDERED.test(lines[i])
      ) {
        para.push(lines[i]);
        i += 1;
      }
      out.push(`<p>${para.map(renderInline).join("<br>")}</p>`);
    }
  }
  return out.join("");
}

// An escaped http(s) URL: the only entity it may hold is &amp; (so &quot; and &lt; end it),
// and it does not end in punctuation.
const URL_PATTERN = String.raw`https?:\/\/(?:[^\s<>&()]|&amp;)*[^\s<>&().,;:!?'"]`;

/** One line of prose → HTML. Escapes first; code spans are set aside so nothing inside
 * them is formatted; links only for http(s). */
export function renderInline(raw) {
  const codes = [];
  let text = escapeHtml(String(raw).replace(/[\u0000\u0001]/g, "")).replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, _ticks, code) => {
    codes.push(`<code>${code.trim() ? code.replace(/^ (.*) $/, "$1") : code}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  const links = [];
  const keepLink = (html) => {
    links.push(html);
    return `\u0001${links.length - 1}\u0001`;
  };
  // [label](http://…): the URL is already escaped, so it cannot leave the attribute.
  text = text.replace(new RegExp(`\\[([^\\]\\n]+)\\]\\((${URL_PATTERN})\\)`, "g"), (_, label, url) =>
    keepLink(`<a href="${url}" target="_blank" rel="noopener noreferrer">${formatEmphasis(label)}</a>`));
  text = text.replace(new RegExp(`(^|[\\s(])(${URL_PATTERN})`, "g"), (_, lead, url) =>
    lead + keepLink(`<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`));
  text = formatEmphasis(text);
  text = text.replace(/\u0001(\d+)\u0001/g, (_, n) => links[Number(n)]);
  return text.replace(/\u0000(\d+)\u0000/g, (_, n) => codes[Number(n)]);
}

function formatEmphasis(text) {
  return text
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
}
