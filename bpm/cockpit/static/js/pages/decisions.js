// Decisions: the newest evaluations; one evaluation drawn by dmn-js (the vendored viewer)
// with the rules it matched highlighted, and its inputs and outputs.

import { get } from '../api.js';
import { clear, h, section, short, table, time } from '../dom.js';

function rows(items) {
  return items.map((d) => h('tr', { 'data-testid': `decision-${d.id}` },
    h('td', {}, h('a', { href: `#/decisions/${encodeURIComponent(d.id)}` }, d.name || d.key)),
    h('td', { class: 'mono' }, d.key),
    h('td', {}, time(d.evaluatedAt)),
    h('td', { class: 'num' }, String(d.matchedRules)),
    h('td', { class: 'mono' }, d.processInstanceId
      ? h('a', { href: `#/instances/${encodeURIComponent(d.processInstanceId)}`, title: d.processInstanceId }, short(d.processInstanceId))
      : h('span', { class: 'muted' }, 'REST')),
    h('td', { class: 'mono' }, d.activityId || '')));
}

export async function decisionsPage() {
  const body = h('div', {});
  const render = (data) => clear(body,
    table(['decision', 'key', 'evaluated', 'matched rules', 'instance', 'task'], rows(data.items), { 'data-testid': 'decisions' }),
    h('p', { class: 'muted' }, `${data.total} evaluations · ${data.definitions} decisions deployed (latest versions)`));
  render(await get('/decisions'));
  return {
    el: section('Decision evaluations, newest first', body),
    refresh: async () => render(await get('/decisions')),
  };
}

function valueText(value) {
  return value === null || value === undefined ? 'null' : (typeof value === 'object' ? JSON.stringify(value) : String(value));
}

// Marks the matched rules' rows in the table dmn-js drew (its cells carry data-row-id).
function highlight(container, ruleIds) {
  for (const id of ruleIds) {
    for (const cell of container.querySelectorAll(`[data-row-id="${CSS.escape(id)}"]`)) cell.classList.add('ck-matched');
  }
  container.dataset.highlighted = String(ruleIds.length);
}

export async function decisionPage(id) {
  const d = await get(`/decisions/${encodeURIComponent(id)}`);
  const container = h('div', { class: 'dmn-view', 'data-testid': 'dmn' });
  const viewer = new window.DmnJS({ container });
  const inputs = table(['input', 'value'], d.inputs.map((i) => h('tr', {},
    h('td', {}, i.name || i.id || ''), h('td', { class: 'mono' }, valueText(i.value)))), { 'data-testid': 'decision-inputs' });
  const outputs = table(['rule', 'output', 'value'], d.outputs.map((o) => h('tr', {},
    h('td', { class: 'mono' }, o.rule_id || ''), h('td', {}, o.name || ''), h('td', { class: 'mono' }, valueText(o.value)))), { 'data-testid': 'decision-outputs' });
  const required = d.required.length
    ? section('Required decisions', table(['decision', 'matched rules'], d.required.map((r) => h('tr', {},
      h('td', {}, h('a', { href: `#/decisions/${encodeURIComponent(r.id)}` }, r.name || r.key)), h('td', { class: 'num' }, String(r.matchedRules))))))
    : null;
  const el = h('div', {},
    section(`${d.name || d.key}${d.version ? ` · v${d.version}` : ''}`,
      h('p', { class: 'muted' }, `evaluated ${time(d.evaluatedAt)}`, d.processInstanceId ? ' by ' : '',
        d.processInstanceId ? h('a', { href: `#/instances/${encodeURIComponent(d.processInstanceId)}` }, `instance ${short(d.processInstanceId)}`) : null,
        d.activityId ? ` at ${d.activityId}` : ''),
      container),
    section('Inputs', inputs),
    section('Matched rules and outputs', outputs, d.collectResult !== null && d.collectResult !== undefined ? h('p', {}, `aggregated: ${valueText(d.collectResult)}`) : null),
    required);
  return {
    el,
    mounted: async () => {
      if (!d.xml) return;
      await viewer.importXML(d.xml);
      const view = viewer.getViews().find((v) => v.element && v.element.id === d.key);
      if (view) await viewer.open(view);
      highlight(container, d.matchedRuleIds);
      container.dataset.loaded = 'true';
    },
    dispose: () => viewer.destroy(),
  };
}
