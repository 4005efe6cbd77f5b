// Completion in the expression box: metric names, PromQL functions and
// aggregations outside braces, label names inside braces and grouping
// clauses, label values inside a matcher's quotes. Names come from the
// API once per page (label values once per label name).
import { api } from './api.js';
import { el, isPlainName, labelName } from './format.js';

// The functions this server's PromQL engine knows, and the aggregations.
const FUNCTIONS = ('abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes '
  + 'clamp clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month '
  + 'deg delta deriv exp floor histogram_quantile holt_winters hour idelta increase irate label_join '
  + 'label_replace last_over_time ln log10 log2 max_over_time min_over_time minute month pi predict_linear '
  + 'present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_desc sqrt '
  + 'stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year').split(' ');
const AGGREGATIONS = 'sum min max avg group stddev stdvar count count_values bottomk topk quantile'.split(' ');
const KEYWORDS = 'by without on ignoring group_left group_right offset bool and or unless'.split(' ');
const MAX_SHOWN = 200;

const cache = new Map();

/** The API's list at `path`, fetched once; empty when it fails. */
function list(path) {
  if (!cache.has(path)) {
    cache.set(path, api(path).then((r) => r.data || []).catch(() => []));
  }
  return cache.get(path);
}

/**
 * What to complete at the end of `before` (the text left of the cursor):
 * {kind, word, label?} or null.
 */
export function contextAt(before) {
  // Inside a quoted matcher value: `label="pre`, or `"label.name"="pre`.
  const value = before.match(/(?:([a-zA-Z_][a-zA-Z0-9_]*)|"((?:[^"\\]|\\.)*)")\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/);
  if (value && insideBraces(before)) {
    const label = value[1] ?? unquote(value[2]);
    return { kind: 'value', label, word: value[4] };
  }
  // A name so far, with the dots and letters of UTF-8 names.
  const word = (before.match(/[\p{L}_:][\p{L}\p{N}_:.]*$/u) || [''])[0];
  if (insideBraces(before)) return { kind: 'label', word };
  if (/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/.test(before)) return { kind: 'label', word };
  if (!word) return null;
  return { kind: 'name', word };
}

/** A quoted name's text; as written when it is no JSON string. */
function unquote(inner) {
  try {
    return JSON.parse(`"${inner}"`);
  } catch {
    return inner;
  }
}

/** Whether the end of `text` is inside `{…}` (quotes skipped). */
function insideBraces(text) {
  let depth = 0;
  let quote = null;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '{') depth += 1;
    else if (c === '}') depth = Math.max(depth - 1, 0);
  }
  return depth > 0;
}

async function candidates(ctx) {
  if (ctx.kind === 'value') {
    const values = await list(`/api/v1/label/${encodeURIComponent(ctx.label)}/values`);
    return values.map((v) => ({ text: v, kind: 'label value' }));
  }
  if (ctx.kind === 'label') {
    const names = await list('/api/v1/labels');
    return names.map((v) => ({ text: v, kind: 'label' }));
  }
  const metrics = await list('/api/v1/label/__name__/values');
  return [
    ...AGGREGATIONS.map((f) => ({ text: f, kind: 'aggregation' })),
    ...FUNCTIONS.map((f) => ({ text: f, kind: 'function' })),
    ...KEYWORDS.map((f) => ({ text: f, kind: 'keyword' })),
    ...metrics.map((m) => ({ text: m, kind: 'metric' })),
  ];
}

/** Ranks prefix matches first, then other substring matches. */
function rank(all, word) {
  const w = word.toLowerCase();
  const prefix = [];
  const inner = [];
  for (const c of all) {
    const t = c.text.toLowerCase();
    if (t === w) continue;
    if (t.startsWith(w)) prefix.push(c);
    else if (w && t.includes(w)) inner.push(c);
    if (prefix.length >= MAX_SHOWN) break;
  }
  return prefix.concat(inner).slice(0, MAX_SHOWN);
}

/**
 * Adds completion to `input` (a textarea inside `wrap`); Enter without
 * an open list calls `submit`.
 */
export function attachCompletion(input, wrap, submit) {
  const box = el('ul', { class: 'complete', id: 'completions', hidden: '' });
  wrap.append(box);
  let items = [];
  let sel = 0;
  let ctx = null;
  let seq = 0;

  const close = () => {
    box.hidden = true;
    items = [];
  };

  const show = () => {
    box.replaceChildren(...items.map((c, i) => el('li', { class: i === sel ? 'sel' : '', 'data-i': i },
      c.text, el('small', { text: c.kind }))));
    box.hidden = items.length === 0;
    const s = box.children[sel];
    if (s) s.scrollIntoView({ block: 'nearest' });
  };

  const update = async () => {
    const before = input.value.slice(0, input.selectionStart);
    ctx = contextAt(before);
    const mine = ++seq;
    if (!ctx) return close();
    const all = await candidates(ctx);
    if (mine !== seq) return undefined;
    items = rank(all, ctx.word);
    sel = 0;
    return show();
  };

  const accept = (i) => {
    const c = items[i];
    if (!c || !ctx) return;
    const pos = input.selectionStart;
    const from = pos - ctx.word.length;
    let text = c.text;
    if (ctx.kind === 'value') text = text.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    // Names PromQL cannot write bare are quoted, as Prometheus 3 has them.
    if (c.kind === 'label') text = labelName(text);
    if (c.kind === 'metric' && !isPlainName(text)) text = `{${JSON.stringify(text)}}`;
    if (c.kind === 'function' || c.kind === 'aggregation') text += '(';
    input.setRangeText(text, from, pos, 'end');
    close();
    input.focus();
  };

  input.addEventListener('input', update);
  input.addEventListener('blur', () => setTimeout(close, 150));
  box.addEventListener('mousedown', (e) => {
    const li = e.target.closest('li');
    if (!li) return;
    e.preventDefault();
    accept(Number(li.dataset.i));
  });
  input.addEventListener('keydown', (e) => {
    const open = !box.hidden && items.length > 0;
    if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      sel = (sel + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
      show();
      e.preventDefault();
    } else if (open && (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey))) {
      accept(sel);
      e.preventDefault();
    } else if (open && e.key === 'Escape') {
      close();
      e.preventDefault();
    } else if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      close();
      submit();
    }
  });
}
