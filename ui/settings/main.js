// The settings window: views Projects, Policy, Session grants and Activity. Every change
// goes through a settings_* command (the core's shared operations); the page holds no
// policy of its own and reloads from disk whenever a policy file changes.

import { invoke, listen } from './ipc.js';
import { h } from './dom.js';
import { TEXT } from './text.js';
import {
  VIEWS, activityFilter, changedMessage, effectiveModel, fileModel, fileTarget, formatTime,
  parseQuery, pickProject, projectState, typedEntry,
} from './model.js';

const state = {
  view: 'projects',
  project: null,
  projects: [],
  policy: null,
  activity: { project: '', decision: 'any', text: '' },
};

const main = document.getElementById('main');
const status = document.getElementById('status');

function say(text, kind = 'info') {
  status.textContent = text;
  status.dataset.kind = kind;
}

const fail = (e) => say(TEXT.error(String(e)), 'error');

// --- navigation ------------------------------------------------------------

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

async function show(view, project) {
  state.view = view;
  if (project) state.project = project;
  document.body.dataset.view = view;
  renderNav();
  main.setAttribute('aria-labelledby', `tab-${view}`);
  try {
    if (view === 'projects') await loadProjects();
    else if (view === 'policy') await loadPolicy();
    else if (view === 'grants') await loadGrants();
    else await loadActivity();
  } catch (e) {
    fail(e);
  }
}

// --- projects ----------------------------------------------------------------

async function loadProjects() {
  state.projects = await invoke('settings_projects');
  if (state.view !== 'projects') return;
  const input = h('input', {
    id: 'project-add',
    type: 'text',
    spellcheck: 'false',
    placeholder: TEXT.projects.addPlaceholder,
    value: document.getElementById('project-add')?.value ?? '',
    onkeydown: (event) => {
      if (event.key === 'Enter') addProject(input);
    },
  });
  const rows = state.projects.map((info) => {
    const described = projectState(info);
    return h('li', { className: `project state-${described.kind}`, 'data-dir': info.dir },
      h('div', { className: 'project-text' },
        h('span', { className: 'project-dir mono' }, info.dir),
        h('span', { className: 'project-state' }, described.text)),
      h('div', { className: 'actions' },
        described.canTakeOver && h('button', {
          type: 'button', className: 'suggested', 'data-action': 'take-over',
          onclick: () => act(() => invoke('settings_take_over', { dir: info.dir }), TEXT.projects.tookOver(info.dir)),
        }, TEXT.projects.takeOver),
        h('button', { type: 'button', 'data-action': 'policy', onclick: () => show('policy', info.dir) },
          TEXT.projects.editPolicy),
        h('button', {
          type: 'button', className: 'destructive', 'data-action': 'remove',
          onclick: () => act(() => invoke('settings_remove_project', { dir: info.dir }), TEXT.projects.removed(info.dir)),
        }, TEXT.projects.remove)));
  });
  main.replaceChildren(
    h('h1', {}, TEXT.projects.heading),
    rows.length ? h('ul', { className: 'projects' }, rows) : h('p', { className: 'empty' }, TEXT.projects.none),
    h('div', { className: 'add-row' },
      h('label', { for: 'project-add' }, TEXT.projects.addLabel),
      input,
      h('button', { type: 'button', className: 'suggested', onclick: () => addProject(input) }, TEXT.projects.add)),
  );
}

async function act(work, done) {
  try {
    await work();
    say(done);
  } catch (e) {
    fail(e);
  }
  await show(state.view);
}

async function addProject(input) {
  const dir = typedEntry(input.value);
  if (!dir) return;
  try {
    const info = await invoke('settings_add_project', { dir });
    input.value = '';
    say(TEXT.projects.added(info.dir));
  } catch (e) {
    fail(e);
  }
  await loadProjects();
  document.getElementById('project-add')?.focus();
}

// --- policy --------------------------------------------------------------------

let loading = null;
let reloadAgain = false;

/** Reloads the policy view; a reload asked for during one runs once after it. */
async function loadPolicy() {
  if (loading) {
    reloadAgain = true;
    return loading;
  }
  loading = (async () => {
    do {
      reloadAgain = false;
      state.projects = await invoke('settings_projects');
      state.project = pickProject(state.projects, null, state.project);
      state.policy = state.project ? await invoke('settings_policy', { dir: state.project }) : null;
      if (state.view === 'policy') renderPolicy();
    } while (reloadAgain);
  })();
  try {
    await loading;
  } finally {
    loading = null;
  }
}

/** What is typed but not saved, and where the focus is: kept across a re-render. */
function keepInput() {
  const typed = new Map();
  for (const input of main.querySelectorAll('input[data-key]')) typed.set(input.dataset.key, input.value);
  const active = document.activeElement;
  return { typed, focus: active?.dataset?.focusKey ?? null, list: active?.closest?.('[data-list]') };
}

function restoreInput(kept) {
  for (const input of main.querySelectorAll('input[data-key]')) {
    if (kept.typed.has(input.dataset.key)) input.value = kept.typed.get(input.dataset.key);
  }
  if (!kept.focus) return;
  const again = [...main.querySelectorAll('[data-focus-key]')].find((el) => el.dataset.focusKey === kept.focus);
  if (again) again.focus();
}

function renderPolicy() {
  const kept = keepInput();
  const projects = state.projects.map((p) => p.dir);
  if (state.project && !projects.includes(state.project)) projects.push(state.project);
  const picker = h('select', {
    id: 'policy-project',
    onchange: (event) => show('policy', event.target.value),
  }, projects.map((dir) => h('option', { value: dir, selected: dir === state.project }, dir)));
  const head = h('div', { className: 'policy-head' },
    h('h1', {}, TEXT.policy.heading),
    projects.length ? h('label', { for: 'policy-project' }, TEXT.policy.projectLabel) : null,
    projects.length ? picker : null,
    h('span', { className: 'hint' }, TEXT.policy.keyboardHint));
  if (!state.policy) {
    main.replaceChildren(head, h('p', { className: 'empty' }, TEXT.policy.noProject));
    return;
  }
  main.replaceChildren(
    head,
    h('div', { className: 'columns' },
      fileColumn('global', TEXT.policy.global, fileModel(state.policy.global)),
      fileColumn('project', TEXT.policy.project, fileModel(state.policy.projectFile)),
      effectiveColumn(effectiveModel(state.policy.effective))),
  );
  restoreInput(kept);
}

function fileColumn(which, title, model) {
  const heading = h('header', { className: 'column-head' },
    h('h2', { id: `col-${which}` }, title),
    h('span', { className: 'mono path', title: model.path }, model.shown));
  if (!model.editable) {
    return h('section', { className: 'column file invalid', 'data-file': which, 'data-state': 'invalid', 'aria-labelledby': `col-${which}` },
      heading,
      h('div', { className: 'file-error', role: 'alert' },
        h('p', {}, TEXT.policy.invalid),
        h('p', { className: 'mono error-text', 'data-error': '' }, model.where ? `${model.where}: ${model.error}` : model.error)),
      model.text !== null ? h('pre', { className: 'mono file-text', tabindex: '0' }, model.text) : null);
  }
  return h('section', { className: 'column file', 'data-file': which, 'data-state': model.state, 'aria-labelledby': `col-${which}` },
    heading,
    model.state === 'missing' ? h('p', { className: 'hint' }, TEXT.policy.missing) : null,
    h('fieldset', { className: 'bools' },
      h('legend', { className: 'sr-only' }, title),
      model.bools.map((b) => boolControl(which, b))),
    model.lists.map((l) => listEditor(which, l)));
}

function boolControl(which, { field, value }) {
  const id = `bool-${which}-${field.replace('.', '-')}`;
  return h('div', { className: 'bool' },
    h('input', {
      type: 'checkbox', id, checked: value === true, 'data-field': field, 'data-focus-key': `bool:${which}:${field}`,
      onchange: (event) => change(which, { op: 'set', field, value: event.target.checked }),
    }),
    h('label', { for: id }, TEXT.bools[field] ?? field),
    value === null ? h('span', { className: 'hint' }, ` (${TEXT.policy.notSet})`) : null);
}

function listEditor(which, { list, entries }) {
  const key = `${which}:${list}`;
  const input = h('input', {
    type: 'text', spellcheck: 'false', 'data-key': key, 'data-focus-key': `add:${key}`,
    placeholder: TEXT.policy.addPlaceholder, 'aria-label': `${TEXT.lists[list]}: ${TEXT.policy.addPlaceholder}`,
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        addEntry(which, list, input);
      }
    },
  });
  const headingId = `list-${which}-${list.replace('.', '-')}`;
  return h('div', { className: 'list', 'data-list': list },
    h('h3', { id: headingId }, TEXT.lists[list] ?? list),
    h('ul', { 'aria-labelledby': headingId },
      entries.length
        ? entries.map((entry, i) => h('li', {
          className: 'entry', tabindex: '0', 'data-entry': entry, 'data-focus-key': `entry:${key}:${entry}`,
          onkeydown: (event) => {
            if (event.key === 'Delete' || event.key === 'Backspace') {
              event.preventDefault();
              removeEntry(which, list, entry, entries[i + 1] ?? entries[i - 1] ?? null);
            }
          },
        },
        h('span', { className: 'mono' }, entry),
        h('button', {
          type: 'button', className: 'remove', tabindex: '-1', 'aria-label': TEXT.policy.removeLabel(entry),
          title: TEXT.policy.removeLabel(entry), onclick: () => removeEntry(which, list, entry, null),
        }, '×')))
        : h('li', { className: 'empty' }, TEXT.policy.empty)),
    h('div', { className: 'add-row' }, input,
      h('button', { type: 'button', onclick: () => addEntry(which, list, input) }, TEXT.policy.addButton)));
}

/** When this page last wrote a file: the watch's echo of it is no news. */
let lastOwnWrite = 0;

async function change(which, policyChange) {
  lastOwnWrite = Date.now();
  try {
    const changed = await invoke('settings_change', { file: fileTarget(which, state.project), change: policyChange });
    say(changedMessage(changed));
    return true;
  } catch (e) {
    fail(e);
    return false;
  } finally {
    await loadPolicy();
  }
}

async function addEntry(which, list, input) {
  const entry = typedEntry(input.value);
  if (!entry) return;
  const key = input.dataset.key;
  const ok = await change(which, { op: 'add', list, entry });
  // Saved: the box empties (a failed add keeps the text to fix).
  const again = main.querySelector(`input[data-key="${CSS.escape(key)}"]`);
  if (again) {
    if (ok) again.value = '';
    again.focus();
  }
}

async function removeEntry(which, list, entry, next) {
  await change(which, { op: 'remove', list, entry });
  const key = `${which}:${list}`;
  const target = next
    ? [...main.querySelectorAll('[data-focus-key]')].find((el) => el.dataset.focusKey === `entry:${key}:${next}`)
    : main.querySelector(`input[data-key="${CSS.escape(key)}"]`);
  target?.focus();
}

function effectiveColumn(model) {
  const heading = h('header', { className: 'column-head' },
    h('h2', { id: 'col-effective' }, TEXT.policy.effective),
    h('span', { className: 'hint' }, TEXT.policy.effectiveNote));
  if (!model) {
    return h('section', { className: 'column effective', 'data-file': 'effective', 'aria-labelledby': 'col-effective' },
      heading, h('p', { className: 'file-error', role: 'alert' }, TEXT.policy.invalidEffective));
  }
  const badge = (e) => h('span', { className: `source source-${e.source}`, 'data-source': e.source, title: e.sourceMeaning }, e.sourceText);
  return h('section', { className: 'column effective', 'data-file': 'effective', 'aria-labelledby': 'col-effective' },
    heading,
    h('ul', { className: 'fields' }, model.fields.map((f) => h('li', { 'data-field': f.field, 'data-value': String(f.value), 'data-source': f.source },
      h('span', {}, `${TEXT.bools[f.field] ?? f.field}: ${f.value ? 'yes' : 'no'}`), badge(f)))),
    model.lists.map((l) => h('div', { className: 'list', 'data-list': l.list },
      h('h3', {}, TEXT.lists[l.list] ?? l.list),
      h('ul', {}, l.entries.length ? l.entries.map((e) => h('li', { className: 'entry', 'data-entry': e.entry, 'data-source': e.source },
        h('div', { className: 'entry-line' }, h('span', { className: 'mono' }, e.entry), badge(e)),
        e.meaning && e.meaning !== e.entry ? h('div', { className: 'meaning' }, e.meaning) : null,
        e.broad ? h('div', { className: 'flag flag-broad', 'data-flag': 'broad' }, `${TEXT.policy.broad}: ${e.broad}`) : null,
        e.redundantWith ? h('div', { className: 'flag flag-redundant', 'data-flag': 'redundant' }, TEXT.policy.redundant(e.redundantWith)) : null,
        e.usage ? h('div', { className: 'usage', 'data-hits': String(e.usage.hits) },
          h('span', {}, e.usage.text),
          e.usage.unused ? h('span', { className: 'unused', 'data-flag': 'unused', title: TEXT.policy.unusedTitle }, TEXT.policy.unused) : null)
          : null))
        : h('li', { className: 'empty' }, TEXT.policy.empty)))));
}

// --- grants ----------------------------------------------------------------------

async function loadGrants() {
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

// --- activity --------------------------------------------------------------------

/** The latest activity load: an older answer arriving late is dropped. */
let activitySeq = 0;

async function loadActivity() {
  const seq = ++activitySeq;
  const [projects, entries] = await Promise.all([
    invoke('settings_projects'),
    invoke('settings_activity', { filter: activityFilter(state.activity) }),
  ]);
  if (state.view !== 'activity' || seq !== activitySeq) return;
  // The filter controls stay as they are while typing: only the table is replaced.
  if (!main.querySelector('.filters')) {
    const update = (key) => (event) => {
      state.activity[key] = event.target.value;
      loadActivity().catch(fail);
    };
    const controls = h('div', { className: 'filters' },
      h('label', { for: 'f-project' }, TEXT.activity.project),
      h('select', { id: 'f-project', onchange: update('project') },
        h('option', { value: '' }, TEXT.activity.any),
        projects.map((p) => h('option', { value: p.dir, selected: p.dir === state.activity.project }, p.dir))),
      h('label', { for: 'f-decision' }, TEXT.activity.decision),
      h('select', { id: 'f-decision', onchange: update('decision') },
        ['any', 'allow', 'deny'].map((d) => h('option', { value: d, selected: d === state.activity.decision }, TEXT.activity[d]))),
      h('label', { for: 'f-text' }, TEXT.activity.text),
      h('input', { id: 'f-text', type: 'search', value: state.activity.text, oninput: update('text') }));
    main.replaceChildren(h('h1', {}, TEXT.activity.heading), controls, h('div', { id: 'activity-rows' }));
  }
  const table = entries.length
    ? h('table', { className: 'activity' },
      h('thead', {}, h('tr', {}, TEXT.activity.columns.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, entries.slice().reverse().map((e) => h('tr', { className: `outcome-${e.outcome}` },
        h('td', { className: 'mono' }, formatTime(e.ts)),
        h('td', { className: 'mono' }, e.project),
        h('td', { className: 'mono' }, `${e.operation} ${e.subject}`),
        h('td', {}, e.outcome),
        h('td', {}, e.by)))))
    : h('p', { className: 'empty' }, TEXT.activity.none);
  document.getElementById('activity-rows').replaceChildren(table);
}

// --- start ---------------------------------------------------------------------------

async function start() {
  document.title = TEXT.title;
  await listen('settings:policy-changed', () => {
    if (state.view !== 'policy') return;
    const echo = Date.now() - lastOwnWrite < 2000;
    loadPolicy().then(() => echo || say(TEXT.policy.reloaded)).catch(fail);
  });
  await listen('settings:show', (event) => {
    const { view, project } = event.payload ?? {};
    show(VIEWS.includes(view) ? view : state.view, project).catch(fail);
  });
  const first = parseQuery(window.location.search);
  await show(first.view, first.project);
  document.body.dataset.ready = 'true';
}

start().catch(fail);
