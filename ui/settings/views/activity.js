// The Activity view: the persisted log of queries and answers, filtered.

import { invoke } from '../ipc.js';
import { h } from '../dom.js';
import { TEXT } from '../text.js';
import { activityFilter, formatTime } from '../model.js';
import { fail, main, state } from '../app.js';

// --- activity --------------------------------------------------------------------

/** The latest activity load: an older answer arriving late is dropped. */
let activitySeq = 0;

export async function loadActivity() {
  const seq = ++activitySeq;
  // The filter controls stay as they are while typing: only the table is replaced, and
  // the project list (for the controls) is asked for only when they are built.
  const built = () => main.querySelector('.filters') !== null;
  const [listed, entries] = await Promise.all([
    built() ? null : invoke('settings_projects'),
    invoke('settings_activity', { filter: activityFilter(state.activity) }),
  ]);
  if (state.view !== 'activity' || seq !== activitySeq) return;
  if (!built()) {
    const projects = listed ?? await invoke('settings_projects');
    if (state.view !== 'activity' || seq !== activitySeq) return;
    const update = (key) => (event) => {
      state.activity[key] = event.target.value;
      loadActivity().catch(fail);
    };
    const controls = h('div', { className: 'filters' },
      h('label', { for: 'f-project' }, TEXT.activity.project),
      h('select', { id: 'f-project', onchange: update('project') },
        h('option', { value: '' }, TEXT.activity.any),
        projects.map((p) => h('option', { value: p.dir, selected: p.dir === state.activity.project }, p.dir))),
      h('label', { for: 'f-decision' }, TEXT.activity.decision),
      h('select', { id: 'f-decision', onchange: update('decision') },
        ['any', 'allow', 'deny'].map((d) => h('option', { value: d, selected: d === state.activity.decision }, TEXT.activity[d]))),
      h('label', { for: 'f-text' }, TEXT.activity.text),
      h('input', { id: 'f-text', type: 'search', value: state.activity.text, oninput: update('text') }));
    main.replaceChildren(h('h1', {}, TEXT.activity.heading), controls, h('div', { id: 'activity-rows' }));
  }
  const table = entries.length
    ? h('table', { className: 'activity' },
      h('thead', {}, h('tr', {}, TEXT.activity.columns.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, entries.slice().reverse().map((e) => h('tr', { className: `outcome-${e.outcome}` },
        h('td', { className: 'mono' }, formatTime(e.ts)),
        h('td', { className: 'mono' }, e.project),
        h('td', { className: 'mono' }, `${e.operation} ${e.subject}`),
        h('td', {}, e.outcome),
        h('td', {}, e.by)))))
    : h('p', { className: 'empty' }, TEXT.activity.none);
  document.getElementById('activity-rows').replaceChildren(table);
}

