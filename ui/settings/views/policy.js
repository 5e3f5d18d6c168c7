// The Policy view: the global file, the project file and the effective policy of one
// project, side by side; every change is one settings_change command on one file.

import { invoke } from '../ipc.js';
import { h } from '../dom.js';
import { TEXT } from '../text.js';
import { changedMessage, effectiveModel, fileModel, fileTarget, pickProject, typedEntry } from '../model.js';
import { fail, main, say, show, state } from '../app.js';

// --- policy --------------------------------------------------------------------

let loading = null;
let reloadAgain = false;

/** Reloads the policy view; a reload asked for during one runs once after it. */
export async function loadPolicy() {
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
  applyFocusEntry();
}

/**
 * Highlights what another view asked to see (`state.focusEntry`: `{project, list, entry?,
 * which?}`) — the entry that answered an activity row, or the list a prompt would change —
 * and focuses it once. The highlight stays across reloads while that project is shown.
 */
function applyFocusEntry() {
  const want = state.focusEntry;
  if (!want || want.project !== state.project) return;
  const list = `[data-list="${CSS.escape(want.list)}"]`;
  let target = null;
  if (want.entry) {
    const entry = `li[data-entry="${CSS.escape(want.entry)}"]`;
    const hits = [...main.querySelectorAll(`section[data-file] ${list} ${entry}`)];
    for (const li of hits) {
      li.classList.add('focused-entry');
      li.dataset.focused = 'true';
    }
    // Its own file's column when it has one (a default lives only in the effective one).
    target = main.querySelector(`section[data-file="${want.which}"] ${list} ${entry}`) ?? hits[0] ?? null;
    if (target && !target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
  } else {
    const box = main.querySelector(`section[data-file="project"] ${list}`);
    box?.classList.add('focused-list');
    if (box) box.dataset.focused = 'true';
    target = box?.querySelector('input[data-key]') ?? null;
  }
  if (target && !want.done) {
    want.done = true;
    target.focus();
    target.scrollIntoView({ block: 'center' });
  }
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

/** Whether a policy-file change event is the echo of this page's own write. */
export const isOwnEcho = () => Date.now() - lastOwnWrite < 2000;

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

