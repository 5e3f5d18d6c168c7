// The folder picker the Projects and Policy views share: the desktop's file chooser
// (tauri-plugin-dialog; the settings window may call its `open` and nothing else of it).
// The picked path only goes INTO the input beside the button, written as that input wants
// it, so the user reviews it and the normal add (with its validation) runs; nothing is
// saved from here.

import { invoke } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import { TEXT } from './text.js';
import { fail } from './app.js';

/** Asks the user for a folder, starting at `start`; its absolute path, or null if none. */
export async function pickFolder(start) {
  const options = { directory: true, multiple: false, title: TEXT.picker.title };
  if (start) options.defaultPath = start;
  const picked = await invoke('plugin:dialog|open', { options });
  return typeof picked === 'string' ? picked : null;
}

/**
 * A "Browse…" button that puts the folder picked into `input`, as `toText(path)` writes it;
 * `start()` says where the chooser opens, `label` what the button is for (screen readers);
 * `compact` shows only "…" (the policy columns are narrow; the label says the rest).
 */
export function browseButton(input, {
  label, start = () => null, toText = (path) => path, compact = false,
}) {
  return h('button', {
    type: 'button',
    className: compact ? 'browse compact' : 'browse',
    'data-action': 'browse',
    'aria-label': label,
    title: label,
    onclick: async () => {
      try {
        const picked = await pickFolder(start());
        if (picked === null) return;
        input.value = toText(picked);
        input.focus();
      } catch (e) {
        fail(e);
      }
    },
  }, compact ? TEXT.picker.browseShort : TEXT.picker.browse);
}
