// The input delay (no input for a moment after a prompt appears) and which controls take input.

import { $, allButtons, body, mainButtons, state } from './page.js';
import { confirmAllowed, stepDefault } from './model.js';

// Long enough that a keystroke meant for another window cannot answer a prompt that just
// appeared; the tests wait for data-armed (tests/src/webdriver.rs).
const DELAY_MS = 500;

/** Whether input is ignored now: during the delay, while an answer is on its way, or with no prompt. */
export const blocked = () => !state.armed || state.busy || !state.view;

/** Whether the second step's Confirm may be pressed. */
export function canConfirm() {
  return confirmAllowed({
    step: state.step,
    preview: state.preview,
    scope: state.scope,
    view: state.view,
    pending: state.pending,
    checked: $('confirm-check').checked,
  });
}

export function applyDisabled() {
  const off = blocked();
  for (const button of allButtons()) {
    button.disabled = off || button.dataset.off === 'true';
  }
  $('confirm-check').disabled = off;
  $('lifetime').disabled = off;
  $('program-only').disabled = off;
  if (!off && state.step !== 'main') {
    $('confirm').disabled = !canConfirm();
  }
}

// The delay runs only while the page is visible: a prompt rendered into the hidden
// window starts its delay when the window appears, never before.
export function arm() {
  clearTimeout(state.timer);
  state.armed = false;
  body.dataset.armed = 'false';
  $('dialog').setAttribute('aria-busy', 'true');
  const delay = $('delay');
  delay.classList.remove('running');
  applyDisabled();
  if (document.visibilityState !== 'visible') return;
  void delay.offsetWidth; // restart the fill animation
  delay.classList.add('running');
  state.timer = setTimeout(() => {
    state.armed = true;
    body.dataset.armed = 'true';
    $('dialog').setAttribute('aria-busy', 'false');
    applyDisabled();
    focusDefault();
  }, DELAY_MS);
}

/** The button Enter presses: the suggested choice, or the second step's default. */
export function defaultButton() {
  if (state.step !== 'main') return $(stepDefault(state.view, state.pending));
  return mainButtons().find((b) => !b.hidden && b.classList.contains('suggested')) || null;
}

export function focusDefault() {
  const button = defaultButton();
  if (button && !button.disabled) {
    button.focus();
    button.classList.add('focused');
  }
}
