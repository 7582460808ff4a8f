// @ts-check
// The Usage page (#/usage): cost and tokens per day stacked by agent, runs by status, the
// slowest and the most failing tools, from GET /api/stats and /api/stats/tools. Filters for
// repository, agent and range; each chart has its table beside it (screen readers, exact
// numbers); "Download CSV" saves the day buckets shown.

import { describe, get, query } from "./api.js";
import { horizontalBars, stackedColumns } from "./chart.js";
import { clear, count, duration, h } from "./dom.js";
import { RUN_STATUSES } from "./enums.js";
import { groupTools } from "./toolgroups.js";

// ended runs first, the running ones last
const STATUSES = [...RUN_STATUSES.filter((s) => s !== "running"), "running"];
const RANGES = [["7", "Last 7 days"], ["30", "Last 30 days"], ["90", "Last 90 days"], ["365", "Last year"]];

function localZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** The local dates of the last `days` days, oldest first (YYYY-MM-DD). */
function dayLabels(from, days) {
  const out = [];
  const start = new Date(`${from}T12:00:00Z`);
  for (let i = 0; i < days; i++) out.push(new Date(start.getTime() + i * 86400000).toISOString().slice(0, 10));
  return out;
}

function isoDate(date) {
  const y = date.getFullYear(), m = String(date.getMonth() + 1).padStart(2, "0"), d = String(date.getDate()).padStart(2, "0");
  return `${y}-${m}-${d}`;
}

export function costOf(bucket, currency) {
  return (bucket.cost || []).filter((c) => c.currency === currency).reduce((sum, c) => sum + c.amount, 0);
}

export function toCsv(buckets) {
  const head = ["day", "runs", ...STATUSES, "toolCalls", "toolFailures", "durationTotalMs", "durationMedianMs",
    "durationP95Ms", "inputTokens", "outputTokens", "cachedTokens", "cost"];
  const esc = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  const rows = buckets.map((b) => [b.key, b.runs, ...STATUSES.map((s) => b.byStatus[s] || 0), b.toolCalls, b.toolFailures,
    b.durationMs.total, b.durationMs.median ?? "", b.durationMs.p95 ?? "", b.tokens.input, b.tokens.output, b.tokens.cached,
    (b.cost || []).map((c) => `${c.amount} ${c.currency}`).join("; ")]);
  return [head, ...rows].map((r) => r.map(esc).join(",")).join("\n") + "\n";
}

function table(caption, head, rows) {
  return h("table.data-table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, head.map((c, i) => h(i ? "th.num" : "th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c, i) => (i ? h("td.num", {}, c) : h("th", { scope: "row" }, c)))))));
}

export class UsagePage {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.tz = localZone();
    this.buckets = [];
    this.range = h("select#usage-range", { onchange: () => this.load() },
      RANGES.map(([v, label]) => h("option", { value: v, selected: v === "30" }, label)));
    this.repo = h("select#usage-repo", { onchange: () => this.load() }, h("option", { value: "" }, "All repositories"));
    this.agent = h("select#usage-agent", { onchange: () => this.load() }, h("option", { value: "" }, "All agents"));
    this.csv = h("button.secondary", { type: "button", onclick: () => this.download() }, "Download CSV");
    this.status = h("p.muted", { role: "status" });
    this.body = h("div.usage-body");
    clear(root,
      h("div.page-head", {}, h("h2", { tabindex: -1 }, "Usage"),
        h("p.muted", {}, `Days in ${this.tz}.`)),
      h("form.usage-filters", { onsubmit: (e) => e.preventDefault() },
        h("label", { for: "usage-range" }, "Range"), this.range,
        h("label", { for: "usage-repo" }, "Repository"), this.repo,
        h("label", { for: "usage-agent" }, "Agent"), this.agent,
        this.csv),
      this.status, this.body);
  }

  async start() {
    try {
      const [repos, agents] = await Promise.all([get("/api/repos"), get("/api/agents")]);
      for (const r of repos.repos || []) this.repo.append(h("option", { value: r.id }, r.name));
      for (const a of agents.agents || []) this.agent.append(h("option", { value: a.id }, a.id));
    } catch (err) {
      this.status.textContent = `Could not load the filters: ${describe(err)}`;
    }
    await this.load();
  }

  params(extra = {}) {
    const days = Number(this.range.value);
    const today = new Date();
    const from = new Date(today.getFullYear(), today.getMonth(), today.getDate() - days + 1);
    const to = new Date(today.getFullYear(), today.getMonth(), today.getDate() + 1);
    return { from: isoDate(from), to: isoDate(to), tz: this.tz, repoId: this.repo.value || null, agentId: this.agent.value || null, ...extra };
  }

  async load() {
    this.status.textContent = "Loading…";
    const seq = (this.seq = (this.seq || 0) + 1);
    try {
      const [days, agents, tools] = await Promise.all([
        get(`/api/stats${query(this.params({ groupBy: "day" }))}`),
        get(`/api/stats${query(this.params({ groupBy: "agent" }))}`),
        get(`/api/stats/tools${query(this.params({ limit: 50 }))}`),
      ]);
      const perAgent = await Promise.all(agents.buckets.map((a) =>
        get(`/api/stats${query(this.params({ groupBy: "day", agentId: a.key }))}`).then((r) => [a.key, r.buckets])));
      if (seq !== this.seq) return; // a newer filter change owns the page
      this.buckets = days.buckets;
      this.render(days, perAgent, tools.tools);
      this.status.textContent = days.buckets.length ? "" : "No runs in this range.";
    } catch (err) {
      if (seq === this.seq) this.status.textContent = `Could not load usage: ${describe(err)}`;
    }
  }

  render(days, perAgent, tools) {
    const labels = dayLabels(this.params().from, Number(this.range.value));
    const currencies = [...new Set(days.buckets.flatMap((b) => (b.cost || []).map((c) => c.currency)))];
    const currency = currencies.includes("USD") ? "USD" : currencies[0] || "USD";
    const money = (n) => `${n.toFixed(n >= 1 ? 2 : 4)} ${currency}`;
    // the axis of small amounts in two significant digits: 0.00005, not 0.0000
    const axisMoney = (n) => (n === 0 ? `0 ${currency}` : n >= 1 ? money(n) : `${Number(n.toPrecision(2))} ${currency}`);
    const byDay = (buckets, pick) => {
      const map = new Map(buckets.map((b) => [b.key, b]));
      return labels.map((d) => (map.has(d) ? pick(map.get(d)) : 0));
    };
    const costSeries = perAgent.map(([name, buckets]) => ({ name, values: byDay(buckets, (b) => costOf(b, currency)) }));
    const tokenSeries = perAgent.map(([name, buckets]) => ({ name, values: byDay(buckets, (b) => b.tokens.input + b.tokens.output) }));
    const statusSeries = STATUSES.map((s) => ({ name: s, cls: `st-${s}`, values: byDay(days.buckets, (b) => b.byStatus[s] || 0) }));
    const withData = (series) => series.filter((s) => s.values.some((v) => v));
    const dayRows = (series, fmt) => labels.filter((_, i) => series.some((s) => s.values[i]))
      .map((d) => [d, ...series.map((s) => fmt(s.values[labels.indexOf(d)]))]);
    const groups = groupTools(tools);
    const slow = groups.filter((t) => t.durationMs.p95 !== null).sort((a, b) => b.durationMs.p95 - a.durationMs.p95).slice(0, 10);
    const failing = [...tools].filter((t) => t.failures).sort((a, b) => b.failures - a.failures).slice(0, 10);
    // the charts' drawing width as shown: on a phone the axis text keeps a readable size
    const width = Math.max(300, Math.min(600, Math.round((this.body.clientWidth || 600) * (window.innerWidth <= 760 ? 1 : 0.6)) - 30));
    const section = (id, title, chart, tableNode, note = null) => h(`section.usage-card#${id}`, { "aria-labelledby": `${id}-title` },
      h(`h3#${id}-title`, {}, title), note,
      h("div.usage-pair", {}, chart, tableNode.querySelector("tbody tr") ? h("div.table-wrap", {}, tableNode) : null));
    const cost = withData(costSeries);
    const tokens = withData(tokenSeries);
    const statuses = withData(statusSeries);
    clear(this.body,
      section("usage-cost", `Cost per day (${currency})`,
        stackedColumns({ labels, series: cost, format: money, axis: axisMoney, title: `Cost per day in ${currency}, by agent`, width }),
        table(`Cost per day in ${currency}`, ["Day", ...cost.map((s) => s.name)], dayRows(cost, money)),
        currencies.length > 1 ? h("p.muted.small", {}, `Also charged in ${currencies.filter((c) => c !== currency).join(", ")}: see the CSV.`) : null),
      section("usage-tokens", "Tokens per day (input + output)",
        stackedColumns({ labels, series: tokens, format: (n) => count(Math.round(n)), title: "Tokens per day by agent", width }),
        table("Tokens per day", ["Day", ...tokens.map((s) => s.name)], dayRows(tokens, count))),
      section("usage-status", "Runs by status",
        stackedColumns({ labels, series: statuses, format: (n) => count(Math.round(n)), axis: (n) => (Number.isInteger(n) ? count(n) : n.toFixed(1)), title: "Runs per day by status", width }),
        table("Runs per day by status", ["Day", ...statuses.map((s) => s.name)], dayRows(statuses, count))),
      section("usage-slow", "Slowest tools (p95)",
        horizontalBars({ rows: slow.map((t) => ({ name: t.label, value: t.durationMs.p95 })), format: duration, title: "Slowest tools by 95th percentile" }),
        table("Slowest tools, by kind and title without arguments", ["Tool", "Kind", "Calls", "Median", "p95"],
          slow.map((t) => [t.titles > 1 ? `${t.label} (${t.titles} titles)` : t.label, t.kind, count(t.calls), duration(t.durationMs.median), duration(t.durationMs.p95)])),
        h("p.muted.small", {}, "Calls grouped by the tool's kind and its title without arguments (“Read README.md” and “Read parser.py” are one row). A group's p95 is its slowest title's.")),
      section("usage-failing", "Most failing tools",
        horizontalBars({ rows: failing.map((t) => ({ name: t.toolName || "(unnamed)", value: t.failures })), format: count, title: "Tools by failures" }),
        table("Most failing tools", ["Tool", "Failures", "Calls"], failing.map((t) => [t.toolName || "(unnamed)", count(t.failures), count(t.calls)]))));
  }

  download() {
    const blob = new Blob([toCsv(this.buckets)], { type: "text/csv" });
    const link = h("a", { href: URL.createObjectURL(blob), download: `usage-${this.params().from}-${this.range.value}d.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }
}
