// The Remote machines view: each remote with its state in words (and what the person does
// about it), how many of its requests wait here, and Remove behind a confirmation; a form
// adds one. Changes go through settings_remote_add / settings_remote_remove (the core's
// operations, as `ctl remote` does); the list is redrawn when the app says the remotes
// changed (main.js listens), so what is typed into the form stays.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { remoteForm, remoteRowModel } from '../remotes-model.js';
import { fail, main, say, state } from '../app.js';

/** The form's fields: key, element id, and whether the input is a path (monospace). */
const FIELDS = [
  ['name', 'remote-name'],
  ['destination', 'remote-destination'],
  ['port', 'remote-port'],
  ['identity', 'remote-identity'],
  ['knownHosts', 'remote-known-hosts'],
];

/** The remote whose Remove waits for its confirmation, if any. */
let confirming = null;

/** Loads the remotes and draws the view; the form (and what is typed) stays if drawn. */
export async function loadRemotes() {
  const remotes = await invoke('settings_remotes');
  if (state.view !== 'remotes') return;
  if (document.getElementById('remote-list')) renderList(remotes);
  else render(remotes);
}

function render(remotes) {
  const t = TEXT.remotes;
  confirming = null;
  main.replaceChildren(
    h('h1', {}, t.heading),
    h('p', { className: 'hint remotes-note' }, t.note),
    h('div', { id: 'remote-list' }),
    h('h2', { className: 'remote-add-heading' }, t.addHeading),
    h('form', {
      id: 'remote-form',
      className: 'remote-form',
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        add().catch(fail);
      },
    },
    ...FIELDS.map(([key, id]) => field(key, id)),
    h('p', { className: 'field-error', id: 'remote-error', role: 'alert' }),
    h('div', { className: 'actions' },
      h('button', { type: 'submit', id: 'remote-add', className: 'suggested' }, t.add))),
  );
  renderList(remotes);
}

function field(key, id) {
  const t = TEXT.remotes;
  const path = key === 'identity' || key === 'knownHosts';
  const input = h('input', {
    id,
    type: 'text',
    name: key,
    spellcheck: 'false',
    autocomplete: 'off',
    inputmode: key === 'port' ? 'numeric' : null,
    className: path ? 'mono' : null,
    placeholder: t[`${key}Placeholder`],
    'aria-describedby': 'remote-error',
    oninput: () => input.removeAttribute('aria-invalid'),
  });
  return h('div', { className: `remote-field remote-field-${key}` },
    h('label', { for: id }, t[`${key}Label`]),
    input);
}

function renderList(remotes) {
  const box = document.getElementById('remote-list');
  if (!box) return;
  // A confirmation open for a remote that went meanwhile is dropped.
  if (confirming && !remotes.some((r) => r.name === confirming)) confirming = null;
  const focused = document.activeElement?.id;
  box.replaceChildren(remotes.length
    ? h('ul', { className: 'remotes' }, remotes.map(row))
    : h('p', { className: 'empty' }, TEXT.remotes.none));
  // A redraw (the state changed) keeps the focus on the same control.
  if (focused && box.querySelector(`#${CSS.escape(focused)}`)) document.getElementById(focused).focus();
}

function row(view) {
  const t = TEXT.remotes;
  const m = remoteRowModel(view, state.home);
  const id = `remote-${m.name}`;
  return h('li', {
    className: `remote tone-${m.tone}`,
    'data-remote': m.name,
    'data-state': m.state,
    'aria-labelledby': `${id}-name`,
  },
  h('div', { className: 'remote-head' },
    h('h2', { id: `${id}-name`, className: 'remote-name' }, m.name),
    h('span', { className: `remote-state state-${m.tone}`, 'data-state-label': '' }, m.label),
    h('span', { className: 'remote-pending', 'data-pending': String(m.pending) }, m.waiting)),
  h('p', { className: 'remote-where mono' }, m.where),
  m.detail ? h('p', { className: 'remote-detail' }, m.detail) : null,
  m.hint ? h('p', { className: 'remote-hint', 'data-hint': '' }, m.hint) : null,
  confirming === m.name ? confirmRow(m, id) : h('div', { className: 'remote-foot' },
    h('span', { className: 'hint remote-since', title: m.sinceFull }, m.since),
    h('button', {
      type: 'button',
      id: `${id}-remove`,
      'aria-label': m.removeLabel,
      onclick: () => {
        confirming = m.name;
        loadRemotes().then(() => document.getElementById(`${id}-confirm`)?.focus()).catch(fail);
      },
    }, t.remove)));
}

function confirmRow(m, id) {
  const t = TEXT.remotes;
  const cancel = () => {
    confirming = null;
    loadRemotes().then(() => document.getElementById(`${id}-remove`)?.focus()).catch(fail);
  };
  return h('div', {
    className: 'confirm-remove',
    role: 'group',
    'aria-labelledby': `${id}-confirm-text`,
    onkeydown: (event) => {
      if (event.key === 'Escape') {
        event.preventDefault();
        cancel();
      }
    },
  },
  h('p', { id: `${id}-confirm-text` }, m.confirm),
  h('button', { type: 'button', id: `${id}-confirm`, className: 'destructive', onclick: () => remove(m.name).catch(fail) }, t.confirmRemove),
  h('button', { type: 'button', id: `${id}-cancel`, onclick: cancel }, t.cancel));
}

async function add() {
  const t = TEXT.remotes;
  const fields = Object.fromEntries(FIELDS.map(([key, id]) => [key, document.getElementById(id).value]));
  const error = document.getElementById('remote-error');
  const checked = remoteForm(fields, state.home);
  for (const [, id] of FIELDS) document.getElementById(id).removeAttribute('aria-invalid');
  if (checked.error) {
    const input = document.getElementById(FIELDS.find(([key]) => key === checked.field)[1]);
    input.setAttribute('aria-invalid', 'true');
    error.textContent = checked.error;
    input.focus();
    return;
  }
  error.textContent = '';
  try {
    const added = await invoke('settings_remote_add', { remote: checked.remote });
    for (const [, id] of FIELDS) document.getElementById(id).value = '';
    say(t.added(added.name, added.destination));
  } catch (e) {
    // The core's sentence (a name taken, say), next to the form.
    error.textContent = String(e);
    say(TEXT.error(String(e)), 'error');
    return;
  }
  await loadRemotes();
  document.getElementById('remote-name')?.focus();
}

async function remove(name) {
  confirming = null;
  try {
    await invoke('settings_remote_remove', { name });
    say(TEXT.remotes.removed(name));
  } catch (e) {
    fail(e);
  }
  await loadRemotes();
  // The row is gone: the focus goes to the form rather than to the page.
  document.getElementById('remote-name')?.focus();
}
