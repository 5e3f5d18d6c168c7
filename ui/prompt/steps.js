// The second steps: a file answer's scope and change, and a sensitive path's second confirmation.

import { invoke } from '../shared/ipc.js';
import { $, body, setText, showError, state } from './page.js';
import { applyDisabled, arm, focusDefault } from './delay.js';
import { limitsChosen } from './request.js';
import { TEXT } from './text.js';
import {
  asksCheck, coversText, diffLabel, diffLines, scopeNote, scopePending, selectedOption,
  startScope,
} from './model.js';

export function showStep(step) {
  state.step = step;
  $('step-main').hidden = step !== 'main';
  $('step-scope').hidden = step !== 'scope';
  $('step-confirm').hidden = step !== 'confirm';
  $('actions-main').hidden = step !== 'main';
  $('actions-step').hidden = step === 'main';
  // "Never" takes access away: no second confirmation for it.
  $('confirm-row').hidden = !asksCheck(step, state.view, state.pending);
  $('confirm-check').checked = false;
  body.dataset.step = step;
  showError('');
  applyDisabled();
}

// Allowing a sensitive path for the session asks once more, naming what it holds.
export function openConfirm() {
  const view = state.view;
  state.pending = { choice: 'session', limits: limitsChosen() };
  const count = view.bulk ? view.bulk.count : 1;
  setText('confirm-title', TEXT.confirm.title(view.session_scope.text));
  setText('confirm-kind', view.operation);
  setText('confirm-subject', view.session_scope.text);
  $('confirm-subject').title = view.session_scope.full;
  setText('confirm-text', TEXT.confirm.text(
    view.program.name, view.operation, view.session_scope.text, view.session_holder, count));
  setText('confirm-label', TEXT.confirm.check(view.sensitive.location.text, view.sensitive.what));
  setText('confirm-button-label', TEXT.confirm.button);
  $('confirm').classList.add('destructive');
  $('confirm').classList.remove('suggested');
  showStep('confirm');
  arm();
}

// `name` is a button: project, global (allow) or never, never_global (deny). The app
// previews the file's change first; nothing is written before Confirm.
export async function openScope(name) {
  const view = state.view;
  const pending = scopePending(name);
  state.busy = true;
  applyDisabled();
  let preview;
  try {
    preview = await invoke('dialog_preview', { id: view.id, target: pending.target, never: pending.never });
  } catch (error) {
    state.busy = false;
    showError(String(error));
    applyDisabled();
    return;
  }
  state.busy = false;
  // The prompt went (answered elsewhere, or withdrawn) while the preview was on its way.
  if (!state.view || state.view.id !== view.id) return;
  state.pending = pending;
  state.preview = preview;
  state.scope = startScope(preview);
  setText('scope-title', TEXT.scope.titles[name]);
  renderScopeOptions();
  renderDiff();
  setText('confirm-button-label', TEXT.scope.buttons[name]);
  if (pending.never) {
    $('confirm').classList.add('destructive');
    $('confirm').classList.remove('suggested');
    showStep('scope');
    arm();
    return;
  }
  const sensitive = !!view.sensitive;
  $('confirm').classList.toggle('destructive', sensitive);
  $('confirm').classList.toggle('suggested', !sensitive);
  if (sensitive) {
    setText('confirm-label', TEXT.scope.check(
      view.sensitive.location.text, view.sensitive.what, pending.target === 'global'));
  }
  showStep('scope');
  arm();
}

function renderScopeOptions() {
  const list = $('scope-options');
  list.replaceChildren();
  state.preview.options.forEach((option, index) => {
    const label = document.createElement('label');
    label.className = 'scope-option';
    label.title = option.root.full;
    const input = document.createElement('input');
    input.type = 'radio';
    input.name = 'scope';
    input.value = option.kind;
    input.id = `scope-${option.kind}`;
    input.checked = option.kind === state.scope;
    input.setAttribute('aria-describedby', `scope-root-${option.kind}`);
    input.addEventListener('change', () => {
      state.scope = option.kind;
      renderDiff();
    });
    const what = document.createElement('span');
    what.className = 'what';
    what.textContent = TEXT.scope.option(index + 1, option.label);
    const root = document.createElement('span');
    root.className = 'root';
    root.id = `scope-root-${option.kind}`;
    // rtl keeps the end of a long path visible; the bidi isolate keeps it in order.
    const bdi = document.createElement('bdi');
    bdi.textContent = option.root.text;
    root.append(bdi);
    const tags = document.createElement('span');
    tags.className = 'tags';
    if (option.already_listed) {
      const tag = document.createElement('span');
      tag.className = 'tag';
      tag.textContent = TEXT.scope.listed;
      tag.title = TEXT.scope.listedTitle;
      tags.append(tag);
    }
    if (option.covers_sensitive.length) {
      const tag = document.createElement('span');
      tag.className = 'tag danger';
      tag.textContent = TEXT.scope.secrets;
      tag.title = TEXT.scope.secretsTitle(option.covers_sensitive);
      tags.append(tag);
    }
    label.append(input, what, root, tags);
    list.append(label);
  });
}

/** The file's change for the scope chosen, and what it does from then on. */
export function renderDiff() {
  const preview = state.preview;
  const option = selectedOption(preview, state.scope);
  setText('preview-file', preview.file.text);
  $('preview-file').title = preview.file.full;
  $('preview-new').hidden = preview.file_exists;
  const diff = $('preview-diff');
  diff.replaceChildren();
  for (const line of diffLines(preview, option)) {
    const span = document.createElement('span');
    if (line.cls) span.className = line.cls;
    span.textContent = line.text + '\n';
    diff.append(span);
  }
  diff.setAttribute('aria-label', diffLabel(preview, option));
  const never = !!(state.pending && state.pending.never);
  setText('scope-note', scopeNote(state.view, preview, option, never));
  const sensitive = $('scope-sensitive');
  const covers = option ? option.covers_sensitive : [];
  sensitive.hidden = covers.length === 0 || !!(state.view && state.view.sensitive);
  sensitive.className = 'warning soft';
  sensitive.textContent = coversText(covers);
  applyDisabled();
}

export function back() {
  state.pending = null;
  state.preview = null;
  showStep('main');
  focusDefault();
}
