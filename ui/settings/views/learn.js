// The Learn view: the prompts answered in a session (or a time range) of one project as
// proposed policy entries (the core's ops::learn), shown as a diff against the target
// file; the checked ones are saved in one write (settings_change_all).

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { changedMessage, fileTarget, homeRelative, pickProject } from '../model.js';
import {
  defaultSource, learnChanges, learnDiff, learnRequest, sessionLabel, sourceOffered, LEARN_RANGES,
} from '../learn-model.js';
import { fail, main, say, show, state } from '../app.js';

/** The view's own state: kept while switching views; unchecked entries per review. */
const learn = { project: null, source: null, target: 'project', unchecked: new Set(), review: null, sessions: [] };

/** The latest load: an older answer arriving late is dropped. */
let seq = 0;

/** Loads (or reloads) the view: projects, the project's sessions, the review. */
export async function loadLearn() {
  const mine = ++seq;
  const projects = await invoke('settings_projects');
  state.projects = projects;
  state.project = pickProject(projects, null, state.project);
  if (!state.project) {
    if (mine !== seq || state.view !== 'learn') return;
    main.replaceChildren(h('h1', {}, TEXT.learn.heading), h('p', { className: 'empty' }, TEXT.learn.noProject));
    return;
  }
  const dir = state.project;
  const sessions = await invoke('settings_sessions', { dir });
  if (learn.project !== dir) {
    learn.project = dir;
    learn.source = null;
    learn.unchecked = new Set();
  }
  if (!sourceOffered(learn.source, sessions)) learn.source = defaultSource(sessions);
  const review = await invoke('settings_learn', { dir, request: learnRequest(learn.source, learn.target, Date.now()) });
  if (mine !== seq || state.view !== 'learn') return;
  learn.sessions = sessions;
  learn.review = review;
  render();
}

/** A control changed what to learn from: the unchecked entries start over. */
function choose(key, value) {
  learn[key] = value;
  learn.unchecked = new Set();
  loadLearn().catch(fail);
}

function render() {
  const active = document.activeElement?.dataset?.focusKey ?? null;
  const projects = state.projects.map((p) => p.dir);
  if (!projects.includes(state.project)) projects.push(state.project);
  const { review } = learn;
  main.replaceChildren(
    h('h1', {}, TEXT.learn.heading),
    h('p', { className: 'hint learn-intro' }, TEXT.learn.intro),
    controls(projects),
    diffSection(review),
    leftOutSection(review));
  if (active) {
    const again = [...main.querySelectorAll('[data-focus-key]')].find((el) => el.dataset.focusKey === active);
    again?.focus();
  }
}

function controls(projects) {
  return h('div', { className: 'learn-controls' },
    h('label', { for: 'learn-project' }, TEXT.learn.projectLabel),
    h('select', {
      id: 'learn-project', 'data-focus-key': 'project',
      onchange: (event) => show('learn', event.target.value),
    }, projects.map((dir) => h('option', { value: dir, selected: dir === state.project, title: dir }, homeRelative(dir, state.home)))),
    h('label', { for: 'learn-source' }, TEXT.learn.sourceLabel),
    h('select', {
      id: 'learn-source', 'data-focus-key': 'source',
      onchange: (event) => choose('source', event.target.value),
    },
    learn.sessions.length
      ? h('optgroup', { label: TEXT.learn.sessionsGroup }, learn.sessions.map((s) => h('option', {
        value: `session:${s.id}`, selected: learn.source === `session:${s.id}`,
      }, sessionLabel(s))))
      : null,
    h('optgroup', { label: TEXT.learn.rangesGroup }, LEARN_RANGES.map((r) => h('option', {
      value: r, selected: learn.source === r,
    }, TEXT.learn.ranges[r])))),
    h('span', { id: 'learn-target-label' }, TEXT.learn.targetLabel),
    h('div', { className: 'learn-target', role: 'radiogroup', 'aria-labelledby': 'learn-target-label' },
      ['project', 'global'].map((target) => h('label', { className: 'radio' },
        h('input', {
          type: 'radio', name: 'learn-target', value: target, checked: learn.target === target,
          'data-focus-key': `target:${target}`,
          onchange: () => choose('target', target),
        }),
        TEXT.learn.targets[target]))));
}

function diffSection(review) {
  const groups = learnDiff(review, learn.unchecked);
  const heading = h('header', { className: 'column-head' },
    h('h2', { id: 'learn-diff-head' }, TEXT.learn.diffHeading(review.shown)),
    h('span', { className: 'hint' }, TEXT.learn.considered(review.considered)));
  if (groups.length === 0) {
    return h('section', { className: 'column learn-diff', 'aria-labelledby': 'learn-diff-head' },
      heading, h('p', { className: 'empty', 'data-nothing': '' }, TEXT.learn.nothing(review.shown)));
  }
  const checked = learnChanges(review, learn.unchecked).length;
  const save = h('button', {
    type: 'button', className: 'suggested', id: 'learn-save', 'data-focus-key': 'save',
    disabled: checked === 0, onclick: () => saveChecked(),
  }, TEXT.learn.save(checked, review.shown));
  return h('section', { className: 'column learn-diff', 'aria-labelledby': 'learn-diff-head' },
    heading,
    groups.map((g) => h('div', { className: 'diff-group', 'data-list': g.list },
      h('h3', { id: `diff-${g.list.replace('.', '-')}` }, TEXT.lists[g.list] ?? g.list),
      h('ul', { className: 'diff mono', 'aria-labelledby': `diff-${g.list.replace('.', '-')}` },
        g.lines.some((l) => l.kind === 'context') ? null : h('li', { className: 'diff-line context empty' }, h('span', { className: 'sign', 'aria-hidden': 'true' }, ' '), TEXT.learn.emptyList),
        g.lines.map((line) => (line.kind === 'context' ? contextLine(line) : addLine(line)))))),
    h('div', { className: 'learn-actions' }, save,
      checked === 0 ? h('span', { className: 'hint' }, TEXT.learn.noneChecked) : null));
}

function contextLine(line) {
  return h('li', { className: 'diff-line context', 'data-entry': line.entry },
    h('span', { className: 'sign', 'aria-hidden': 'true' }, ' '),
    h('span', { className: 'entry-text' }, line.entry));
}

function addLine(line) {
  const id = `learn-${line.key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return h('li', { className: `diff-line add${line.checked ? '' : ' unchecked'}`, 'data-entry': line.entry, 'data-checked': String(line.checked) },
    h('input', {
      type: 'checkbox', id, checked: line.checked, 'data-focus-key': `add:${line.key}`,
      'aria-describedby': `${id}-covers`,
      onchange: (event) => {
        if (event.target.checked) learn.unchecked.delete(line.key);
        else learn.unchecked.add(line.key);
        render();
      },
    }),
    h('label', { for: id, title: TEXT.learn.keep(line.entry) },
      h('span', { className: 'sign', 'aria-hidden': 'true' }, '+'),
      h('span', { className: 'entry-text' }, line.entry)),
    h('span', { className: 'covers', id: `${id}-covers` }, line.covers));
}

function leftOutSection(review) {
  if (review.leftOut.length === 0) return null;
  return h('section', { className: 'column learn-left-out', 'aria-labelledby': 'learn-left-head' },
    h('header', { className: 'column-head' },
      h('h2', { id: 'learn-left-head' }, TEXT.learn.leftOutHeading),
      h('span', { className: 'hint' }, TEXT.learn.leftOutNote)),
    h('ul', { className: 'left-out' }, review.leftOut.map((l) => h('li', { 'data-path': l.path },
      h('span', { className: 'mono' }, l.path),
      h('span', { className: 'reason' }, l.reason)))));
}

async function saveChecked() {
  const { review } = learn;
  const changes = learnChanges(review, learn.unchecked);
  if (changes.length === 0) return;
  try {
    const changed = await invoke('settings_change_all', { file: fileTarget(review.target, state.project), changes });
    say(changedMessage(changed));
    learn.unchecked = new Set();
  } catch (e) {
    fail(e);
  }
  await loadLearn().catch(fail);
  (document.getElementById('learn-save') ?? document.getElementById('learn-source'))?.focus();
}
