// The prompt dialog page (entry module). Plain JS, no framework, no remote content (strict CSP).
//
// The app pushes `dialog:update` events ({seq, view, notice}); the page renders each one,
// acknowledges it with `dialog_rendered` (the window is shown or hidden only then), and
// answers with `dialog_answer`. Input is ignored for a moment after a prompt appears (a new
// prompt, or the window becoming visible: delay.js), so a keystroke meant for another
// window cannot answer it.

import { invoke, listen } from '../shared/ipc.js';
import { $, allButtons, body, showError, showNotice, state } from './page.js';
import { applyDisabled, arm, blocked, defaultButton } from './delay.js';
import { showCommand } from './command.js';
import { nextLifetime, renderEmpty, renderPrompt, renderQueue, renderScopeHint, toggleProgram } from './request.js';
import { back, renderDiff, showStep } from './steps.js';
import { answer, choose, confirm, editPolicy } from './answers.js';
import { TEXT } from './text.js';
import { SHORTCUTS, isNewer, keyName } from './model.js';

// --- updates from the app -------------------------------------------------

function apply(update) {
  if (!isNewer(update, state.seq)) return;
  state.seq = update.seq;
  if (update.notice) showNotice(update.notice);
  const view = update.view;
  if (!view) {
    state.view = null;
    showStep('main');
    renderEmpty();
    // The window hides on this acknowledgement: let the answering click or key finish
    // its frame first (input that is still being presented when the window unmaps never
    // completes for WebKit's input simulation, and the user sees the answer land).
    afterNextFrame(() => acknowledge(update.seq));
    return;
  }
  const same = state.view && state.view.id === view.id;
  state.view = view;
  if (same) {
    // Same prompt, new counts: keep the step, the focus and the input delay.
    renderQueue(view);
    applyDisabled();
  } else {
    state.busy = false;
    state.pending = null;
    showStep('main');
    renderPrompt(view);
    arm();
  }
  acknowledge(update.seq);
}

// The window is shown (or hidden) only once the page shows what the update says.
function acknowledge(seq) {
  invoke('dialog_rendered', { seq }).catch(() => {});
}

// Two animation frames: the next frame has been painted. A hidden page paints nothing,
// so it acknowledges at once.
function afterNextFrame(callback) {
  if (document.visibilityState !== 'visible') return callback();
  requestAnimationFrame(() => requestAnimationFrame(callback));
}

// --- input ------------------------------------------------------------------

document.addEventListener('keydown', (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  // Held keys never answer: a repeat would land on the next prompt.
  if (event.repeat || blocked()) {
    if (event.key !== 'Tab') {
      event.preventDefault();
      // Counted for the tests (tests/tests/dialog.rs) and for nobody else.
      body.dataset.swallowed = String(Number(body.dataset.swallowed || 0) + 1);
    }
    return;
  }
  const key = keyName(event.key);
  if (state.step !== 'main') {
    if (key === 'Escape') {
      event.preventDefault();
      back();
    } else if (key === 'Enter' && !(document.activeElement instanceof HTMLButtonElement)) {
      event.preventDefault();
      if (!$('confirm').disabled) confirm();
    } else if (state.step === 'scope' && /^[1-3]$/.test(key)) {
      const option = state.preview && state.preview.options[Number(key) - 1];
      if (option) {
        event.preventDefault();
        state.scope = option.kind;
        $(`scope-${option.kind}`).checked = true;
        renderDiff();
      }
    }
    return;
  }
  if (key === 't') {
    event.preventDefault();
    nextLifetime();
  } else if (key === 'r') {
    event.preventDefault();
    toggleProgram();
  } else if (key === 'c') {
    event.preventDefault();
    showCommand(!state.commandOpen);
  } else if (key === 'Escape') {
    event.preventDefault();
    answer('deny');
  } else if (key === 'Enter') {
    // A focused button activates itself; otherwise Enter means the default.
    if (!(document.activeElement instanceof HTMLButtonElement)) {
      event.preventDefault();
      const button = defaultButton();
      if (button) choose(button.dataset.choice);
    }
  } else if (SHORTCUTS[key]) {
    event.preventDefault();
    choose(SHORTCUTS[key]);
  }
});

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button') : null;
  if (button && button.id === 'edit-policy') return editPolicy();
  if (button && (button.id === 'command-toggle' || button.id === 'command-back')) {
    return showCommand(!state.commandOpen);
  }
  if (!button || button.disabled || !state.armed || state.busy) return;
  if (button.id === 'back') return back();
  if (button.id === 'confirm') return confirm();
  if (button.dataset.choice) choose(button.dataset.choice);
});

document.addEventListener('focusin', (event) => {
  for (const b of allButtons()) {
    if (b !== event.target) b.classList.remove('focused');
  }
});

$('confirm-check').addEventListener('change', applyDisabled);
$('lifetime').addEventListener('change', renderScopeHint);
$('program-only').addEventListener('change', renderScopeHint);

// The window appearing (shown after being hidden, restored, brought back to the screen)
// starts the delay again: typing meant for another window must not answer.
document.addEventListener('visibilitychange', () => {
  if (state.view && !state.busy) arm();
});

// --- start ------------------------------------------------------------------

async function start() {
  await listen('dialog:update', (event) => apply(event.payload));
  apply(await invoke('dialog_ready'));
}

start().catch((error) => {
  showError(TEXT.startFailed(error));
});
