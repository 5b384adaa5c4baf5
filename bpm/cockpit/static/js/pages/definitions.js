// Definitions: every deployed version with instance counts by state; one definition's
// diagram with its open incidents per node.

import { get } from '../api.js';
import { Diagram } from '../diagram.js';
import { clear, h, section, table, time } from '../dom.js';

const STATES = ['active', 'suspended', 'completed', 'terminated', 'failed', 'compensating', 'compensated'];

function countCells(d) {
  return STATES.map((s) => h('td', { class: `num ${d.counts[s] ? `count-${s}` : 'muted'}` },
    d.counts[s] ? h('a', { href: `#/instances?definition_id=${encodeURIComponent(d.id)}&state=${s}` }, String(d.counts[s])) : '0'));
}

function rows(items) {
  return items.map((d) => h('tr', { 'data-testid': `definition-${d.key}-${d.version}` },
    h('td', {}, h('a', { href: `#/definitions/${encodeURIComponent(d.id)}` }, d.name || d.key)),
    h('td', { class: 'mono' }, d.key),
    h('td', { class: 'num' }, `v${d.version}`),
    h('td', {}, time(d.deployedAt)),
    countCells(d),
    h('td', { class: `num ${d.openIncidents ? 'count-failed' : 'muted'}` }, String(d.openIncidents))));
}

export async function definitionsPage() {
  const data = await get('/definitions');
  const body = h('div', {});
  const render = (items) => clear(body, table(['process', 'key', 'version', 'deployed', ...STATES, 'open incidents'], rows(items), { 'data-testid': 'definitions' }));
  render(data.items);
  return {
    el: section('Process definitions', body),
    refresh: async () => render((await get('/definitions')).items),
  };
}

export async function definitionPage(id) {
  const [d, xml] = await Promise.all([get(`/definitions/${encodeURIComponent(id)}`), get(`/definitions/${encodeURIComponent(id)}/xml`)]);
  const diagram = new Diagram(null);
  const counts = h('div', { class: 'counts' });
  const incidentList = h('div', {});
  const render = (def) => {
    clear(counts, STATES.map((s) => h('a', { class: `pill state-${s}`, href: `#/instances?definition_id=${encodeURIComponent(def.id)}&state=${s}` }, `${s}: ${def.counts[s] || 0}`)));
    clear(incidentList, table(['node', 'open incidents', 'oldest'], def.incidentsByNode.map((g) => h('tr', {},
      h('td', { class: 'mono' }, g.nodeId), h('td', { class: 'num' }, String(g.count)), h('td', {}, time(g.oldest))))));
    diagram.showIncidents(Object.fromEntries(def.incidentsByNode.map((g) => [g.nodeId, g.count])));
  };
  const el = h('div', {},
    section(`${d.name || d.key} · v${d.version}`,
      h('p', { class: 'muted mono' }, d.id),
      counts,
      diagram.el),
    section('Open incidents by node', incidentList));
  return {
    el,
    mounted: async () => { await diagram.load(xml); render(d); },
    refresh: async () => render(await get(`/definitions/${encodeURIComponent(id)}`)),
    dispose: () => diagram.destroy(),
  };
}
