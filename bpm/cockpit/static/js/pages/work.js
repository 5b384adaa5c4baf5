// Work: the inline queue (ready tokens), steps running, external tasks by topic, timers due
// in the next minute, and the lock owners holding work right now.

import { get, post, session } from '../api.js';
import { ago, clear, flash, h, section, short, table, time } from '../dom.js';

export async function workPage() {
  const el = h('div', { class: 'cards' });

  function render(w) {
    clear(el,
      section('Ready inline steps (queue depth)',
        h('p', { class: 'big', 'data-testid': 'ready-total' }, String(w.readyTokens)),
        table(['node', 'ready', 'oldest'], w.readyByNode.map((x) => h('tr', {}, h('td', { class: 'mono' }, x.nodeId), h('td', { class: 'num' }, String(x.count)), h('td', {}, ago(x.oldest)))))),
      section('Running now',
        table(['node', 'executing', 'since'], w.executingByNode.map((x) => h('tr', {}, h('td', { class: 'mono' }, x.nodeId), h('td', { class: 'num' }, String(x.count)), h('td', {}, ago(x.oldest)))))),
      section('External tasks by topic',
        table(['topic', 'ready', 'locked', 'lock expired'], w.topics.map((x) => h('tr', { 'data-testid': `topic-${x.topic}` }, h('td', { class: 'mono' }, x.topic), h('td', { class: 'num' }, String(x.ready)), h('td', { class: 'num' }, String(x.locked)), h('td', { class: `num ${x.expired ? 'count-failed' : ''}` }, String(x.expired)))))),
      section(`Timers due in the next minute: ${w.timersDueNextMinute}`,
        table(['timer', 'instance', 'node', 'kind', 'due', ''], w.timersDue.map((t) => h('tr', {},
          h('td', { class: 'mono' }, short(t.id)), h('td', { class: 'mono' }, h('a', { href: `#/instances/${t.instanceId}` }, short(t.instanceId))),
          h('td', { class: 'mono' }, t.nodeId), h('td', {}, t.kind), h('td', {}, `${time(t.dueAt)} (${ago(t.dueAt)})`),
          h('td', {}, session.canAct ? h('button', { onclick: async () => { try { await post(`/timers/${t.id}/fire`); flash('timer due now', 'ok'); } catch (err) { flash(err.message); } } }, 'Fire now') : null))))),
      section('Workers seen (holding leases or locks now)',
        table(['worker', 'kind', 'holding', 'until', 'topics'], w.workers.map((x) => h('tr', {},
          h('td', { class: 'mono' }, x.name), h('td', {}, x.kind), h('td', { class: 'num' }, String(x.holding)),
          h('td', {}, x.lockExpiresAt ? ago(x.lockExpiresAt) : ''), h('td', {}, x.topics.join(', '))))),
        w.celeryWorkers.length ? h('p', {}, `Celery workers answering: ${w.celeryWorkers.join(', ')}`) : null));
  }

  render(await get('/work'));
  return { el, refresh: async () => render(await get('/work')) };
}
