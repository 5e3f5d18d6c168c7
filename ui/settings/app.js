// What every view of the settings window shares: the page state, the status line, and
// switching views. Each view module registers its loader here (main.js does), so views can
// switch to one another without importing each other.

import { TEXT } from './text.js';

/** The page state; the policy itself always comes from disk through the commands. */
export const state = {
  view: 'projects',
  project: null,
  /** The user's home directory (paths are shown `~/…`); null until known. */
  home: null,
  projects: [],
  policy: null,
  activity: { project: '', decision: 'any', text: '' },
  /** What the policy view highlights and focuses once: `{project, list, entry?, which?}`. */
  focusEntry: null,
};

/** The view's container. */
export const main = document.getElementById('main');
const status = document.getElementById('status');

/** Shows a sentence in the status line (announced politely to screen readers). */
export function say(text, kind = 'info') {
  status.textContent = text;
  status.dataset.kind = kind;
}

/** Shows an error from a command. */
export const fail = (e) => say(TEXT.error(String(e)), 'error');

/** The loader of each view, by name: registered by main.js. */
export const loaders = {};

/** Called after the view changes (main.js redraws the navigation). */
let onViewChange = () => {};

/** Sets what runs when the view changes. */
export function setOnViewChange(f) {
  onViewChange = f;
}

/** Switches to `view` (for `project`, when given) and loads it. */
export async function show(view, project) {
  // A highlight asked for belongs to the policy view it was asked with.
  if (view !== 'policy' || (project && project !== state.focusEntry?.project)) state.focusEntry = null;
  state.view = view;
  if (project) state.project = project;
  document.body.dataset.view = view;
  onViewChange(view);
  main.setAttribute('aria-labelledby', `tab-${view}`);
  try {
    await loaders[view]();
  } catch (e) {
    fail(e);
  }
}

/** Runs a command, says `done` (or the error), and reloads the current view. */
export async function act(work, done) {
  try {
    await work();
    say(done);
  } catch (e) {
    fail(e);
  }
  await show(state.view);
}
