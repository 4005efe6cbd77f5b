// The query page: an expression box with completion, a table of an
// instant query's result and a graph of a range query's, with the time
// controls, the query's stats and the server's errors and warnings. Its
// state lives in the URL, so a query can be linked and reloaded.
import { api } from './api.js';
import { el, formatDuration, parseDuration, formatCount } from './format.js';
import { attachCompletion } from './complete.js';
import { renderTable } from './table.js';
import { renderGraph } from './graph.js';

const RANGES = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '14d', '30d'];

/** `datetime-local`'s text for a Unix time, in local time. */
function toLocalInput(secs) {
  const d = new Date(secs * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function fromLocalInput(text) {
  if (!text) return null;
  const t = new Date(text).getTime();
  return Number.isFinite(t) ? t / 1000 : null;
}

/** Prometheus' automatic resolution: about 250 points over the range. */
export function autoStep(rangeSecs) {
  return Math.max(Math.floor(rangeSecs / 250), 1);
}

/**
 * The page's state from its URL: its own parameters, or the first panel
 * of a Prometheus link (`g0.expr`, `g0.tab` = 0 or `graph` for the
 * graph, `g0.range_input`, `g0.end_input`, `g0.step_input`), as Grafana
 * and Alertmanager write them.
 */
function stateFromUrl(params) {
  const g = (k) => params.get(`g0.${k}`);
  const tab = params.get('tab') ?? (g('tab') === '0' || g('tab') === 'graph' ? 'graph' : 'table');
  // Prometheus writes `end_input` as `YYYY-MM-DD HH:mm:ss` in UTC.
  const endInput = g('end_input');
  const prometheusEnd = endInput && Date.parse(/[zZ]$|[+-]\d\d:?\d\d$/.test(endInput)
    ? endInput : `${endInput.replace(' ', 'T')}Z`) / 1000;
  const end = params.get('end') ?? prometheusEnd ?? null;
  const step = params.get('step') ?? g('step_input');
  return {
    expr: params.get('expr') ?? g('expr') ?? '',
    tab: tab === 'graph' ? 'graph' : 'table',
    range: parseDuration(params.get('range') ?? g('range_input') ?? '1h') || 3600,
    end: end && Number.isFinite(Number(end)) ? Number(end) : null,
    step: step ? parseDuration(step) || null : null,
  };
}

export function queryPage(root) {
  const state = stateFromUrl(new URLSearchParams(location.search));

  const expr = el('textarea', { id: 'expr', rows: 1, spellcheck: 'false', placeholder: 'Expression (press Shift+Enter for newlines)' });
  expr.value = state.expr;
  const run = el('button', { id: 'execute', class: 'primary', text: 'Execute' });
  const wrap = el('div', { class: 'expr-wrap' }, expr);
  const tabTable = el('button', { id: 'tab-table', text: 'Table' });
  const tabGraph = el('button', { id: 'tab-graph', text: 'Graph' });

  const evalTime = el('input', { id: 'eval-time', type: 'datetime-local', step: '1', title: 'Evaluation time; empty for now' });
  const rangeInput = el('input', { id: 'range', size: 6, list: 'ranges', title: 'Range: 5m, 1h, 1d, 7d…' });
  const rangeList = el('datalist', { id: 'ranges' }, RANGES.map((r) => el('option', { value: r })));
  const endInput = el('input', { id: 'end-time', type: 'datetime-local', step: '1', title: 'End time; empty for now' });
  const stepInput = el('input', { id: 'step', size: 6, placeholder: 'auto', title: 'Resolution: empty for automatic, or a duration such as 15s' });
  const narrower = el('button', { text: '−', title: 'Halve the range' });
  const wider = el('button', { text: '+', title: 'Double the range' });
  const nowBtn = el('button', { text: 'Now', title: 'End at the current time' });

  const tableControls = el('div', { class: 'row' }, el('label', {}, 'Evaluation time ', evalTime));
  const graphControls = el('div', { class: 'row' },
    narrower, el('label', {}, 'Range ', rangeInput), rangeList, wider,
    el('label', {}, 'End ', endInput), nowBtn,
    el('label', {}, 'Step ', stepInput));
  const messages = el('div', { id: 'messages' });
  const stats = el('div', { id: 'stats', class: 'stats' });
  const output = el('div', { id: 'output' });

  root.append(el('div', { class: 'panel' },
    el('div', { class: 'row' }, wrap, run),
    el('div', { class: 'tabs' }, tabTable, tabGraph),
    tableControls, graphControls, messages, stats, output));

  attachCompletion(expr, wrap, () => execute());

  function showState() {
    tabTable.classList.toggle('active', state.tab === 'table');
    tabGraph.classList.toggle('active', state.tab === 'graph');
    tableControls.hidden = state.tab !== 'table';
    graphControls.hidden = state.tab !== 'graph';
    rangeInput.value = formatDuration(state.range);
    endInput.value = state.end ? toLocalInput(state.end) : '';
    stepInput.value = state.step ? formatDuration(state.step) : '';
  }

  function saveUrl() {
    const p = new URLSearchParams();
    if (state.expr) p.set('expr', state.expr);
    p.set('tab', state.tab);
    if (state.tab === 'graph') {
      p.set('range', formatDuration(state.range));
      if (state.end) p.set('end', String(state.end));
      if (state.step) p.set('step', formatDuration(state.step));
    }
    history.replaceState(null, '', `${location.pathname}?${p}`);
  }

  let inflight = null;
  let graph = null;

  async function execute() {
    state.expr = expr.value.trim();
    saveUrl();
    messages.replaceChildren();
    stats.textContent = '';
    if (inflight) inflight.abort();
    if (graph) {
      graph.destroy();
      graph = null;
    }
    output.replaceChildren();
    if (!state.expr) return;
    const ctl = new AbortController();
    inflight = ctl;
    const started = performance.now();
    let answer;
    let req;
    try {
      if (state.tab === 'table') {
        req = { query: state.expr, time: fromLocalInput(evalTime.value) ?? undefined, stats: 'all' };
        answer = await api('/api/v1/query', req, { post: true, signal: ctl.signal });
      } else {
        const end = state.end ?? Date.now() / 1000;
        const step = state.step || autoStep(state.range);
        req = { query: state.expr, start: end - state.range, end, step, stats: 'all' };
        answer = await api('/api/v1/query_range', req, { post: true, signal: ctl.signal });
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      showMessages(e.warnings || [], e.infos || []);
      messages.prepend(el('div', { class: 'error', id: 'error', text: `Error${e.errorType ? ` (${e.errorType})` : ''}: ${e.message}` }));
      return;
    } finally {
      if (inflight === ctl) inflight = null;
    }
    const took = performance.now() - started;
    showMessages(answer.warnings, answer.infos);
    const { resultType, result } = answer.data;
    const count = Array.isArray(result) && (resultType === 'vector' || resultType === 'matrix') ? result.length : 1;
    const parts = [`Load time: ${Math.round(took)} ms`, `Result series: ${formatCount(count)}`];
    if (state.tab === 'graph') parts.push(`Resolution: ${formatDuration(req.step)}`);
    // The server's own count of the samples its selectors loaded, and
    // its time (the load time above includes the network and parsing).
    if (answer.data.stats && answer.data.stats.samples) {
      parts.push(`Samples loaded: ${formatCount(answer.data.stats.samples.totalQueryableSamples)}`);
      parts.push(`Server time: ${Math.round(answer.data.stats.timings.execTotalTime * 1000)} ms`);
    }
    stats.textContent = parts.join(' · ');
    if (state.tab === 'table') {
      renderTable(output, answer.data);
    } else {
      graph = renderGraph(output, answer.data, req, (start, end) => {
        // A drag-selection zooms in: the new range is queried again, at
        // the finer resolution it allows.
        state.end = Math.round(end);
        state.range = Math.max(Math.round(end - start), 1);
        state.step = null;
        showState();
        execute();
      });
    }
  }

  function showMessages(warnings, infos) {
    for (const w of warnings) messages.append(el('div', { class: 'warning', text: `Warning: ${w}` }));
    for (const i of infos) messages.append(el('div', { class: 'info', text: `Info: ${i}` }));
  }

  run.addEventListener('click', execute);
  tabTable.addEventListener('click', () => { state.tab = 'table'; showState(); execute(); });
  tabGraph.addEventListener('click', () => { state.tab = 'graph'; showState(); execute(); });
  rangeInput.addEventListener('change', () => {
    const r = parseDuration(rangeInput.value);
    if (r > 0) state.range = r;
    showState();
    execute();
  });
  narrower.addEventListener('click', () => { state.range = Math.max(Math.round(state.range / 2), 1); showState(); execute(); });
  wider.addEventListener('click', () => { state.range *= 2; showState(); execute(); });
  endInput.addEventListener('change', () => { state.end = fromLocalInput(endInput.value); showState(); execute(); });
  nowBtn.addEventListener('click', () => { state.end = null; showState(); execute(); });
  stepInput.addEventListener('change', () => {
    const s = parseDuration(stepInput.value);
    state.step = s > 0 ? s : null;
    showState();
    execute();
  });
  evalTime.addEventListener('change', execute);

  showState();
  if (state.expr) execute();
  expr.focus();
}
