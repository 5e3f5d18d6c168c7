// Answering: a choice answers at once or opens its second step; dialog_answer sends it.

import { invoke } from '../shared/ipc.js';
import { showError, state } from './page.js';
import { applyDisabled, canConfirm } from './delay.js';
import { limitsChosen } from './request.js';
import { openConfirm, openScope } from './steps.js';
import { choiceAction, confirmedAnswer } from './model.js';

/** Sends the answer; the page stays busy until the app's next update. */
export async function answer(choice, extra) {
  const view = state.view;
  if (!view || state.busy) return;
  state.busy = true;
  applyDisabled();
  const request = Object.assign({ id: view.id, choice }, extra || {});
  try {
    await invoke('dialog_answer', { request });
    // The next update moves on (or hides the window); stay busy until then.
  } catch (error) {
    state.busy = false;
    showError(String(error));
    applyDisabled();
  }
}

/** A choice by name (a button's data-choice, or its key): "bulk" is the session for all under it. */
export function choose(key) {
  const action = choiceAction(state.view, key, limitsChosen());
  if (!action) return;
  if (action.answer) return answer(action.answer, action.extra);
  if (action.step === 'confirm') return openConfirm();
  return openScope(action.name);
}

/** The second step's Confirm. */
export function confirm() {
  if (!state.pending || !canConfirm()) return;
  const sensitive = !!(state.view && state.view.sensitive);
  const { choice, extra } = confirmedAnswer(state.pending, state.scope, sensitive);
  return answer(choice, extra);
}

// Opens the settings window on this prompt's project and the list it would change; the
// prompt keeps waiting (it is answered here or elsewhere, never by this).
export async function editPolicy() {
  const view = state.view;
  if (!view) return;
  try {
    await invoke('dialog_edit_policy', { id: view.id });
  } catch (error) {
    showError(String(error));
  }
}
