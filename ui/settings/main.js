// The settings window: views Projects, Policy, Session grants, Activity, Learn, Canaries, Remote machines and General, one module
// each under views/. Every change goes through a settings_* command (the core's shared
// operations); the page holds no policy of its own and reloads from disk whenever a
// policy file changes.

import { invoke, listen } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import { TEXT } from './text.js';
import { VIEWS, parseQuery, queryList } from './model.js';
import { fail, loaders, say, setOnViewChange, show, state } from './app.js';
import { loadProjects } from './views/projects.js';
import { loadPolicy } from './views/policy.js';
import { loadGrants } from './views/grants.js';
import { showActivity } from './views/activity.js';
import { loadGeneral } from './views/general.js';
import { loadLearn } from './views/learn.js';
import { loadCanaries } from './views/canaries.js';
import { loadRemotes } from './views/remotes.js';

Object.assign(loaders, {
  projects: loadProjects,
  policy: loadPolicy,
  grants: loadGrants,
  activity: showActivity,
  general: loadGeneral,
  learn: loadLearn,
  canaries: loadCanaries,
  remotes: loadRemotes,
});

function renderNav() {
  const nav = document.getElementById('nav');
  nav.replaceChildren(
    ...VIEWS.map((view) =>
      h('button', {
        type: 'button',
        role: 'tab',
        id: `tab-${view}`,
        'data-view': view,
        'aria-selected': String(state.view === view),
        tabindex: state.view === view ? '0' : '-1',
        onclick: () => show(view),
        onkeydown: (event) => {
          const step = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }[event.key];
          if (!step) return;
          event.preventDefault();
          const next = VIEWS[(VIEWS.indexOf(view) + step + VIEWS.length) % VIEWS.length];
          show(next).then(() => document.getElementById(`tab-${next}`)?.focus());
        },
      }, TEXT.views[view]),
    ),
  );
}

async function start() {
  document.title = TEXT.title;
  setOnViewChange(renderNav);
  // The listeners are registered while the first view loads, not before it: fewer round
  // trips before the window is interactive.
  const first = parseQuery(window.location.search);
  const list = queryList(window.location.search);
  if (list && first.project) state.focusEntry = { project: first.project, list };
  // For paths written `~/…`; a failure only leaves them in full. Asked before the first
  // view draws its paths.
  state.home = await invoke('settings_home').catch(() => null);
  await Promise.all([
    listen('settings:policy-changed', (event) => {
      // What the target file already allows is no longer proposed.
      if (state.view === 'learn') loadLearn().catch(fail);
      if (state.view !== 'policy') return;
      // The file holds what this app's own last save left there: no news.
      const echo = event.payload?.ours === true;
      // Typing not yet saved survives the reload (policy.js keeps it): the user is told.
      const typed = [...document.querySelectorAll('#main input[data-key]')].some((i) => i.value.trim() !== '');
      loadPolicy()
        .then(() => echo || say(typed ? TEXT.policy.reloadedKept : TEXT.policy.reloaded))
        .catch(fail);
    }),
    listen('settings:projects-changed', () => {
      if (state.view !== 'projects') return;
      // A status changed under the user's hands: keep the focus where it was.
      const focused = document.activeElement?.id;
      loadProjects()
        .then(() => focused && document.getElementById(focused)?.focus())
        .catch(fail);
    }),
    listen('settings:show', (event) => {
      const { view, project, list: shownList } = event.payload ?? {};
      // The prompt dialog's "Edit policy…": the list its grant would change.
      if (shownList && project) state.focusEntry = { project, list: shownList };
      // Shown again (it was hidden, or a second request): the view's data is loaded anew.
      show(VIEWS.includes(view) ? view : state.view, project)
        .then(() => {
          performance.mark('settings-shown');
          document.body.dataset.ready = 'true';
        })
        .catch(fail);
    }),
    listen('settings:remotes-changed', () => {
      // A remote's state or its waiting count changed: the list is redrawn (the form and
      // the focus stay).
      if (state.view === 'remotes') loadRemotes().catch(fail);
    }),
    listen('settings:hidden', () => {
      // Closed, kept hidden a while: not ready until shown and reloaded; old news goes.
      document.body.dataset.ready = 'false';
      say('');
    }),
    show(first.view, first.project),
  ]);
  // A view asked of this window while the page was still loading came before the
  // listener: shown now.
  const missed = await invoke('settings_take_show').catch(() => null);
  if (missed && VIEWS.includes(missed.view)) {
    if (missed.list && missed.project) state.focusEntry = { project: missed.project, list: missed.list };
    await show(missed.view, missed.project);
  }
  // Marked for tests/benches/settings.rs, which reads when the page became interactive
  // (and `settings-shown`, when it was shown again).
  performance.mark('settings-ready');
  document.body.dataset.ready = 'true';
}

start().catch(fail);
