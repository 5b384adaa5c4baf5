// Incidents: every open one, grouped by definition and node, with bulk retry.

import { get, post, session } from '../api.js';
import { ago, clear, flash, h, section, short, table } from '../dom.js';

export async function incidentsPage() {
  const groupsEl = h('div', {});
  const listEl = h('div', {});
  const picked = new Set();

  async function retry(body, label) {
    try {
      const res = await post('/incidents/retry', body);
      const failed = res.results.filter((r) => !r.retried);
      flash(`${label}: ${res.retried} retried${failed.length ? `, ${failed.length} not (${failed[0].error})` : ''}`, failed.length ? 'error' : 'ok');
    } catch (err) {
      flash(`${label}: ${err.message}`);
    }
    picked.clear();
    await refresh();
  }

  function render(data) {
    clear(groupsEl, table(['process', 'node', 'open', 'oldest', ''], data.groups.map((g) => h('tr', { 'data-testid': `group-${g.definitionKey}-${g.nodeId}` },
      h('td', {}, h('a', { href: `#/definitions/${encodeURIComponent(g.definitionId)}` }, g.definitionKey)),
      h('td', { class: 'mono' }, g.nodeId), h('td', { class: 'num' }, String(g.count)), h('td', {}, ago(g.oldest)),
      h('td', {}, session.canAct ? h('button', { 'data-testid': `retry-group-${g.nodeId}`, onclick: () => retry({ definitionId: g.definitionId, nodeId: g.nodeId }, `Retry ${g.count} at ${g.nodeId}`) }, `Retry all ${g.count}`) : null)))));
    const rows = data.items.map((i) => h('tr', { 'data-testid': `incident-${i.id}` },
      h('td', {}, session.canAct ? h('input', { type: 'checkbox', checked: picked.has(i.id), onchange: (ev) => (ev.target.checked ? picked.add(i.id) : picked.delete(i.id)) }) : null),
      h('td', { class: 'mono' }, h('a', { href: `#/instances/${encodeURIComponent(i.instanceId)}`, title: i.instanceId }, short(i.instanceId))),
      h('td', { class: 'mono' }, i.nodeId), h('td', {}, i.type), h('td', { class: 'error-text', title: i.details || '' }, i.message || ''),
      h('td', {}, ago(i.createdAt))));
    clear(listEl,
      table(['', 'instance', 'node', 'type', 'message', 'since'], rows, { 'data-testid': 'incidents' }),
      data.total > data.items.length ? h('p', { class: 'muted' }, `showing the oldest ${data.items.length} of ${data.total}`) : null,
      session.canAct ? h('button', { 'data-testid': 'retry-selected', onclick: () => picked.size && retry({ ids: [...picked] }, `Retry ${picked.size} selected`) }, 'Retry selected') : null);
  }

  async function refresh() {
    render(await get('/incidents'));
  }
  await refresh();
  return { el: h('div', {}, section('Open incidents by process and node', groupsEl), section('Open incidents', listEl)), refresh };
}
