// The Canaries view: the decoy credential files whose sandboxed read stops the run, each
// with whether its file is there and Remove; a path box adds one. Every change goes
// through settings_canary_add / settings_canary_remove (the core's operations, as
// `ctl canary` does); a refusal (the wire would never trip) is the core's sentence.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { canaryAddedMessage, canaryPath, canaryRowModel } from '../canary-model.js';
import { fail, main, say, state } from '../app.js';

/** Loads the canaries and draws the view; what is typed into the path box stays. */
export async function loadCanaries() {
  const items = await invoke('settings_canaries');
  if (state.view !== 'canaries') return;
  const typed = document.getElementById('canary-path');
  if (typed) renderList(items);
  else render(items);
}

function render(items) {
  const t = TEXT.canaries;
  const input = h('input', {
    id: 'canary-path',
    type: 'text',
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: t.pathPlaceholder,
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        add().catch(fail);
      }
    },
    oninput: () => input.removeAttribute('aria-invalid'),
  });
  main.replaceChildren(
    h('h1', {}, t.heading),
    h('p', { className: 'hint canary-note' }, t.note),
    h('div', { id: 'canary-list' }),
    h('label', { for: 'canary-path', className: 'caption' }, t.pathLabel),
    h('div', { className: 'add-row canary-add-row' },
      input,
      h('button', { type: 'button', id: 'canary-add', className: 'suggested', onclick: () => add().catch(fail) }, t.add)));
  renderList(items);
}

function renderList(items) {
  const t = TEXT.canaries;
  const box = document.getElementById('canary-list');
  if (!box) return;
  box.replaceChildren(items.length
    ? h('ul', { className: 'canaries' }, items.map((item) => {
      const m = canaryRowModel(item, state.home);
      return h('li', { 'data-canary': m.full, 'data-present': String(m.present) },
        h('div', { className: 'project-text' },
          h('span', { className: 'mono', title: m.full }, m.path),
          h('span', { className: m.present ? 'project-state' : 'project-state canary-missing' }, m.state)),
        h('button', {
          type: 'button', className: 'destructive', 'aria-label': m.removeLabel,
          onclick: () => remove(m).catch(fail),
        }, t.remove));
    }))
    : h('p', { className: 'empty' }, t.none));
}

async function add() {
  const input = document.getElementById('canary-path');
  const parsed = canaryPath(input.value, state.home);
  if (parsed.error) {
    input.setAttribute('aria-invalid', 'true');
    say(parsed.error, 'error');
    return;
  }
  try {
    const added = await invoke('settings_canary_add', { path: parsed.path });
    input.value = '';
    say(canaryAddedMessage(added, state.home));
  } catch (e) {
    // The core's sentence: which entry lets sandboxed programs read it without asking.
    input.setAttribute('aria-invalid', 'true');
    fail(e);
  }
  await loadCanaries();
  input.focus();
}

async function remove(m) {
  await invoke('settings_canary_remove', { path: m.full });
  say(TEXT.canaries.removed(m.path));
  await loadCanaries();
  // The row is gone: the focus goes to the path box rather than to the page.
  document.getElementById('canary-path')?.focus();
}
