// The cardinality explorer: `/api/v1/status/tsdb`'s series count and the
// top metric names, label names and label pairs, with bars; a name opens
// the query page on it.
import { api } from './api.js';
import { el, formatCount, formatBytes, labelName, metricSelector } from './format.js';

const LIMITS = [10, 20, 50, 100, 500];

function queryLink(expr, text) {
  const p = new URLSearchParams({ expr, tab: 'table' });
  return el('a', { href: `/graph?${p}`, text });
}

/** One list as a table: name, value, share of the largest (or of `total`). */
function listTable(id, title, rows, { nameHead, valueHead, link, total, bytes }) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  const table = el('table', { id },
    el('tr', {}, el('th', { text: nameHead }), el('th', { class: 'num', text: valueHead }),
      total ? el('th', { class: 'num', text: '% of series' }) : null, el('th', { class: 'bar-cell' })));
  for (const r of rows) {
    const bar = el('div', { class: 'bar' });
    bar.style.width = `${(100 * r.value) / max}%`;
    table.append(el('tr', {},
      el('td', { class: 'series' }, link ? link(r.name) : r.name),
      el('td', { class: 'num', text: bytes ? formatBytes(r.value) : formatCount(r.value) }),
      total ? el('td', { class: 'num', text: `${((100 * r.value) / total).toFixed(1)}%` }) : null,
      el('td', { class: 'bar-cell' }, bar)));
  }
  if (rows.length === 0) table.append(el('tr', {}, el('td', { class: 'muted', text: 'none' })));
  return el('div', { class: 'panel' }, el('h2', { text: title }), table);
}

/** `{label="value"}` for a pair the API names `label=value`. */
function pairSelector(pair) {
  const eq = pair.indexOf('=');
  const name = pair.slice(0, eq);
  const value = pair.slice(eq + 1);
  return `{${labelName(name)}=${JSON.stringify(value)}}`;
}

export function cardinalityPage(root) {
  const params = new URLSearchParams(location.search);
  const limit = el('select', { id: 'limit' }, LIMITS.map((n) => el('option', { value: n, text: n })));
  limit.value = params.get('limit') || '10';
  if (!limit.value) limit.value = '10';
  const body = el('div', { id: 'cardinality' });
  const head = el('div', { class: 'panel' },
    el('div', { class: 'row' }, el('h2', { class: 'grow', text: 'Cardinality' }),
      el('label', {}, 'Top ', limit, ' per list')),
    el('div', { id: 'head-stats' }));
  root.append(head, body);

  async function load() {
    const p = new URLSearchParams({ limit: limit.value });
    history.replaceState(null, '', `${location.pathname}?${p}`);
    body.replaceChildren(el('div', { class: 'muted', text: 'Loading…' }));
    let data;
    try {
      ({ data } = await api('/api/v1/status/tsdb', { limit: limit.value }));
    } catch (e) {
      body.replaceChildren(el('div', { class: 'error', id: 'error', text: `Error: ${e.message}` }));
      return;
    }
    const total = data.headStats.numSeries;
    head.querySelector('#head-stats').replaceChildren(el('dl', { class: 'facts' },
      el('dt', { text: 'Series' }), el('dd', { id: 'num-series', text: formatCount(total) }),
      el('dt', { text: 'Label pairs' }), el('dd', { text: formatCount(data.headStats.numLabelPairs) })));
    body.replaceChildren(el('div', { class: 'grid' },
      listTable('by-metric', 'Series count by metric name', data.seriesCountByMetricName, {
        nameHead: 'Metric', valueHead: 'Series', total,
        link: (name) => queryLink(metricSelector(name), name),
      }),
      listTable('by-pair', 'Series count by label pair', data.seriesCountByLabelValuePair, {
        nameHead: 'Label pair', valueHead: 'Series', total,
        link: (pair) => queryLink(`count by (__name__) (${pairSelector(pair)})`, pair),
      }),
      listTable('by-label', 'Distinct values by label name', data.labelValueCountByLabelName, {
        nameHead: 'Label', valueHead: 'Values',
        link: (name) => queryLink(`count by (${labelName(name)}) ({${labelName(name)}!=""})`, name),
      }),
      listTable('by-memory', 'Bytes of label values by label name', data.memoryInBytesByLabelName, {
        nameHead: 'Label', valueHead: 'Bytes', bytes: true,
      })));
  }

  limit.addEventListener('change', load);
  load();
}
