// The Projects view: the served projects, their state in words, add, remove, take over.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { homeRelative, projectState, typedEntry } from '../model.js';
import { act, fail, main, say, show, state } from '../app.js';
import { browseButton } from '../picker.js';

// --- projects ----------------------------------------------------------------

export async function loadProjects() {
  state.projects = await invoke('settings_projects');
  if (state.view !== 'projects') return;
  const input = h('input', {
    id: 'project-add',
    type: 'text',
    spellcheck: 'false',
    placeholder: TEXT.projects.addPlaceholder,
    value: document.getElementById('project-add')?.value ?? '',
    onkeydown: (event) => {
      if (event.key === 'Enter') addProject(input);
    },
  });
  const rows = state.projects.map((info) => {
    const described = projectState(info);
    return h('li', { className: `project state-${described.kind}`, 'data-dir': info.dir },
      h('div', { className: 'project-text' },
        h('span', { className: 'project-dir mono', title: info.dir }, homeRelative(info.dir, state.home)),
        h('span', { className: 'project-state' }, described.text),
        promptsChoice(info)),
      h('div', { className: 'actions' },
        described.canTakeOver && h('button', {
          type: 'button', className: 'suggested', 'data-action': 'take-over',
          onclick: () => act(() => invoke('settings_take_over', { dir: info.dir }), TEXT.projects.tookOver(info.dir)),
        }, TEXT.projects.takeOver),
        h('button', { type: 'button', 'data-action': 'policy', onclick: () => show('policy', info.dir) },
          TEXT.projects.editPolicy),
        h('button', {
          type: 'button', className: 'destructive', 'data-action': 'remove',
          onclick: () => act(() => invoke('settings_remove_project', { dir: info.dir }), TEXT.projects.removed(info.dir)),
        }, TEXT.projects.remove)));
  });
  main.replaceChildren(
    h('h1', {}, TEXT.projects.heading),
    rows.length ? h('ul', { className: 'projects' }, rows) : h('p', { className: 'empty' }, TEXT.projects.none),
    h('div', { className: 'add-row' },
      h('label', { for: 'project-add' }, TEXT.projects.addLabel),
      input,
      browseButton(input, { label: TEXT.picker.projectLabel, start: () => state.home }),
      h('button', { type: 'button', className: 'suggested', onclick: () => addProject(input) }, TEXT.projects.add)),
  );
}

// Where the project's prompts go while opencode's terminal UI runs (here | terminal).
function promptsChoice(info) {
  const id = `prompts-${state.projects.indexOf(info)}`;
  const choice = h('select', {
    id,
    className: 'project-prompts',
    'data-action': 'prompts',
    onchange: () => act(
      () => invoke('settings_prefer', { dir: info.dir, prompts: choice.value }),
      TEXT.projects.preferred(info.dir, TEXT.projects.prompts[choice.value])),
  },
  h('option', { value: 'here' }, TEXT.projects.promptsHere),
  h('option', { value: 'terminal' }, TEXT.projects.promptsTerminal));
  choice.value = info.prompts ?? 'here';
  return h('label', { className: 'project-prompts-row', for: id }, TEXT.projects.promptsLabel, ' ', choice);
}

async function addProject(input) {
  const dir = typedEntry(input.value);
  if (!dir) return;
  try {
    const info = await invoke('settings_add_project', { dir });
    input.value = '';
    say(TEXT.projects.added(info.dir));
  } catch (e) {
    fail(e);
  }
  await loadProjects();
  document.getElementById('project-add')?.focus();
}

