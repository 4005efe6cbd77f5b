// The rules and alerts pages: the groups this node evaluates with each
// rule's health, last error, last evaluation and duration, and the
// pending and firing alerts with their labels, annotations and values,
// read from /api/v1/rules as Prometheus' own pages read it.
import { api } from './api.js';
import { el } from './format.js';

function labelList(labels) {
  return el('span', { class: 'labels' },
    Object.entries(labels || {}).map(([k, v]) => el('span', { class: 'label', text: `${k}="${v}"` })));
}

function ago(iso) {
  const t = Date.parse(iso);
  if (!iso || iso.startsWith('0001-') || Number.isNaN(t)) return 'never';
  const s = Math.max(0, (Date.now() - t) / 1000);
  return s < 60 ? `${s.toFixed(1)} s ago` : `${Math.round(s / 60)} min ago`;
}

function ms(seconds) {
  return `${(seconds * 1000).toFixed(1)} ms`;
}

function health(h) {
  return el('span', { class: h === 'ok' ? 'ok' : h === 'err' ? 'bad' : 'muted', text: h });
}

function stateBadge(s) {
  return el('span', { class: `state state-${s}`, text: s });
}

function ruleRow(r) {
  const what = r.type === 'alerting'
    ? el('div', {},
      el('div', {}, el('b', { text: 'alert: ' }), r.name, ' ', stateBadge(r.state)),
      el('div', {}, el('b', { text: 'expr: ' }), el('code', { text: r.query })),
      r.duration ? el('div', { text: `for: ${r.duration} s` }) : null,
      r.keepFiringFor ? el('div', { text: `keep_firing_for: ${r.keepFiringFor} s` }) : null,
      Object.keys(r.labels || {}).length ? el('div', {}, el('b', { text: 'labels: ' }), labelList(r.labels)) : null,
      Object.keys(r.annotations || {}).length ? el('div', {}, el('b', { text: 'annotations: ' }), labelList(r.annotations)) : null)
    : el('div', {},
      el('div', {}, el('b', { text: 'record: ' }), r.name),
      el('div', {}, el('b', { text: 'expr: ' }), el('code', { text: r.query })),
      Object.keys(r.labels || {}).length ? el('div', {}, el('b', { text: 'labels: ' }), labelList(r.labels)) : null);
  return el('tr', { class: 'rule' },
    el('td', {}, what),
    el('td', {}, health(r.health), r.lastError ? el('div', { class: 'error', text: r.lastError }) : null),
    el('td', { class: 'num', text: ago(r.lastEvaluation) }),
    el('td', { class: 'num', text: ms(r.evaluationTime) }));
}

function groupPanel(g) {
  return el('div', { class: 'panel group' },
    el('h2', {}, g.name, el('span', { class: 'muted', text: ` ${g.file} · every ${g.interval} s · last ${ago(g.lastEvaluation)}, ${ms(g.evaluationTime)}` })),
    el('table', {},
      el('tr', {}, ['Rule', 'Health', 'Last evaluation', 'Duration'].map((h, i) => el('th', { class: i > 1 ? 'num' : '', text: h }))),
      g.rules.map(ruleRow)));
}

async function load(root, render) {
  const note = el('div', { class: 'muted', text: 'Loading…' });
  root.append(note);
  try {
    note.replaceWith(render(await api('/api/v1/rules')));
  } catch (e) {
    note.replaceWith(el('div', { class: 'error', text: `Error: ${e.message}` }));
  }
}

export function rulesPage(root) {
  load(root, ({ data }) => data.groups.length
    ? el('div', { id: 'rule-groups' }, data.groups.map(groupPanel))
    : el('div', { class: 'muted', text: 'No rules: set rules.rule_files.' }));
}

function alertRow(a) {
  return el('tr', { class: 'alert' },
    el('td', {}, labelList(a.labels)),
    el('td', {}, stateBadge(a.state)),
    el('td', { class: 'num', text: ago(a.activeAt) }),
    el('td', { class: 'num', text: a.value }),
    el('td', {}, labelList(a.annotations)));
}

export function alertsPage(root) {
  load(root, ({ data }) => {
    const rules = data.groups.flatMap((g) => g.rules.filter((r) => r.type === 'alerting'));
    if (rules.length === 0) return el('div', { class: 'muted', text: 'No alerting rules.' });
    const order = { firing: 0, pending: 1, inactive: 2 };
    rules.sort((a, b) => order[a.state] - order[b.state] || a.name.localeCompare(b.name));
    const counts = { firing: 0, pending: 0, inactive: 0 };
    for (const r of rules) counts[r.state] += 1;
    return el('div', { id: 'alert-rules' },
      el('div', { class: 'muted', id: 'alert-counts', text: `${counts.firing} firing, ${counts.pending} pending, ${counts.inactive} inactive` }),
      rules.map((r) => el('div', { class: `panel alert-rule state-${r.state}` },
        el('h2', {}, r.name, ' ', stateBadge(r.state), el('span', { class: 'muted', text: ` (${r.alerts.length} active)` })),
        el('div', {}, el('code', { text: r.query })),
        r.alerts.length ? el('table', {},
          el('tr', {}, ['Labels', 'State', 'Active since', 'Value', 'Annotations'].map((h) => el('th', { text: h }))),
          r.alerts.map(alertRow)) : null)));
  });
}
