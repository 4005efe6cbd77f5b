// The table of an instant query's result. Rows are added a page at a time
// so that a result of many thousands of series does not build them all.
import { el, seriesNode, formatCount } from './format.js';

const PAGE = 500;

function sampleText(s) {
  if (s.value) return s.value[1];
  if (s.histogram) return `histogram: count ${s.histogram[1].count}, sum ${s.histogram[1].sum}`;
  return '';
}

function pointsText(s) {
  const lines = (s.values || []).map(([t, v]) => `${v} @${t}`);
  for (const [t, h] of s.histograms || []) lines.push(`histogram: count ${h.count}, sum ${h.sum} @${t}`);
  return lines.join('\n');
}

export function renderTable(root, data) {
  const { resultType, result } = data;
  const table = el('table', { id: 'result-table' });
  if (resultType === 'scalar' || resultType === 'string') {
    table.append(el('tr', {}, el('th', { text: resultType }), el('th', { class: 'num', text: 'Value' })));
    table.append(el('tr', {}, el('td', { class: 'series', text: resultType }), el('td', { class: 'num', text: result[1] })));
    root.append(table);
    return;
  }
  if (result.length === 0) {
    root.append(el('div', { class: 'info', id: 'empty', text: 'Empty query result' }));
    return;
  }
  table.append(el('tr', {}, el('th', { text: 'Series' }), el('th', { class: 'num', text: resultType === 'matrix' ? 'Values' : 'Value' })));
  root.append(table);
  let shown = 0;
  const more = el('button', { id: 'more-rows' });
  const addPage = () => {
    const end = Math.min(shown + PAGE, result.length);
    const frag = document.createDocumentFragment();
    for (let i = shown; i < end; i += 1) {
      const s = result[i];
      const value = resultType === 'matrix' ? pointsText(s) : sampleText(s);
      frag.append(el('tr', {}, el('td', { class: 'series' }, seriesNode(s.metric)), el('td', { class: 'num pre', text: value })));
    }
    table.append(frag);
    shown = end;
    more.textContent = `Show ${formatCount(Math.min(PAGE, result.length - shown))} more of ${formatCount(result.length - shown)}`;
    more.hidden = shown >= result.length;
  };
  more.addEventListener('click', addPage);
  root.append(more);
  addPage();
}
