// One instance: the diagram with its live tokens, the selected element's details (lease,
// attempt, timers, external-task lock, user task), incidents, variables (view and edit),
// the history trail, and the operator's actions. Refreshed by polling, without reloads.

import { get, post, session } from '../api.js';
import { Diagram } from '../diagram.js';
import { ago, badge, clear, flash, h, section, short, table, time } from '../dom.js';

function details(e) {
  const p = e.payload || {};
  const out = [];
  if (p.blocked_by) out.push(`waits on ${p.blocked_by.kind.replaceAll('_', ' ')}`);
  if (p.attempt !== undefined) out.push(`attempt ${p.attempt}`);
  if (p.error) out.push(`error: ${String(p.error).slice(0, 120)}`);
  if (p.names) out.push(`set ${p.names.join(', ')}`);
  if (e.type === 'listeners_ran' && p.listeners) out.push(`ran ${p.listeners.join(', ')}`);
  if (e.type === 'timer_scheduled' && p.kind) out.push(`${p.kind.replaceAll('_', ' ')} timer`);
  if (p.due) out.push(`due ${time(p.due)}`);
  if (p.worker) out.push(`worker ${p.worker}`);
  if (p.by) out.push(`by ${p.by}`);
  if (p.reason) out.push(String(p.reason));
  if (p.message && !p.error) out.push(String(p.message).slice(0, 120));
  return out.join('; ');
}

export async function instancePage(id) {
  const path = `/instances/${encodeURIComponent(id)}`;
  let inst = await get(path);
  const xml = await get(`/definitions/${encodeURIComponent(inst.definitionId)}/xml`);
  let selected = null;
  let lastSeq = null;
  const canAct = () => session.canAct;

  const head = h('div', {});
  const actions = h('div', { class: 'actions', 'data-testid': 'actions' });
  const detail = h('div', { class: 'detail', 'data-testid': 'detail' });
  const incidents = h('div', {});
  const variables = h('div', {});
  const tokens = h('div', {});
  const related = h('div', {});
  const trailBody = h('tbody', {});
  const diagram = new Diagram((nodeId) => { selected = nodeId; renderDetail(); });

  async function act(label, fn) {
    try {
      await fn();
      flash(`${label}: done`, 'ok');
    } catch (err) {
      flash(`${label}: ${err.message}`);
    }
    await refresh();
  }

  const button = (label, testid, fn, extra = {}) => (canAct()
    ? h('button', { 'data-testid': testid, onclick: () => act(label, fn), ...extra }, label)
    : null);

  function renderHead() {
    clear(head,
      h('div', { class: 'title' },
        h('h1', { class: 'mono', 'data-testid': 'instance-id' }, inst.id),
        h('span', { 'data-testid': 'instance-state' }, badge(inst.state))),
      h('p', {},
        'process ', h('a', { href: `#/definitions/${encodeURIComponent(inst.definitionId)}` }, `${inst.definitionKey} v${inst.definition ? inst.definition.version : '?'}`),
        inst.businessKey ? ` · business key ${inst.businessKey}` : '',
        ` · started ${time(inst.startedAt)}`,
        inst.endedAt ? ` · ended ${time(inst.endedAt)}` : ''));
    const running = inst.state === 'active' || inst.state === 'suspended';
    clear(actions,
      !canAct() ? h('span', { class: 'muted', 'data-testid': 'read-only' }, 'read-only: this key may not act') : null,
      inst.state === 'active' ? button('Suspend', 'suspend', () => post(`${path}/suspend`)) : null,
      inst.state === 'suspended' ? button('Resume', 'resume', () => post(`${path}/resume`)) : null,
      running ? button('Terminate', 'terminate', async () => {
        if (!window.confirm(`Terminate instance ${inst.id}? Its tokens stop for good.`)) throw new Error('cancelled');
        await post(`${path}/terminate`, {});
      }, { class: 'danger' }) : null);
  }

  function renderDetail() {
    if (!selected) {
      clear(detail, h('p', { class: 'muted' }, 'Click an element of the diagram to see its tokens, timers, tasks and incidents.'));
      return;
    }
    const at = (x) => x.nodeId === selected;
    const toks = inst.tokens.filter(at);
    const timers = inst.timers.filter((t) => t.nodeId === selected || toks.some((k) => k.id === t.tokenId));
    const ext = inst.externalTasks.filter(at);
    const users = inst.userTasks.filter(at);
    const incs = inst.incidents.filter(at);
    clear(detail,
      h('h3', { class: 'mono' }, selected),
      table(['token', 'state', 'attempt', 'lease owner', 'lease expires', 'waits on', 'error'], toks.map((t) => h('tr', {},
        h('td', { class: 'mono', title: t.id }, short(t.id)), h('td', {}, badge(t.state)), h('td', { class: 'num' }, String(t.attempt)),
        h('td', {}, t.leaseOwner || ''), h('td', {}, t.leaseExpiresAt ? `${time(t.leaseExpiresAt)} (${ago(t.leaseExpiresAt)})` : ''),
        h('td', {}, t.blockedBy ? t.blockedBy.kind.replaceAll('_', ' ') : ''), h('td', { class: 'error-text' }, t.error ? t.error.slice(0, 200) : '')))),
      timers.length ? table(['timer', 'kind', 'due', ''], timers.map((t) => h('tr', {},
        h('td', { class: 'mono' }, short(t.id)), h('td', {}, t.kind === 'retry_backoff' ? 'next retry' : t.kind),
        h('td', {}, `${time(t.dueAt)} (${ago(t.dueAt)})`),
        h('td', {}, button('Fire now', `fire-${t.id}`, () => post(`/timers/${t.id}/fire`)))))) : null,
      ext.length ? table(['external task', 'topic', 'state', 'lock owner', 'lock expires', 'retries', ''], ext.map((t) => h('tr', {},
        h('td', { class: 'mono' }, short(t.id)), h('td', {}, t.topic), h('td', {}, t.state), h('td', {}, t.lockOwner || ''),
        h('td', {}, t.lockExpiresAt ? `${time(t.lockExpiresAt)} (${ago(t.lockExpiresAt)})` : ''), h('td', { class: 'num' }, t.retries === null ? '' : String(t.retries)),
        h('td', {}, t.state === 'locked' ? button('Unlock', `unlock-${t.id}`, () => post(`/external-tasks/${t.id}/unlock`)) : null)))) : null,
      users.length ? table(['user task', 'name', 'assignee', 'candidate groups', 'created'], users.map((t) => h('tr', {},
        h('td', { class: 'mono' }, short(t.id)), h('td', {}, t.name || ''), h('td', {}, t.assignee || 'unassigned'),
        h('td', {}, t.candidateGroups.join(', ')), h('td', {}, time(t.createdAt))))) : null,
      incs.length ? incidentTable(incs) : null);
  }

  function incidentTable(list) {
    return table(['incident', 'node', 'type', 'message', 'since', ''], list.map((i) => h('tr', { 'data-testid': `incident-${i.id}` },
      h('td', { class: 'mono' }, short(i.id)), h('td', { class: 'mono' }, i.nodeId), h('td', {}, i.type),
      h('td', { class: 'error-text', title: i.details || '' }, i.message || ''), h('td', {}, ago(i.createdAt)),
      h('td', {}, button('Retry', `retry-${i.id}`, () => post(`/incidents/${i.id}/retry`))))));
  }

  function renderVariables() {
    const rows = Object.entries(inst.variables).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => h('tr', {},
      h('td', { class: 'mono' }, k), h('td', { class: 'mono value' }, JSON.stringify(v))));
    const editor = canAct() && (inst.state === 'active' || inst.state === 'suspended') ? variableEditor() : null;
    clear(variables, table(['name', 'value (JSON)'], rows, { 'data-testid': 'variables' }), editor);
  }

  function variableEditor() {
    const name = h('input', { name: 'name', placeholder: 'name', required: true, maxlength: 255, 'data-testid': 'var-name' });
    const value = h('textarea', { name: 'value', placeholder: 'JSON value, e.g. 120 or "text" or {"a": 1}', rows: 2, 'data-testid': 'var-value' });
    const form = h('form', { class: 'inline-form' }, name, value, h('button', { type: 'submit', 'data-testid': 'var-save' }, 'Set variable'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      let parsed;
      try {
        parsed = JSON.parse(value.value);
      } catch {
        flash('The value is not JSON: write 120, true, "text", [1, 2] or {"a": 1}');
        return;
      }
      act(`Set ${name.value}`, () => post(`${path}/variables`, { variables: { [name.value]: parsed } }));
    });
    return form;
  }

  function renderRest() {
    clear(incidents, incidentTable(inst.incidents));
    clear(tokens, table(['token', 'node', 'state', 'attempt', 'waits on', 'lease owner', 'updated'], inst.tokens.map((t) => h('tr', {},
      h('td', { class: 'mono', title: t.id }, short(t.id)), h('td', { class: 'mono' }, t.nodeId), h('td', {}, badge(t.state)),
      h('td', { class: 'num' }, String(t.attempt)), h('td', {}, t.blockedBy ? t.blockedBy.kind.replaceAll('_', ' ') : ''),
      h('td', {}, t.leaseOwner || ''), h('td', {}, time(t.updatedAt))))));
    clear(related,
      h('p', {}, 'parent: ', inst.parentId ? h('a', { href: `#/instances/${inst.parentId}` }, short(inst.parentId)) : h('span', { class: 'muted' }, 'none')),
      h('p', {}, 'children: ', inst.childIds.length ? inst.childIds.map((c) => h('a', { href: `#/instances/${c}` }, `${short(c)} `)) : h('span', { class: 'muted' }, 'none')));
  }

  async function loadTrail() {
    const data = await get(`${path}/trail`, { after_seq: lastSeq === null ? '' : lastSeq, limit: 2000 });
    for (const e of data.items) {
      trailBody.append(h('tr', { 'data-testid': 'trail-row' },
        h('td', { class: 'num' }, String(e.seq)), h('td', {}, time(e.at)), h('td', { class: 'mono' }, e.nodeId || ''),
        h('td', { class: 'mono', title: e.tokenId || '' }, short(e.tokenId)), h('td', {}, e.from && e.to ? `${e.from} → ${e.to}` : e.type),
        h('td', {}, details(e))));
      lastSeq = e.seq;
    }
  }

  function renderAll() {
    renderHead();
    renderDetail();
    renderRest();
    const editing = variables.contains(document.activeElement);
    if (!editing) renderVariables();
    diagram.showTokens(inst.overlay);
  }

  async function refresh() {
    inst = await get(path);
    renderAll();
    await loadTrail();
  }

  const el = h('div', {},
    section('Instance', head, actions),
    h('div', { class: 'split' },
      section('Diagram', diagram.el),
      section('Selected element', detail)),
    section('Open incidents', incidents),
    section('Variables', variables),
    section('Tokens', tokens),
    section('Parent and child instances', related),
    section('History trail', h('table', { class: 'grid', 'data-testid': 'trail' },
      h('thead', {}, h('tr', {}, ['#', 'at', 'node', 'token', 'event', 'details'].map((x) => h('th', {}, x)))), trailBody)));

  return {
    el,
    mounted: async () => {
      await diagram.load(xml);
      renderAll();
      await loadTrail();
    },
    refresh,
    dispose: () => diagram.destroy(),
  };
}

