// @ts-check
// Small inline-SVG charts for the Usage page: stacked columns and horizontal bars. Every
// bar carries its numbers in a <title> (the browser's tooltip), in data-* attributes and in
// the readout line that follows the pointer or keyboard focus. Colours come from CSS
// classes (.series-0 … .series-7), so the page's stylesheet keeps light and dark themes.

const NS = "http://www.w3.org/2000/svg";

/** @param {string} tag @param {Record<string, string | number>} attrs */
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const child of children) node.append(child);
  return node;
}

/** A round upper bound for an axis: 1, 2 or 5 times a power of ten. */
export function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

/** The colour class of series `k` (a series may name its own: a run status keeps its
 * colour whichever others have data). */
function colour(series, k) {
  return series.cls || `series-${k % 8}`;
}

/** What a chart with nothing to draw shows instead of an empty axis. */
function empty(title) {
  const node = document.createElement("p");
  node.className = "chart-empty";
  node.textContent = "No data in this range.";
  return figure(title, node, null, []);
}

/**
 * Columns, one per label, each stacked from its series. `width`: the drawing's width in
 * px as shown (a phone's is narrower: the axis text keeps its size, fewer days are named).
 * @param {{labels: string[], series: {name: string, values: number[], cls?: string}[],
 *   format?: (n: number) => string, axis?: (n: number) => string, title: string,
 *   height?: number, width?: number}} spec
 * @returns {HTMLElement}
 */
export function stackedColumns({ labels, series, format = String, axis = format, title, height = 180, width = 600 }) {
  const left = 74, top = 8, bottom = 22;
  if (!series.some((s) => s.values.some((v) => v > 0))) return empty(title);
  const plotH = height - top - bottom;
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] || 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const band = (width - left - 8) / Math.max(1, labels.length);
  const readout = document.createElement("p");
  readout.className = "chart-readout";
  readout.setAttribute("aria-hidden", "true");
  readout.textContent = "Point at a bar for its numbers.";
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": title,
    preserveAspectRatio: "xMinYMin meet",
  });
  for (const frac of [0, 0.5, 1]) {
    const y = top + plotH * (1 - frac);
    root.append(svg("line", { x1: left, x2: width - 8, y1: y, y2: y, class: "chart-grid" }));
    const label = svg("text", { x: left - 6, y: y + 4, class: "chart-axis", "text-anchor": "end" });
    label.textContent = axis(max * frac);
    root.append(label);
  }
  labels.forEach((name, i) => {
    const x = left + i * band + band * 0.15;
    let y = top + plotH;
    series.forEach((s, k) => {
      const value = s.values[i] || 0;
      if (!value) return;
      const h = (value / max) * plotH;
      y -= h;
      const text = `${name} · ${s.name}: ${format(value)} (total ${format(totals[i])})`;
      const bar = svg("rect", {
        x, y, width: band * 0.7, height: Math.max(h, 0.5), class: `chart-bar ${colour(s, k)}`,
        tabindex: 0, "data-label": name, "data-series": s.name, "data-value": value,
      }, svg("title"));
      bar.firstChild.textContent = text;
      const show = () => { readout.textContent = text; };
      bar.addEventListener("mouseenter", show);
      bar.addEventListener("focus", show);
      root.append(bar);
    });
    const named = Math.max(2, Math.floor((width - left) / 48)); // labels that fit side by side
    if (labels.length <= named || i % Math.ceil(labels.length / named) === 0) {
      const tick = svg("text", { x: x + band * 0.35, y: height - 6, class: "chart-axis", "text-anchor": "middle" });
      tick.textContent = name.length === 10 ? name.slice(5) : name;
      root.append(tick);
    }
  });
  return figure(title, root, readout, series.map((s, k) => [s.name, colour(s, k)]));
}

/**
 * Horizontal bars, one per row, longest first as given.
 * @param {{rows: {name: string, value: number}[], format?: (n: number) => string,
 *   title: string}} spec
 * @returns {HTMLElement}
 */
export function horizontalBars({ rows, format = String, title }) {
  const rowH = 22, left = 150, width = 420;
  if (!rows.some((r) => r.value > 0)) return empty(title);
  const height = Math.max(1, rows.length) * rowH + 8;
  const max = niceMax(Math.max(0, ...rows.map((r) => r.value)));
  const readout = document.createElement("p");
  readout.className = "chart-readout";
  readout.setAttribute("aria-hidden", "true");
  readout.textContent = "Point at a bar for its numbers.";
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": title });
  rows.forEach((row, i) => {
    const y = 4 + i * rowH;
    const name = svg("text", { x: left - 6, y: y + 15, class: "chart-axis", "text-anchor": "end" });
    name.textContent = row.name.length > 22 ? `${row.name.slice(0, 21)}…` : row.name;
    const w = (row.value / max) * (width - left - 60);
    const text = `${row.name}: ${format(row.value)}`;
    const bar = svg("rect", {
      x: left, y: y + 3, width: Math.max(w, 0.5), height: rowH - 8, class: "chart-bar series-0",
      tabindex: 0, "data-label": row.name, "data-value": row.value,
    }, svg("title"));
    bar.firstChild.textContent = text;
    const value = svg("text", { x: left + w + 4, y: y + 15, class: "chart-axis" });
    value.textContent = format(row.value);
    const show = () => { readout.textContent = text; };
    bar.addEventListener("mouseenter", show);
    bar.addEventListener("focus", show);
    root.append(name, bar, value);
  });
  return figure(title, root, readout, []);
}

function figure(title, chart, readout, legend) {
  const node = document.createElement("div");
  node.className = "chart-box";
  if (legend.length > 1) {
    const list = document.createElement("ul");
    list.className = "chart-legend";
    list.setAttribute("aria-hidden", "true");
    legend.forEach(([name, cls]) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = `swatch ${cls}`;
      item.append(swatch, name);
      list.append(item);
    });
    node.append(list);
  }
  node.append(chart);
  if (readout) node.append(readout);
  node.dataset.chart = title;
  return node;
}
