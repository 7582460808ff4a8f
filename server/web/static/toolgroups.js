// @ts-check
// Tools grouped for the Usage page's "slowest tools": real agents title every call with
// its arguments ("Read README.md", "Write parser.py", "Run npm test"), so one row per
// title says nothing. A group is the title's verb with the arguments taken out, and the
// kind of tool that verb names. Pure: node:test covers it.

const KINDS = {
  read: "read", view: "read", open: "read", cat: "read",
  write: "edit", edit: "edit", create: "edit", update: "edit", patch: "edit", replace: "edit", apply: "edit",
  delete: "delete", remove: "delete",
  move: "move", rename: "move",
  search: "search", grep: "search", find: "search", list: "search", glob: "search",
  run: "execute", execute: "execute", bash: "execute", shell: "execute", terminal: "execute",
  fetch: "fetch", download: "fetch", web: "fetch",
  think: "think", plan: "think",
};

/** The group of a tool title: {key, label, kind}. A title of one word (an MCP tool's
 * name, "bash") is its own group. */
export function toolGroup(name) {
  const title = String(name || "(unnamed)").trim();
  const verb = title.split(/\s+/)[0];
  const kind = KINDS[verb.toLowerCase().replace(/[^a-z]/g, "")] || "other";
  const label = verb === title ? title : verb;
  return { key: `${kind}:${label.toLowerCase()}`, label, kind };
}

/**
 * Rows of GET /api/stats/tools merged per group: calls and failures add up; the group's
 * p95 is its slowest member's (an upper bound: the members' own distributions are not at
 * hand), its median the calls-weighted mean of theirs.
 * @param {{toolName: string | null, calls: number, failures: number, durationMs: {median: number | null, p95: number | null}}[]} tools
 */
export function groupTools(tools) {
  /** @type {Map<string, {label: string, kind: string, calls: number, failures: number, p95: number | null, weighted: number, timed: number, titles: Set<string>}>} */
  const groups = new Map();
  for (const tool of tools) {
    const { key, label, kind } = toolGroup(tool.toolName);
    let group = groups.get(key);
    if (!group) {
      group = { label, kind, calls: 0, failures: 0, p95: null, weighted: 0, timed: 0, titles: new Set() };
      groups.set(key, group);
    }
    group.calls += tool.calls;
    group.failures += tool.failures;
    group.titles.add(tool.toolName || "(unnamed)");
    const { median, p95 } = tool.durationMs;
    if (p95 !== null && (group.p95 === null || p95 > group.p95)) group.p95 = p95;
    if (median !== null) {
      group.weighted += median * tool.calls;
      group.timed += tool.calls;
    }
  }
  return [...groups.values()].map((g) => ({
    label: g.label, kind: g.kind, calls: g.calls, failures: g.failures, titles: g.titles.size,
    durationMs: { median: g.timed ? g.weighted / g.timed : null, p95: g.p95 },
  }));
}
