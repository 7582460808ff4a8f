// @ts-check
// Pure helpers of the prompt box and the agent's questions (no DOM; tests/ui runs them in
// node): the fuzzy matcher of the `/` and `@` lists, which token the caret is in, the
// prompt's content blocks, and an elicitation schema mapped to form fields and back.

/**
 * Case-insensitive subsequence match: null when `query` is not a subsequence of `text`,
 * else a score (higher is better: consecutive letters, word starts and short texts win).
 * @param {string} query
 * @param {string} text
 * @returns {number | null}
 */
export function fuzzyScore(query, text) {
  const q = query.toLowerCase();
  const t = text.toLowerCase();
  if (!q) return 0;
  // greedy from each place the first letter occurs; the best of those runs counts
  let best = null;
  for (let start = t.indexOf(q[0]); start >= 0; start = t.indexOf(q[0], start + 1)) {
    const score = scoreFrom(q, t, start);
    if (score === null) break; // a later start cannot match either
    if (best === null || score > best) best = score;
  }
  return best === null ? null : best - t.length / 100;
}

/** @param {string} q @param {string} t @param {number} start */
function scoreFrom(q, t, start) {
  let score = 0;
  let at = start;
  let last = -2;
  for (const ch of q) {
    const found = t.indexOf(ch, at);
    if (found < 0) return null;
    if (found === last + 1) score += 5;
    if (found === 0 || "/._- ".includes(t[found - 1])) score += 3;
    score += 1;
    last = found;
    at = found + 1;
  }
  return score;
}

/**
 * The items matching `query`, best first (stable among equals).
 * @template T
 * @param {string} query
 * @param {T[]} items
 * @param {(item: T) => string} key
 * @returns {T[]}
 */
export function fuzzyFilter(query, items, key) {
  return items
    .map((item, index) => ({ item, index, score: fuzzyScore(query, key(item)) }))
    .filter((x) => x.score !== null)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .map((x) => x.item);
}

/**
 * The `/command` or `@path` token the caret ends: `/` only at the very start of the
 * prompt, `@` at the start or after whitespace. null when the caret is in neither.
 * @param {string} text
 * @param {number} caret
 * @returns {{trigger: "/" | "@", query: string, start: number, end: number} | null}
 */
export function activeToken(text, caret) {
  const before = text.slice(0, caret);
  const slash = /^\/(\S*)$/.exec(before);
  if (slash) return { trigger: "/", query: slash[1], start: 0, end: caret };
  const at = /(^|\s)@(\S*)$/.exec(before);
  if (at) {
    const start = caret - at[2].length - 1;
    return { trigger: "@", query: at[2], start, end: caret };
  }
  return null;
}

/**
 * The prompt's blocks (API.md "Prompt content"): the text, then each image, then each
 * file mentioned as `@path` in the text that was picked from the list.
 * @param {string} text
 * @param {{mimeType: string, data: string}[]} images
 * @param {string[]} files
 */
export function promptContent(text, images, files) {
  /** @type {object[]} */
  const blocks = [];
  if (text.trim()) blocks.push({ type: "text", text });
  for (const image of images) blocks.push({ type: "image", mimeType: image.mimeType, data: image.data });
  const mentioned = new Set(files.filter((path) => text.includes(`@${path}`)));
  for (const path of mentioned) blocks.push({ type: "file", path });
  return blocks;
}

/**
 * @typedef {{name: string, label: string, description: string, required: boolean,
 *   kind: "string" | "number" | "integer" | "boolean" | "enum",
 *   options: {value: string, label: string}[], defaultValue: unknown,
 *   minimum?: number, maximum?: number, format?: string}} Field
 */

/**
 * An elicitation's requestedSchema (a flat JSON object schema) as form fields.
 * @param {any} schema
 * @returns {Field[]}
 */
export function schemaFields(schema) {
  const properties = schema && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.entries(properties).map(([name, prop]) => {
    const p = prop && typeof prop === "object" ? prop : {};
    const choices = Array.isArray(p.enum) ? p.enum
      : Array.isArray(p.oneOf) ? p.oneOf.map((o) => o?.const) : null;
    const labels = Array.isArray(p.enumNames) ? p.enumNames
      : Array.isArray(p.oneOf) ? p.oneOf.map((o) => o?.title) : [];
    /** @type {Field["kind"]} */
    const kind = choices ? "enum"
      : p.type === "boolean" || p.type === "number" || p.type === "integer" ? p.type : "string";
    return {
      name,
      label: typeof p.title === "string" ? p.title : name,
      description: typeof p.description === "string" ? p.description : "",
      required: required.has(name),
      kind,
      options: (choices || []).map((value, i) => ({ value: String(value), label: String(labels[i] ?? value) })),
      defaultValue: p.default,
      minimum: typeof p.minimum === "number" ? p.minimum : undefined,
      maximum: typeof p.maximum === "number" ? p.maximum : undefined,
      format: typeof p.format === "string" ? p.format : undefined,
    };
  });
}

/**
 * The form's raw values (strings, or booleans for checkboxes) as the answer's `content`,
 * or the list of problems. Empty optional fields are left out.
 * @param {Field[]} fields
 * @param {Record<string, string | boolean>} values
 * @returns {{content: Record<string, unknown>, errors: string[]}}
 */
export function formContent(fields, values) {
  /** @type {Record<string, unknown>} */
  const content = {};
  const errors = [];
  for (const field of fields) {
    const raw = values[field.name];
    if (field.kind === "boolean") {
      content[field.name] = Boolean(raw);
      continue;
    }
    const text = typeof raw === "string" ? raw.trim() : "";
    if (!text) {
      if (field.required) errors.push(`${field.label} is required.`);
      continue;
    }
    if (field.kind === "number" || field.kind === "integer") {
      const n = Number(text);
      if (!Number.isFinite(n) || (field.kind === "integer" && !Number.isInteger(n))) {
        errors.push(`${field.label} must be ${field.kind === "integer" ? "a whole number" : "a number"}.`);
        continue;
      }
      content[field.name] = n;
    } else if (field.kind === "enum") {
      const option = field.options.find((o) => o.value === text);
      if (!option) errors.push(`${field.label}: choose one of the offered values.`);
      else content[field.name] = option.value;
    } else {
      content[field.name] = typeof raw === "string" ? raw : "";
    }
  }
  return { content, errors };
}
