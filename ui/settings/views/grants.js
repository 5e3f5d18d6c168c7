// The Session grants view: the live grants and denials, each with its limits, each
// revocable. The list is drawn again when the next time-limited grant lapses (one timer,
// only while this view shows such a grant), so a lapsed grant leaves it.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { act, main, state } from '../app.js';
import { grantLimit, grantWhat, nextRedraw } from '../grants-model.js';

let redraw = 0;

// --- grants ----------------------------------------------------------------------

export async function loadGrants() {
  clearTimeout(redraw);
  const grants = await invoke('settings_grants');
  if (state.view !== 'grants') return;
  const now = Date.now();
  main.replaceChildren(
    h('h1', {}, TEXT.grants.heading),
    grants.length
      ? h('ul', { className: 'grants' }, grants.map((g) => h('li', { 'data-grant': String(g.id), 'data-effect': g.effect },
        h('div', { className: 'project-text' },
          h('span', { className: 'mono' }, grantWhat(g)),
          h('span', { className: 'project-state grant-limit' }, grantLimit(g, now)),
          h('span', { className: 'project-state' }, g.key.session ? `${g.key.project} · ${g.key.session}` : g.key.project)),
        h('button', {
          type: 'button', className: 'destructive',
          onclick: () => act(() => invoke('settings_revoke', { id: g.id }), TEXT.grants.revoked),
        }, TEXT.grants.revoke))))
      : h('p', { className: 'empty' }, TEXT.grants.none));
  const next = nextRedraw(grants);
  if (next != null) {
    redraw = setTimeout(() => {
      if (state.view === 'grants') loadGrants().catch(() => {});
    }, next);
  }
}
