// The graph's legend: a filterable list that builds only the rows in view,
// so ten thousand series cost a few dozen DOM nodes. A click shows only
// that series (again: all of them); Ctrl- or Cmd-click toggles one.
import { el, formatCount } from './format.js';

const ROW = 20;

export class Legend {
  /**
   * `names[i]` and `colors[i]` describe series `i`; `setShown(shown)` is
   * called with the new visibility of every series.
   */
  constructor(root, names, colors, setShown) {
    this.names = names;
    this.colors = colors;
    this.setShown = setShown;
    this.shown = names.map(() => true);
    this.matches = names.map((_, i) => i);
    this.count = el('span', { class: 'muted' });
    this.filter = el('input', { id: 'legend-filter', placeholder: 'Filter series', size: 30 });
    this.box = el('div', { class: 'legend', id: 'legend' });
    this.spacer = el('div');
    this.box.append(this.spacer);
    root.append(el('div', { class: 'row' }, this.count, this.filter), this.box);
    this.filter.addEventListener('input', () => this.applyFilter());
    this.box.addEventListener('scroll', () => this.render());
    this.box.addEventListener('click', (e) => this.click(e));
    this.applyFilter();
  }

  applyFilter() {
    const f = this.filter.value.trim().toLowerCase();
    this.matches = [];
    this.names.forEach((n, i) => {
      if (!f || n.toLowerCase().includes(f)) this.matches.push(i);
    });
    this.count.textContent = f
      ? `${formatCount(this.matches.length)} of ${formatCount(this.names.length)} series`
      : `${formatCount(this.names.length)} series`;
    this.spacer.style.height = `${this.matches.length * ROW}px`;
    this.box.style.height = `${Math.min(this.matches.length * ROW, 260) + 2}px`;
    this.box.scrollTop = 0;
    this.render();
  }

  render() {
    const first = Math.floor(this.box.scrollTop / ROW);
    const last = Math.min(this.matches.length, first + Math.ceil(260 / ROW) + 2);
    const rows = [];
    for (let k = first; k < last; k += 1) {
      const i = this.matches[k];
      const row = el('div', { class: this.shown[i] ? 'entry' : 'entry off', 'data-series': i, title: this.names[i] },
        el('span', { class: 'swatch' }), this.names[i]);
      row.style.top = `${k * ROW}px`;
      row.firstChild.style.background = this.colors[i];
      rows.push(row);
    }
    this.spacer.replaceChildren(...rows);
  }

  click(e) {
    const row = e.target.closest('.entry');
    if (!row) return;
    const i = Number(row.dataset.series);
    if (e.ctrlKey || e.metaKey) {
      this.shown[i] = !this.shown[i];
    } else {
      const alone = this.shown[i] && this.shown.every((s, j) => s === (j === i));
      this.shown = this.shown.map((_, j) => alone || j === i);
    }
    this.setShown(this.shown);
    this.render();
  }
}
