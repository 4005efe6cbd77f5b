// Formatting shared by the pages: series names, numbers, times, durations,
// and small DOM helpers.

/** An element with attributes (`class`, `text`, event handlers) and children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** `name{a="b", c="d"}` as text, as Prometheus shows a series. */
export function seriesText(metric) {
  const name = metric.__name__ || '';
  const pairs = Object.entries(metric)
    .filter(([k]) => k !== '__name__')
    .map(([k, v]) => `${labelName(k)}=${JSON.stringify(v)}`);
  if (name && !isPlainName(name)) return `{${[JSON.stringify(name), ...pairs].join(', ')}}`;
  if (pairs.length === 0) return name || '{}';
  return `${name}{${pairs.join(', ')}}`;
}

/** The same as a node with label names and values coloured. */
export function seriesNode(metric) {
  const frag = document.createDocumentFragment();
  const name = metric.__name__ || '';
  const pairs = Object.entries(metric).filter(([k]) => k !== '__name__');
  // A name PromQL cannot write bare goes quoted inside the braces.
  const quoted = name && !isPlainName(name);
  if (!quoted) frag.append(name);
  if (pairs.length === 0 && !quoted) {
    if (!name) frag.append('{}');
    return frag;
  }
  frag.append('{');
  if (quoted) frag.append(JSON.stringify(name), pairs.length ? ', ' : '');
  pairs.forEach(([k, v], i) => {
    if (i > 0) frag.append(', ');
    frag.append(el('span', { class: 'lname', text: labelName(k) }), '=', el('span', { class: 'lvalue', text: JSON.stringify(v) }));
  });
  frag.append('}');
  return frag;
}

const UNITS = [['y', 31536000], ['w', 604800], ['d', 86400], ['h', 3600], ['m', 60], ['s', 1]];

/** `1h30m` for 5400 (seconds), as PromQL durations are written. */
export function formatDuration(secs) {
  if (!(secs > 0)) return '0s';
  let ms = Math.round(secs * 1000);
  let out = '';
  for (const [u, size] of UNITS) {
    const n = Math.floor(ms / (size * 1000));
    if (n > 0) {
      out += `${n}${u}`;
      ms -= n * size * 1000;
    }
  }
  if (ms > 0) out += `${ms}ms`;
  return out;
}

/** Seconds in a PromQL duration (`5m`, `1h30m`, `90s`, `250ms`, or a plain number), NaN if it is none. */
export function parseDuration(text) {
  const t = String(text).trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const re = /(\d+)(ms|y|w|d|h|m|s)/g;
  let total = 0;
  let used = 0;
  for (const m of t.matchAll(re)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : n * UNITS.find(([u]) => u === m[2])[1];
    used += m[0].length;
  }
  return used === t.length && used > 0 ? total : NaN;
}

/** A Unix time (seconds) as local `YYYY-MM-DD HH:MM:SS`. */
export function formatTime(secs) {
  const d = new Date(secs * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Thousands separated, for counts. */
export function formatCount(n) {
  return Number(n).toLocaleString('en-US');
}

/** Bytes as KiB/MiB/GiB. */
export function formatBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/**
 * Whether the metric name `name` can be written bare in PromQL; else it is
 * quoted, as Prometheus 3 writes UTF-8 names (`{"my.metric"}`).
 */
export function isPlainName(name) {
  return /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name);
}

/** A label name as PromQL takes it: bare, or quoted (`"http.status"`). */
export function labelName(name) {
  return /^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name) ? name : JSON.stringify(name);
}

/** A selector of one metric name. */
export function metricSelector(name) {
  return isPlainName(name) ? name : `{${JSON.stringify(name)}}`;
}
