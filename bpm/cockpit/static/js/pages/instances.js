// Instances: filters (definition, state, business key, started between, incident, id),
// newest first, paged with the cursor the API hands out.

import { get } from '../api.js';
import { badge, clear, h, section, short, table, time } from '../dom.js';

const FIELDS = ['definition_key', 'definition_id', 'state', 'business_key', 'started_after', 'started_before', 'has_incident', 'id'];

function toIso(local) {
  return local ? new Date(local).toISOString() : '';
}

export async function instancesPage(params) {
  const defs = (await get('/definitions')).items;
  const keys = [...new Set(defs.map((d) => d.key))];
  const filter = Object.fromEntries(FIELDS.map((f) => [f, params.get(f) || '']));
  const cursors = [null];
  const body = h('div', {});
  const pager = h('div', { class: 'pager' });

  const field = (name, label, input) => h('label', {}, label, input);
  const form = h('form', { class: 'filters', 'data-testid': 'filters' },
    field('definition_key', 'process', h('select', { name: 'definition_key' }, h('option', { value: '' }, 'any'), keys.map((k) => h('option', { value: k, selected: k === filter.definition_key }, k)))),
    field('state', 'state', h('select', { name: 'state' }, h('option', { value: '' }, 'any'), ['active', 'suspended', 'completed', 'terminated', 'failed', 'compensating', 'compensated'].map((s) => h('option', { value: s, selected: s === filter.state }, s)))),
    field('business_key', 'business key', h('input', { name: 'business_key', value: filter.business_key })),
    field('started_after', 'started after', h('input', { type: 'datetime-local', name: 'started_after' })),
    field('started_before', 'started before', h('input', { type: 'datetime-local', name: 'started_before' })),
    field('has_incident', 'incident', h('select', { name: 'has_incident' }, h('option', { value: '' }, 'any'), h('option', { value: 'true', selected: filter.has_incident === 'true' }, 'with open incident'), h('option', { value: 'false', selected: filter.has_incident === 'false' }, 'without'))),
    field('id', 'instance id', h('input', { name: 'id', value: filter.id, placeholder: 'exact id', 'data-testid': 'search-id' })),
    h('button', { type: 'submit' }, 'Apply'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    for (const f of FIELDS) {
      if (f === 'definition_id') continue;
      const v = String(data.get(f) || '');
      filter[f] = f.startsWith('started_') ? toIso(v) : v;
    }
    filter.definition_id = '';
    cursors.length = 1;
    load().catch(showError);
  });

  const showError = (err) => clear(body, h('p', { class: 'error', 'data-testid': 'page-error' }, err.message));
  let page = 0;
  async function load() {
    const data = await get('/instances', { ...filter, limit: 50, cursor: cursors[page] || '' });
    const rows = data.items.map((i) => h('tr', { 'data-testid': `instance-${i.id}` },
      h('td', { class: 'mono' }, h('a', { href: `#/instances/${encodeURIComponent(i.id)}`, title: i.id }, short(i.id))),
      h('td', {}, i.definitionKey),
      h('td', {}, i.businessKey || ''),
      h('td', {}, badge(i.state)),
      h('td', {}, time(i.startedAt)),
      h('td', {}, time(i.endedAt)),
      h('td', { class: `num ${i.openIncidents ? 'count-failed' : 'muted'}` }, String(i.openIncidents))));
    clear(body, table(['id', 'process', 'business key', 'state', 'started', 'ended', 'incidents'], rows, { 'data-testid': 'instances' }));
    cursors[page + 1] = data.next;
    clear(pager,
      h('button', { disabled: page === 0, onclick: () => { page -= 1; load().catch(showError); } }, '← newer'),
      h('span', { class: 'muted' }, `page ${page + 1}`),
      h('button', { disabled: !data.next, 'data-testid': 'next-page', onclick: () => { page += 1; load().catch(showError); } }, 'older →'));
  }
  await load();
  return { el: section('Instances', form, body, pager), refresh: () => load() };
}
