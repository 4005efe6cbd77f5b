// The graph of a range query's result, drawn on a canvas by uPlot: every
// series on the query's time steps, a tooltip for the series nearest the
// pointer, drag-selection to zoom in, and the legend below.
import { el, seriesText, formatTime } from './format.js';
import { Legend } from './legend.js';

const HEIGHT = 380;

/** A colour per series, hues spread by the golden angle. */
export function color(i) {
  return `hsl(${Math.round((i * 137.508) % 360)}, 65%, 42%)`;
}

function sampleValue(v) {
  if (v === '+Inf' || v === '-Inf' || v === 'NaN') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * Draws `data` (a matrix) queried with `req` ({start, end, step}) into
 * `root`; `onZoom(start, end)` is called with a selected time range.
 * Answers an object whose `destroy()` frees the chart.
 */
export function renderGraph(root, data, req, onZoom) {
  const result = data.resultType === 'matrix' ? data.result : [];
  if (result.length === 0) {
    root.append(el('div', { class: 'info', id: 'empty', text: 'Empty query result' }));
    return { destroy() {} };
  }
  const { start, end, step } = req;
  const n = Math.floor((end - start) / step + 1e-9) + 1;
  const xs = new Array(n);
  for (let i = 0; i < n; i += 1) xs[i] = start + i * step;
  const columns = [xs];
  let histogramsOnly = 0;
  for (const s of result) {
    const ys = new Array(n).fill(null);
    for (const [t, v] of s.values || []) {
      const i = Math.round((t - start) / step);
      if (i >= 0 && i < n) ys[i] = sampleValue(v);
    }
    if (!s.values && s.histograms) histogramsOnly += 1;
    columns.push(ys);
  }
  const names = result.map((s) => seriesText(s.metric));
  const colors = result.map((_, i) => color(i));
  const many = result.length > 200;

  const chart = el('div', { class: 'chart', id: 'chart' });
  const tooltip = el('div', { class: 'tooltip', hidden: '' });
  chart.append(tooltip);
  root.append(chart);
  if (histogramsOnly > 0) {
    root.prepend(el('div', { class: 'info', text: `${histogramsOnly} series hold native histograms only, which the graph does not draw.` }));
  }

  const opts = {
    width: Math.max(chart.clientWidth, 300),
    height: HEIGHT,
    legend: { show: false },
    cursor: {
      drag: { x: true, y: false, setScale: false },
      // Fading the other series redraws every one of them: not with many.
      focus: { prox: many ? -1 : 24 },
      points: { show: !many },
    },
    focus: { alpha: 0.3 },
    scales: { x: { time: true, min: start, max: end } },
    axes: [{}, { size: 64 }],
    series: [{}, ...names.map((name, i) => ({
      label: name,
      stroke: colors[i],
      width: 1.25,
      points: { show: many ? false : undefined },
    }))],
    hooks: {
      setSelect: [(u) => {
        if (u.select.width < 3) return;
        const a = u.posToVal(u.select.left, 'x');
        const b = u.posToVal(u.select.left + u.select.width, 'x');
        u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
        onZoom(a, b);
      }],
      setCursor: [(u) => showTooltip(u, tooltip, names, columns)],
    },
  };
  // uPlot is the vendored script's global.
  const plot = new window.uPlot(opts, columns, chart);
  const legend = new Legend(root, names, colors, (shown) => {
    plot.batch(() => shown.forEach((s, i) => {
      if (plot.series[i + 1].show !== s) plot.setSeries(i + 1, { show: s }, false);
    }));
  });
  const resize = () => plot.setSize({ width: Math.max(chart.clientWidth, 300), height: HEIGHT });
  window.addEventListener('resize', resize);
  return {
    legend,
    destroy() {
      window.removeEventListener('resize', resize);
      plot.destroy();
    },
  };
}

/** The series nearest the pointer at its time step, with its value. */
function showTooltip(u, tooltip, names, columns) {
  const { idx, left, top } = u.cursor;
  if (idx === null || idx === undefined || left < 0) {
    tooltip.hidden = true;
    return;
  }
  let best = -1;
  let bestDist = Infinity;
  for (let s = 1; s < columns.length; s += 1) {
    const v = columns[s][idx];
    if (v === null || !u.series[s].show) continue;
    const d = Math.abs(u.valToPos(v, 'y') - top);
    if (d < bestDist) {
      bestDist = d;
      best = s;
    }
  }
  if (best < 0 || bestDist > 40) {
    tooltip.hidden = true;
    return;
  }
  tooltip.replaceChildren(
    el('div', { text: formatTime(columns[0][idx]) }),
    el('div', { text: names[best - 1] }),
    el('div', { text: `value: ${columns[best][idx]}` }),
  );
  tooltip.hidden = false;
  const x = left + u.over.offsetLeft + 12;
  const y = top + u.over.offsetTop + 12;
  tooltip.style.left = `${Math.min(x, u.over.offsetLeft + u.over.clientWidth - 300)}px`;
  tooltip.style.top = `${y}px`;
}
