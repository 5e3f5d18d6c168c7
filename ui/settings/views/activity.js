// The Activity view: the persisted log of queries and answers, filtered in the core. Only
// the newest rows are drawn (ACTIVITY_PAGE at a time, "Show N more"), so a log of 10,000
// entries repaints as fast as one of 200; the core says how many matched in all.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import {
  ACTIVITY_PAGE, activityFilter, activityRowModel, activitySummary, changedMessage, focusFromAnswering, grantChange,
} from '../model.js';
import { fail, main, say, show, state } from '../app.js';
import { loadJournal } from './journal.js';
import { loadIncidents } from './incidents.js';

// --- activity --------------------------------------------------------------------

/** The rows on screen, by index: their entries go back to the core when asked about. */
let shownRows = [];

/** The load running now, whether another was asked for meanwhile, and when it was asked. */
let loading = null;
let again = false;
let requestedAt = 0;

/**
 * The view's loader (shown, or shown again): the canary reads are read anew too, which a
 * filter typed does not do (loadActivity alone).
 */
export async function showActivity() {
  if (document.getElementById('incidents')) loadIncidents().catch(fail);
  return loadActivity();
}

/**
 * Loads and draws the activity. Typing fires one call per key: while a read is running the
 * calls only mark that another is wanted, so at most one more read follows (with the
 * latest filter) and no stale page is drawn.
 */
export async function loadActivity() {
  requestedAt = performance.now();
  if (loading) {
    again = true;
    return loading;
  }
  loading = (async () => {
    do {
      again = false;
      // From the change that asked for it (a filter typed, "Show more") to the table painted.
      const asked = requestedAt;
      state.activity.limit ??= ACTIVITY_PAGE;
      const needFrame = !main.querySelector('.filters');
      const [projects, page] = await Promise.all([
        needFrame ? invoke('settings_projects') : null,
        invoke('settings_activity', { filter: activityFilter(state.activity) }),
      ]);
      const queried = performance.now() - asked;
      if (state.view !== 'activity') return;
      if (again) continue;
      // The filter controls stay as they are while typing: only the table is replaced.
      if (!main.querySelector('.filters')) renderFrame(projects ?? await invoke('settings_projects'));
      renderRows(page);
      stamp(asked, queried);
    } while (again);
  })();
  try {
    await loading;
  } finally {
    loading = null;
  }
}

/**
 * Records on the table container how long the filter → repaint took, and of that the
 * command (`data-query-ms`), the DOM building (`data-dom-ms`, by renderRows) and the style
 * and layout (`data-layout-ms`): the benchmark reads them.
 */
function stamp(asked, queried) {
  const container = document.getElementById('activity-rows');
  container.dataset.queryMs = String(Math.round(queried));
  // Layout now (timed as `data-layout-ms`), then stamp once the frame is drawn.
  const before = performance.now();
  void container.offsetHeight;
  container.dataset.layoutMs = String(Math.round(performance.now() - before));
  requestAnimationFrame(() => {
    container.dataset.renderMs = String(Math.round(performance.now() - asked));
  });
}

function renderFrame(projects) {
  const update = (key) => (event) => {
    state.activity[key] = event.target.value;
    // A new filter starts from the first page again.
    state.activity.limit = ACTIVITY_PAGE;
    loadActivity().catch(fail);
  };
  const controls = h('div', { className: 'filters', role: 'search' },
    h('label', { for: 'f-project' }, TEXT.activity.project),
    h('select', { id: 'f-project', onchange: update('project') },
      h('option', { value: '' }, TEXT.activity.any),
      projects.map((p) => h('option', { value: p.dir, selected: p.dir === state.activity.project }, p.dir))),
    h('label', { for: 'f-decision' }, TEXT.activity.decision),
    h('select', { id: 'f-decision', onchange: update('decision') },
      ['any', 'allow', 'deny'].map((d) => h('option', { value: d, selected: d === state.activity.decision }, TEXT.activity[d]))),
    h('label', { for: 'f-text' }, TEXT.activity.text),
    h('input', { id: 'f-text', type: 'search', value: state.activity.text, oninput: update('text') }));
  main.replaceChildren(
    h('h1', {}, TEXT.activity.heading),
    // Above the table: a stopped run waits for a person.
    h('section', { id: 'incidents', className: 'incidents-box', hidden: true }),
    controls,
    h('div', { id: 'grant-panel', hidden: true }),
    h('p', { id: 'activity-count', className: 'hint', role: 'status' }),
    h('div', { id: 'activity-rows', className: 'activity-rows' }),
    h('div', { id: 'activity-more' }),
    h('div', { id: 'journal', className: 'journal' }));
  loadJournal().catch(fail);
  loadIncidents().catch(fail);
}

function renderRows(page) {
  const built = performance.now();
  shownRows = page.rows;
  const summary = activitySummary(page);
  const counter = document.getElementById('activity-count');
  counter.textContent = page.total ? summary.text : '';
  counter.dataset.shown = String(summary.shown);
  counter.dataset.total = String(summary.total);
  const container = document.getElementById('activity-rows');
  container.dataset.rows = String(summary.shown);
  container.dataset.total = String(summary.total);
  const now = Date.now();
  let table;
  if (page.rows.length) {
    const models = page.rows.map((row) => activityRowModel(row, now));
    const body = document.createElement('tbody');
    // One listener for every row's follow-up instead of one per button.
    body.addEventListener('click', onRowAction);
    const proto = rowPrototype();
    const rows = document.createDocumentFragment();
    models.forEach((m, i) => rows.append(rowView(proto, m, i)));
    body.append(rows);
    // The time column is as wide as its longest form: a date is shown only before today.
    table = h('table', { className: models.some((m) => m.time.length > 8) ? 'activity dated' : 'activity' },
      h('thead', {}, h('tr', {}, TEXT.activity.columns.map((c) => h('th', { scope: 'col' }, c)))),
      body);
  } else {
    table = h('p', { className: 'empty' }, TEXT.activity.none);
  }
  container.replaceChildren(table);
  document.getElementById('activity-more').replaceChildren(summary.more > 0
    ? h('button', {
      type: 'button', id: 'show-more',
      onclick: () => {
        state.activity.limit = summary.shown + ACTIVITY_PAGE;
        loadActivity().catch(fail);
      },
    }, TEXT.activity.showMore(summary.more))
    : '');
  container.dataset.domMs = String(Math.round(performance.now() - built));
}

/** A row's follow-up button was pressed: which one and for which row its data says. */
function onRowAction(event) {
  const button = event.target.closest('button[data-action]');
  const i = Number(button?.closest('tr')?.dataset.row);
  if (!button || !Number.isInteger(i)) return;
  if (button.dataset.action === 'explain') explain(i).catch(fail);
  else openGrant(i, 'project').catch(fail);
}

/**
 * An empty row with its eight cells and their classes: each row is a deep clone of it,
 * filled with text (cheaper than building some twenty elements per row, for hundreds of
 * rows at each filter key).
 */
function rowPrototype() {
  return h('tr', {},
    h('td', { className: 'mono nowrap' }),
    h('td', { className: 'mono clip' }),
    h('td', { className: 'mono clip session' }),
    h('td', { 'data-cell': 'program' }, h('div', { className: 'clip' }), h('div', { className: 'hint' })),
    h('td', { className: 'nowrap' }),
    h('td', { className: 'mono target' }),
    h('td', { className: 'decision' }, h('div', { className: 'decision-word' })),
    h('td', {}));
}

function rowView(proto, m, i) {
  const tr = proto.cloneNode(true);
  tr.className = `outcome-${m.outcome}`;
  tr.dataset.row = String(i);
  const [time, project, session, program, operation, target, decision, by] = tr.children;
  time.title = m.fullTime;
  time.textContent = m.time;
  project.title = m.projectFull;
  project.textContent = m.project;
  session.title = m.session;
  session.textContent = m.session;
  program.title = m.program;
  program.firstChild.textContent = m.programName;
  if (m.pid) program.lastChild.textContent = m.pid;
  else program.lastChild.remove();
  operation.textContent = m.operation;
  target.title = m.targetFull;
  target.textContent = m.target;
  decision.firstChild.textContent = m.decision;
  // The follow-up sits under the decision it is about, so the target keeps the width.
  if (m.explain) {
    decision.append(h('button', {
      type: 'button', className: 'link', 'data-action': 'explain', title: m.explain, 'aria-label': m.explain,
    }, TEXT.activity.showEntry));
  } else if (m.grant) {
    decision.append(h('button', {
      type: 'button', className: 'link', 'data-action': 'grant', title: TEXT.activity.makeGrantTitle,
      'aria-label': `${TEXT.activity.makeGrantTitle}: ${m.operation} ${m.target}`,
    }, TEXT.activity.makeGrant));
  }
  by.textContent = m.by;
  return tr;
}

/** "Show the entry that allowed it": the core finds the entry; the policy view shows it. */
async function explain(i) {
  const row = shownRows[i];
  if (!row) return;
  const found = await invoke('settings_explain_activity', { entry: row.entry });
  if (!found) {
    say(TEXT.activity.noEntryNow);
    return;
  }
  state.focusEntry = focusFromAnswering(found);
  await show('policy', found.project);
}

// --- make this a grant ------------------------------------------------------------

/** The grant being prepared: the row, the target file, the preview and the chosen scope. */
let grant = null;

async function openGrant(i, target) {
  const row = shownRows[i];
  if (!row) return;
  const preview = await invoke('settings_activity_preview', { entry: row.entry, target });
  const suggested = preview.options.find((o) => o.suggested) ?? preview.options[0];
  grant = { i, row, target, preview, kind: suggested?.kind ?? null, confirmed: false };
  renderGrant();
  document.getElementById('grant-panel').querySelector('input[name="grant-scope"]:checked')?.focus();
}

function closeGrant() {
  const i = grant?.i;
  grant = null;
  const panel = document.getElementById('grant-panel');
  panel.hidden = true;
  panel.replaceChildren();
  main.querySelector(`tr[data-row="${i}"] button[data-action="grant"]`)?.focus();
}

function renderGrant() {
  const panel = document.getElementById('grant-panel');
  const { row, preview, target } = grant;
  const t = TEXT.activity.grant;
  const option = preview.options.find((o) => o.kind === grant.kind) ?? null;
  const sensitive = option?.covers_sensitive ?? [];
  const blocked = !option || Boolean(preview.error) || (sensitive.length > 0 && !grant.confirmed);
  const targets = h('div', { className: 'grant-targets', role: 'radiogroup', 'aria-label': t.file },
    h('span', { className: 'caption' }, t.file),
    ['project', 'global'].map((which) => h('label', {},
      h('input', {
        type: 'radio', name: 'grant-target', value: which, checked: which === target,
        onchange: () => openGrant(grant.i, which).catch(fail),
      }), ` ${t[which]}`)));
  const scopes = h('fieldset', { className: 'grant-scopes' },
    h('legend', {}, t.scope),
    preview.options.map((o) => h('label', { className: 'grant-scope' },
      h('input', {
        type: 'radio', name: 'grant-scope', value: o.kind, checked: o.kind === grant.kind,
        onchange: () => { grant.kind = o.kind; grant.confirmed = false; renderGrant(); },
      }),
      h('span', {}, ` ${o.label} `),
      h('span', { className: 'mono', title: o.root.full }, o.root.text))));
  const [group, key] = preview.array.split('.');
  const diff = h('pre', { className: 'diff', 'aria-label': t.preview },
    h('span', { className: 'diff-key' }, `"${group}": { "${key}": [\n`),
    preview.current.map((e) => h('span', { className: 'diff-keep' }, `    ${JSON.stringify(e)},\n`)),
    option && !option.already_listed
      ? h('span', { className: 'diff-add', 'data-entry': option.entry }, `  + ${JSON.stringify(option.entry)}\n`)
      : null,
    h('span', { className: 'diff-key' }, '] }'));
  panel.replaceChildren(
    h('section', { className: 'grant', 'aria-labelledby': 'grant-title', onkeydown: (e) => { if (e.key === 'Escape') closeGrant(); } },
      h('h2', { id: 'grant-title' }, t.heading(row.entry.operation, row.subjectShown)),
      targets,
      scopes,
      h('div', { className: 'preview-file' },
        h('span', { className: 'mono', id: 'grant-file', title: preview.file.full }, `${preview.file.text} · ${preview.array}`),
        preview.file_exists ? null : h('span', { className: 'tag' }, t.newFile)),
      diff,
      option?.already_listed ? h('p', { className: 'hint' }, t.already) : null,
      preview.error ? h('p', { className: 'file-error', role: 'alert' }, preview.error) : null,
      sensitive.length ? h('div', { className: 'flag flag-broad' },
        h('p', {}, t.sensitive(sensitive.join(', '))),
        h('label', {}, h('input', {
          type: 'checkbox', id: 'grant-confirm', checked: grant.confirmed,
          onchange: (e) => { grant.confirmed = e.target.checked; renderGrant(); document.getElementById('grant-confirm')?.focus(); },
        }), ` ${t.confirmSensitive}`)) : null,
      h('div', { className: 'actions' },
        h('button', { type: 'button', id: 'grant-cancel', onclick: closeGrant }, t.cancel),
        h('button', {
          type: 'button', id: 'grant-save', className: 'suggested', disabled: blocked,
          onclick: () => saveGrant(option).catch(fail),
        }, t.save))));
  panel.hidden = false;
}

async function saveGrant(option) {
  if (!grant || !option) return;
  const { preview, row } = grant;
  const changed = await invoke('settings_change', grantChange(preview, option, row.entry.project));
  say(changedMessage(changed));
  const panel = document.getElementById('grant-panel');
  panel.replaceChildren(h('p', { className: 'grant-done', role: 'status', 'data-file': changed.file },
    TEXT.activity.grant.saved(changed.file)));
  grant = null;
}
