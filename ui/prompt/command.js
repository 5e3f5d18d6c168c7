// The "Full" panel: each process's whole command line, shown in place of the details (C).

import { $, state } from './page.js';
import { defaultButton } from './delay.js';

// Opening moves the focus into the panel (its list scrolls with the arrow keys);
// closing gives it back to where it was, so the focus is never lost with the panel.
export function showCommand(open) {
  const hasChain = !!(state.view && state.view.origin && state.view.origin.chain.length);
  const wasOpen = state.commandOpen;
  state.commandOpen = open && hasChain;
  const panel = $('command-full');
  const inPanel = panel.contains(document.activeElement);
  if (state.commandOpen && !wasOpen && !inPanel) state.focusBefore = document.activeElement;
  panel.hidden = !state.commandOpen;
  $('details').hidden = state.commandOpen;
  $('command-toggle').setAttribute('aria-expanded', String(state.commandOpen));
  if (state.commandOpen) {
    panel.focus();
  } else if (wasOpen && (inPanel || document.activeElement === document.body)) {
    const before = state.focusBefore;
    state.focusBefore = null;
    const back = before && before.isConnected && !before.hidden && !before.disabled
      ? before
      : defaultButton() || $('command-toggle');
    back.focus();
    // Shown as focused, as the default is when the prompt appears (focus-visible is not
    // guaranteed for a focus the page moves).
    if (back instanceof HTMLButtonElement) back.classList.add('focused');
  }
}
