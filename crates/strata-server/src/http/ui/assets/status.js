// The status page: Strata's own state (role, shards, lag, object store),
// the build, the runtime, the flags and the configuration, secrets
// redacted by the server.
import { api } from './api.js';
import { el, formatCount, formatBytes } from './format.js';

function facts(id, pairs) {
  return el('dl', { class: 'facts', id }, pairs.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', {}, v)]));
}

function seconds(s) {
  if (s === null || s === undefined) return '–';
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(1)} s`;
}

function yesNo(b, good) {
  return el('span', { class: b === good ? 'ok' : 'bad', text: b ? 'yes' : 'no' });
}

async function section(root, title, load) {
  const panel = el('div', { class: 'panel' }, el('h2', { text: title }), el('div', { class: 'muted', text: 'Loading…' }));
  root.append(panel);
  try {
    panel.lastChild.replaceWith(await load());
  } catch (e) {
    panel.lastChild.replaceWith(el('div', { class: 'error', text: `Error: ${e.message}` }));
  }
}

async function strata() {
  const { data } = await api('/api/v1/status/strata');
  const os = data.objectStore;
  const shards = data.shards;
  const rows = data.databases.map((d, i) => el('tr', {},
    el('td', { text: i }),
    el('td', { text: d.readOnly ? 'read-only' : 'writer' }),
    el('td', {}, yesNo(d.fenced, false)),
    el('td', { class: 'num', text: formatCount(d.headSeries) }),
    el('td', { class: 'num', text: formatCount(d.objectStoreRequests) }),
    el('td', { class: 'num', text: formatCount(d.objectStoreErrors) }),
    el('td', { class: 'num', text: `${formatBytes(d.objectStoreReadBytes)} / ${formatBytes(d.objectStoreWrittenBytes)}` }),
    el('td', { class: 'num', text: d.readOnly && d.logFollowedSecondsAgo !== null ? `${seconds(d.logFollowedSecondsAgo)} ago` : '–' })));
  return el('div', {},
    facts('strata-facts', [
      ['Role', data.role],
      ['Ready', yesNo(data.ready, true)],
      ['Shards', shards.count === 1 ? 'unsharded' : `${shards.count}${shards.id === null ? '' : `, this writer's: ${shards.id}`}`],
      ['Databases open', `${shards.open} of ${shards.expected}`],
      ['Object store', os.healthy
        ? el('span', { class: 'ok', text: 'answering' })
        : el('span', { class: 'bad', text: `failing for ${seconds(os.failingForSeconds)}: ${os.lastError}` })],
    ]),
    el('table', { id: 'databases' },
      el('tr', {}, ['#', 'Kind', 'Fenced', 'Head series', 'Store requests', 'Store errors', 'Read / written',
        'Writer log read'].map((h, i) => el('th', { class: i > 2 ? 'num' : '', text: h }))),
      rows));
}

async function build() {
  const { data } = await api('/api/v1/status/buildinfo');
  return facts('build-info', [['Version', data.version], ['Revision', data.revision], ['Branch', data.branch],
    ['Build date', data.buildDate], ['Compiler', data.goVersion]]);
}

async function runtime() {
  const { data } = await api('/api/v1/status/runtimeinfo');
  return facts('runtime-info', [['Start time', data.startTime], ['Server time', data.serverTime],
    ['Host name', data.hostname], ['Working folder', data.CWD], ['Retention', data.storageRetention],
    ['Worker threads', data.GOMAXPROCS], ['Live tasks', data.goroutineCount]]);
}

async function flags() {
  const { data } = await api('/api/v1/status/flags');
  const filter = el('input', { placeholder: 'Filter settings', size: 30 });
  const table = el('table', { id: 'flags' });
  const draw = () => {
    const f = filter.value.toLowerCase();
    table.replaceChildren(el('tr', {}, el('th', { text: 'Setting' }), el('th', { text: 'Value' })),
      ...Object.entries(data).filter(([k, v]) => !f || k.includes(f) || String(v).toLowerCase().includes(f))
        .map(([k, v]) => el('tr', {}, el('td', { class: 'series', text: k }), el('td', { class: 'series', text: v }))));
  };
  filter.addEventListener('input', draw);
  draw();
  return el('div', {}, filter, table);
}

async function config() {
  const { data } = await api('/api/v1/status/config');
  return el('pre', { class: 'config', id: 'config', text: data.yaml });
}

export function statusPage(root) {
  section(root, 'Strata', strata);
  const grid = el('div', { class: 'grid' });
  root.append(grid);
  section(grid, 'Build information', build);
  section(grid, 'Runtime information', runtime);
  section(root, 'Settings (secrets redacted)', flags);
  section(root, 'Configuration (secrets redacted)', config);
}
