// bpmn-js (the vendored navigated viewer) with the cockpit's overlays: a badge per node
// with its token counts, and a marker colouring the node by its most urgent state.

import { h } from './dom.js';

const MARKERS = ['ck-failed', 'ck-executing', 'ck-waiting', 'ck-ready', 'ck-incidents', 'ck-selected'];

export class Diagram {
  constructor(onSelect) {
    this.el = h('div', { class: 'diagram', 'data-testid': 'diagram' });
    this.viewer = new window.BpmnJS({ container: this.el });
    this.onSelect = onSelect;
    this.marked = new Set();
    this.selected = null;
    this.viewer.on('element.click', (ev) => {
      const el = ev.element;
      if (!el || el.type === 'bpmn:Process' || el.type === 'bpmn:Collaboration' || el.type === 'label') return;
      this.select(el.id);
      if (this.onSelect) this.onSelect(el.id);
    });
  }

  async load(xml) {
    await this.viewer.importXML(xml);
    this.viewer.get('canvas').zoom('fit-viewport', 'auto');
    this.el.dataset.loaded = 'true';
  }

  select(id) {
    const canvas = this.viewer.get('canvas');
    if (this.selected) canvas.removeMarker(this.selected, 'ck-selected');
    this.selected = id;
    if (id && this.viewer.get('elementRegistry').get(id)) canvas.addMarker(id, 'ck-selected');
  }

  // overlay: { nodeId: { executing, waiting, failed, ready, reasons: [] } }
  showTokens(overlay) {
    const overlays = this.viewer.get('overlays');
    const canvas = this.viewer.get('canvas');
    const registry = this.viewer.get('elementRegistry');
    overlays.remove({ type: 'ck-tokens' });
    for (const id of this.marked) for (const m of MARKERS.slice(0, 5)) canvas.removeMarker(id, m);
    this.marked.clear();
    for (const [nodeId, c] of Object.entries(overlay || {})) {
      if (!registry.get(nodeId)) continue;
      const parts = [];
      if (c.failed) parts.push(h('span', { class: 'tok failed', title: 'failed: an incident waits for an operator' }, `${c.failed} failed`));
      if (c.executing) parts.push(h('span', { class: 'tok executing', title: 'a worker runs the handler' }, `${c.executing} executing`));
      if (c.waiting) parts.push(h('span', { class: 'tok waiting', title: 'waiting' }, `${c.waiting} waiting${c.reasons.length ? ` · ${c.reasons.join(', ').replaceAll('_', ' ')}` : ''}`));
      if (c.ready) parts.push(h('span', { class: 'tok ready', title: 'ready: queued for a worker' }, `${c.ready} ready`));
      if (!parts.length) continue;
      const state = c.failed ? 'failed' : c.executing ? 'executing' : c.waiting ? 'waiting' : 'ready';
      overlays.add(nodeId, 'ck-tokens', {
        position: { top: -22, left: -4 },
        html: h('div', { class: `tokens ${state}`, 'data-testid': `overlay-${nodeId}`, 'data-state': state }, parts),
      });
      canvas.addMarker(nodeId, `ck-${state}`);
      this.marked.add(nodeId);
    }
  }

  // counts: { nodeId: number } of open incidents (the definition page)
  showIncidents(counts) {
    const overlays = this.viewer.get('overlays');
    const canvas = this.viewer.get('canvas');
    const registry = this.viewer.get('elementRegistry');
    overlays.remove({ type: 'ck-tokens' });
    for (const [nodeId, n] of Object.entries(counts || {})) {
      if (!registry.get(nodeId)) continue;
      overlays.add(nodeId, 'ck-tokens', {
        position: { top: -22, left: -4 },
        html: h('div', { class: 'tokens failed', 'data-testid': `incidents-${nodeId}` }, h('span', { class: 'tok failed' }, `${n} incident${n === 1 ? '' : 's'}`)),
      });
      canvas.addMarker(nodeId, 'ck-incidents');
    }
  }

  destroy() {
    this.viewer.destroy();
  }
}
