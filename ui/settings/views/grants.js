// The Session grants view: the live grants, each revocable.

import { invoke } from '../ipc.js';
import { h } from '../dom.js';
import { TEXT } from '../text.js';
import { act, main, state } from '../app.js';

// --- grants ----------------------------------------------------------------------

export async function loadGrants() {
  const grants = await invoke('settings_grants');
  if (state.view !== 'grants') return;
  main.replaceChildren(
    h('h1', {}, TEXT.grants.heading),
    grants.length
      ? h('ul', { className: 'grants' }, grants.map((g) => h('li', { 'data-grant': String(g.id) },
        h('div', { className: 'project-text' },
          h('span', { className: 'mono' }, TEXT.grants.describe(g)),
          h('span', { className: 'project-state' }, g.key.session ? `${g.key.project} · ${g.key.session}` : g.key.project)),
        h('button', {
          type: 'button', className: 'destructive',
          onclick: () => act(() => invoke('settings_revoke', { id: g.id }), TEXT.grants.revoked),
        }, TEXT.grants.revoke))))
      : h('p', { className: 'empty' }, TEXT.grants.none));
}

