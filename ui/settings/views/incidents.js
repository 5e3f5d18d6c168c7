// The canary reads (incidents) in the Activity view, above the table: each with its state
// (stopped as an alert), the canary, the program and command, the session, the processes,
// the time and the run's earlier requests; a stopped one offers "Kill the stopped
// processes" and "Resume", a resumed one Kill. Each button runs settings_incident_act (the
// core's operations, as `ctl incident` and the notification's buttons do), then the view
// reloads. Shown only when there are incidents.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { incidentModel, incidentsNewestFirst } from '../canary-model.js';
import { fail, say, show, state } from '../app.js';

/** Loads the incidents and draws them into `#incidents`. */
export async function loadIncidents() {
  const incidents = await invoke('settings_incidents');
  renderIncidents(incidents);
}

function renderIncidents(incidents) {
  const box = document.getElementById('incidents');
  if (!box) return;
  box.hidden = incidents.length === 0;
  box.dataset.count = String(incidents.length);
  if (!incidents.length) {
    box.replaceChildren();
    return;
  }
  const now = Date.now();
  box.replaceChildren(
    h('h2', { id: 'incidents-title' }, TEXT.incidents.heading),
    h('ul', { className: 'incidents', 'aria-labelledby': 'incidents-title' },
      incidentsNewestFirst(incidents).map((incident) => incidentView(incidentModel(incident, state.home, now)))));
}

function incidentView(m) {
  const t = TEXT.incidents;
  const titleId = `incident-${m.id}-title`;
  const fact = (label, value, title) => (value == null ? null : h('div', { className: 'incident-fact' },
    h('dt', {}, label),
    h('dd', { className: 'mono', title: title ?? value }, value)));
  return h('li', {
    className: m.alert ? 'incident alert' : 'incident',
    'data-incident-id': String(m.id),
    'data-state': m.state,
    'aria-labelledby': titleId,
    // Focused after an action, when its buttons are gone.
    tabindex: '-1',
  },
  h('div', { className: 'incident-head' },
    h('span', { className: `incident-state state-${m.state}`, 'data-state-text': '' }, m.stateText),
    h('h3', { id: titleId, className: 'incident-headline', title: m.pathFull }, m.headline)),
  h('p', { className: 'hint incident-note' }, m.stateNote),
  h('dl', { className: 'incident-facts' },
    fact(t.command, m.command, m.commandFull),
    fact(t.chain, m.chain),
    fact(t.session, m.session),
    fact(t.pids, m.pids),
    fact(t.at, m.time, m.fullTime)),
  h('details', { className: 'incident-earlier' },
    h('summary', {}, m.earlierSummary),
    m.earlier.length
      ? h('ul', {}, m.earlier.map((line) => h('li', { className: 'mono' }, line)))
      : h('p', { className: 'empty' }, t.noEarlier)),
  m.actions.length
    ? h('div', { className: 'actions' }, m.actions.map((a) => h('button', {
      type: 'button',
      className: a.destructive ? 'destructive' : '',
      'data-incident-action': a.action,
      onclick: () => act(m.id, a.action).catch(fail),
    }, a.label)))
    : null);
}

/** Kill or Resume: the core acts, says what became of the incident, and the view reloads. */
async function act(id, action) {
  try {
    await invoke('settings_incident_act', { id, action });
    say(TEXT.incidents.acted[action](id));
  } catch (e) {
    fail(e);
  }
  // The whole view: killing denies the run's held requests, new rows in the table.
  await show(state.view);
  document.querySelector(`#incidents [data-incident-id="${id}"]`)?.focus();
}
