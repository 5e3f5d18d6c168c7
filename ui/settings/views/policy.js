// The Policy view: the global file, the project file and the effective policy of one
// project, side by side; every change is one settings_change command on one file.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import {
  changedMessage, checkModel, effectiveModel, fileModel, fileTarget, homeRelative, isUndoKey, pickedEntry, pickProject,
  typedEntry, undoneMessage,
} from '../model.js';
import { browseButton } from '../picker.js';
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
  }, projects.map((dir) => h('option', { value: dir, selected: dir === state.project, title: dir }, homeRelative(dir, state.home))));
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
      conflictBlock(which, model.conflicts),
      h('div', { className: 'file-error', role: 'alert' },
        h('p', {}, TEXT.policy.invalid),
        h('p', { className: 'mono error-text', 'data-error': '' }, model.where ? `${model.where}: ${model.error}` : model.error),
        h('button', { type: 'button', 'data-action': 'open-in-editor', onclick: () => openInEditor(which) }, TEXT.policy.openInEditor)),
      model.text !== null ? h('pre', { className: 'mono file-text', tabindex: '0' }, model.text) : null);
  }
  return h('section', { className: 'column file', 'data-file': which, 'data-state': model.state, 'aria-labelledby': `col-${which}` },
    heading,
    conflictBlock(which, model.conflicts),
    model.state === 'missing' ? h('p', { className: 'hint' }, TEXT.policy.missing) : null,
    h('fieldset', { className: 'bools' },
      h('legend', { className: 'sr-only' }, title),
      model.bools.map((b) => boolControl(which, b))),
    model.lists.map((l) => listEditor(which, l)),
    model.platform.length ? platformList(model.platform.map((p) => ({ ...p, source: null }))) : null);
}

/**
 * The fields of this file the user's opencode-landstrip rejects (or, its version unknown,
 * may reject), each with a button that removes it through the same change every edit makes.
 */
function conflictBlock(which, conflicts) {
  if (!conflicts.length) return null;
  return h('div', { className: 'plugin-conflicts', 'data-plugin-conflicts': which },
    conflicts.map((c) => h('p', {
      className: c.rejected ? 'file-error' : 'hint',
      role: c.rejected ? 'alert' : null,
      'data-conflict': c.field,
      'data-rejected': String(c.rejected),
    },
    h('span', {}, c.rejected ? TEXT.policy.pluginRejects(c.field, c.version) : TEXT.policy.pluginMayReject(c.field)),
    ' ',
    h('button', {
      type: 'button',
      'data-action': 'remove-field',
      'data-field': c.field,
      onclick: () => change(which, { op: 'removefield', field: c.field }),
    }, TEXT.policy.removeField(c.field)))));
}

/**
 * The later plugin's shell and windows fields, read-only: each with its value (and, in
 * the effective column, the layer that set it) and one line on what it does.
 */
function platformList(fields, badge = () => null) {
  return h('div', { className: 'platform', 'data-platform': '' },
    h('h3', {}, TEXT.platform.heading),
    h('ul', {}, fields.map((p) => h('li', { 'data-platform-field': p.field, 'data-value': p.value ?? '' },
      h('div', { className: 'entry-line' },
        h('span', {}, `${TEXT.platform.fields[p.field] ?? p.field}: `),
        h('span', { className: 'mono' }, p.value ?? TEXT.platform.notSet),
        p.source ? badge(p) : null),
      h('div', { className: 'meaning' }, TEXT.platform.notes[p.field] ?? '')))),
    h('p', { className: 'hint' }, TEXT.platform.editHint));
}

/** Opens a file that does not parse in the user's editor: the app resolves the target. */
async function openInEditor(which) {
  try {
    const file = await invoke('settings_open_in_editor', { file: fileTarget(which, state.project) });
    say(TEXT.policy.openedInEditor(file));
  } catch (e) {
    fail(e);
  }
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
    'aria-describedby': checkId(key),
    // A re-render (a file's change echoing back) keeps the field marked.
    'aria-invalid': isInvalid(key) ? 'true' : null,
    oninput: () => typed({ which, list, key, input, replacing: null }),
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        addEntry(which, list, input);
      }
    },
  });
  const headingId = `list-${which}-${list.replace('.', '-')}`;
  const note = TEXT.listNotes[list];
  return h('div', { className: 'list', 'data-list': list },
    h('h3', { id: headingId }, TEXT.lists[list] ?? list),
    note ? h('p', { className: 'hint list-note', 'data-note': '' }, note) : null,
    h('ul', { 'aria-labelledby': headingId },
      entries.length
        ? entries.map((entry, i) => (isEditing(which, list, entry)
          ? editRow(which, list, entry)
          : entryRow(which, list, entry, entries[i + 1] ?? entries[i - 1] ?? null)))
        : h('li', { className: 'empty' }, TEXT.policy.empty)),
    h('div', { className: 'add-row' }, input,
      list.startsWith('filesystem.') ? browseButton(input, {
        label: TEXT.picker.entryLabel(TEXT.lists[list] ?? list),
        start: () => (which === 'project' ? state.project : state.home),
        toText: (picked) => pickedEntry(picked, { which, project: state.project, home: state.home }),
        compact: true,
      }) : null,
      h('button', { type: 'button', onclick: () => addEntry(which, list, input) }, TEXT.policy.addButton)),
    checkArea(key, () => saveAdd(which, list, true)));
}

function entryRow(which, list, entry, next) {
  const key = `${which}:${list}`;
  return h('li', {
    className: 'entry', tabindex: '0', 'data-entry': entry, 'data-focus-key': `entry:${key}:${entry}`,
    onkeydown: (event) => {
      if (event.target !== event.currentTarget) return;
      if (event.key === 'Delete' || event.key === 'Backspace') {
        event.preventDefault();
        removeEntry(which, list, entry, next);
      } else if (event.key === 'Enter' || event.key === 'F2') {
        event.preventDefault();
        startEdit(which, list, entry);
      }
    },
    ondblclick: () => startEdit(which, list, entry),
  },
  h('span', { className: 'mono' }, entry),
  h('button', {
    type: 'button', className: 'remove', tabindex: '-1', 'aria-label': TEXT.policy.removeLabel(entry),
    title: TEXT.policy.removeLabel(entry), onclick: () => removeEntry(which, list, entry, null),
  }, '×'));
}

// --- edit in place, and the check of what is typed ---------------------------------

/** The entry being edited in place, if any: it stays an input across re-renders. */
let editing = null;

const isEditing = (which, list, entry) =>
  editing !== null && editing.which === which && editing.list === list && editing.entry === entry;

const editKey = (which, list, entry) => `edit:${which}:${list}:${entry}`;

function editRow(which, list, entry) {
  const key = editKey(which, list, entry);
  const input = h('input', {
    type: 'text', spellcheck: 'false', className: 'edit', value: entry,
    'data-key': key, 'data-focus-key': key, 'aria-label': TEXT.policy.editLabel(entry),
    'aria-describedby': checkId(key),
    'aria-invalid': isInvalid(key) ? 'true' : null,
    oninput: () => typed({ which, list, key, input, replacing: entry }),
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        saveEdit(which, list, entry, false);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        cancelEdit(which, list, entry);
      }
    },
  });
  return h('li', { className: 'entry editing', 'data-entry': entry, 'data-editing': '' },
    input,
    checkArea(key, () => saveEdit(which, list, entry, true), () => cancelEdit(which, list, entry)));
}

function startEdit(which, list, entry) {
  editing = { which, list, entry };
  checks.delete(editKey(which, list, entry));
  renderPolicy();
  const input = findInput(editKey(which, list, entry));
  if (input) {
    input.value = entry;
    input.focus();
    input.select();
  }
}

function cancelEdit(which, list, entry) {
  editing = null;
  checks.delete(editKey(which, list, entry));
  renderPolicy();
  focusEntry(which, list, entry);
}

const findInput = (key) => main.querySelector(`input[data-key="${CSS.escape(key)}"]`);

function focusEntry(which, list, entry) {
  const focusKey = `entry:${which}:${list}:${entry}`;
  [...main.querySelectorAll('[data-focus-key]')].find((el) => el.dataset.focusKey === focusKey)?.focus();
}

/**
 * The last check of each input, by its data-key: `entry` checked, the core's EntryCheck,
 * and whether the row waits for "Save anyway" (a broad entry on Enter).
 */
const checks = new Map();

/** Whether the last check of the input `key` found what it holds invalid. */
const isInvalid = (key) => checkModel(checks.get(key)?.result ?? null).invalid;
const checkIds = new Map();

/** A stable element id for an input's check area (keys hold paths, ids must not). */
function checkId(key) {
  if (!checkIds.has(key)) checkIds.set(key, `check-${checkIds.size + 1}`);
  return checkIds.get(key);
}

/** The area under an input: what it reads as, its flags, and the broad confirmation. */
function checkArea(key, onConfirm, onCancel = () => {
  checks.delete(key);
  renderCheck(key);
  findInput(key)?.focus();
}) {
  const area = h('div', { className: 'entry-check', id: checkId(key), 'data-check': key, 'aria-live': 'polite' });
  area.confirm = onConfirm;
  area.cancel = onCancel;
  fillCheck(area, checks.get(key));
  return area;
}

function fillCheck(area, kept) {
  const model = checkModel(kept?.result ?? null);
  const lines = model.lines.map((line) => h('div', {
    className: `flag flag-${line.kind}`, 'data-flag': line.kind,
    role: line.kind === 'invalid' ? 'alert' : null,
  }, line.text));
  const confirm = kept?.confirming && model.broad
    ? h('div', { className: 'confirm-broad', role: 'alert', 'data-confirm': '' },
      h('span', {}, TEXT.policy.confirmBroad),
      h('button', { type: 'button', className: 'destructive', 'data-action': 'save-anyway', onclick: () => area.confirm() }, TEXT.policy.saveAnyway),
      h('button', { type: 'button', 'data-action': 'cancel', onclick: () => area.cancel() }, TEXT.policy.cancel))
    : null;
  area.replaceChildren(...lines, confirm ?? '');
  const input = findInput(area.dataset.check);
  if (input) {
    if (model.invalid) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

function renderCheck(key) {
  const area = [...main.querySelectorAll('[data-check]')].find((el) => el.dataset.check === key);
  if (area) fillCheck(area, checks.get(key));
}

const timers = new Map();
const CHECK_DELAY_MS = 250;

/** Input typed: check it once typing pauses. */
function typed(target) {
  clearTimeout(timers.get(target.key));
  checks.delete(target.key);
  renderCheck(target.key);
  if (target.input.value.trim() === '') return;
  timers.set(target.key, setTimeout(() => {
    timers.delete(target.key);
    check(target.which, target.list, target.key, target.input.value, target.replacing).catch(fail);
  }, CHECK_DELAY_MS));
}

/** Checks `value` through the core (nothing is written) and shows the result if still current. */
async function check(which, list, key, value, replacing, confirming = false) {
  const entry = value.trim();
  const result = await invoke('settings_check_entry', {
    file: fileTarget(which, state.project), project: state.project, list, entry, replacing,
  });
  const input = findInput(key);
  if (input && input.value.trim() !== entry) return null;
  checks.set(key, { entry, result, confirming });
  renderCheck(key);
  return result;
}

/**
 * Whether what `key`'s input holds may be saved now: invalid never; broad only when
 * `confirmed` (else the row asks for "Save anyway" and nothing is written).
 */
async function mayWrite(which, list, key, value, replacing, confirmed) {
  clearTimeout(timers.get(key));
  const result = await check(which, list, key, value, replacing, !confirmed);
  if (!result || result.invalid) {
    findInput(key)?.focus();
    return false;
  }
  if (result.broad && !confirmed) {
    findInput(key)?.focus();
    return false;
  }
  return true;
}

async function saveEdit(which, list, old, confirmed) {
  const key = editKey(which, list, old);
  const input = findInput(key);
  if (!input) return;
  const value = input.value;
  const entry = value.trim();
  if (entry === old) {
    cancelEdit(which, list, old);
    return;
  }
  try {
    if (!(await mayWrite(which, list, key, value, old, confirmed))) return;
  } catch (e) {
    fail(e);
    return;
  }
  editing = null;
  checks.delete(key);
  const ok = await change(which, { op: 'replace', list, old, new: entry }, confirmed);
  if (ok) {
    focusEntry(which, list, entry);
  } else {
    // Not saved: back to the input with what was typed.
    editing = { which, list, entry: old };
    renderPolicy();
    const again = findInput(key);
    if (again) {
      again.value = value;
      again.focus();
    }
  }
}


async function change(which, policyChange, allowBroad = false) {
  try {
    const changed = await invoke('settings_change', { file: fileTarget(which, state.project), change: policyChange, allowBroad });
    say(changedMessage(changed));
    if (changed.written) offerUndo();
    return true;
  } catch (e) {
    fail(e);
    return false;
  } finally {
    await loadPolicy();
  }
}

async function addEntry(which, list, input) {
  await saveAdd(which, list, false, input);
}

/** Saves the add input of `list`: checked first (invalid: never; broad: only confirmed). */
async function saveAdd(which, list, confirmed, input = findInput(`${which}:${list}`)) {
  if (!input) return;
  const key = input.dataset.key;
  try {
    if (!(await mayWrite(which, list, key, input.value, null, confirmed))) return;
  } catch (e) {
    fail(e);
    return;
  }
  checks.delete(key);
  const entry = typedEntry(input.value);
  const ok = await change(which, { op: 'add', list, entry }, confirmed);
  // Saved: the box empties (a failed add keeps the text to fix).
  const again = findInput(key);
  if (again) {
    if (ok) again.value = '';
    again.focus();
  }
}

// --- undo of the last save ---------------------------------------------------------

const undoButton = document.getElementById('undo');
undoButton.textContent = TEXT.policy.undo;
undoButton.title = TEXT.policy.undoTitle;
undoButton.addEventListener('click', () => undo());

/** Shows the "Undo" button beside the status line (until an undo is tried). */
function offerUndo() {
  undoButton.hidden = false;
}

/** Undoes the last save (the core refuses when the file changed since) and says which file. */
async function undo() {
  undoButton.hidden = true;
  try {
    say(undoneMessage(await invoke('settings_undo')));
  } catch (e) {
    fail(e);
  } finally {
    await loadPolicy();
  }
}

document.addEventListener('keydown', (event) => {
  if (state.view !== 'policy' || !isUndoKey(event, event.target)) return;
  event.preventDefault();
  undo();
});

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
    model.platform.length ? platformList(model.platform, badge) : null,
    model.lists.map((l) => h('div', { className: 'list', 'data-list': l.list },
      h('h3', {}, TEXT.lists[l.list] ?? l.list),
      TEXT.listNotes[l.list] ? h('p', { className: 'hint list-note', 'data-note': '' }, TEXT.listNotes[l.list]) : null,
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

