// Pure view-model logic of the settings window: no DOM, no IPC (tested with node --test).

import { TEXT } from './text.js';

/** The lists a policy file can hold, in the order shown. */
export const LISTS = [
  'filesystem.allowWrite',
  'filesystem.allowRead',
  'filesystem.denyRead',
  'filesystem.denyWrite',
  'network.allowedDomains',
  'network.deniedDomains',
  'network.allowUnixSockets',
];

/** The booleans a policy file can set. */
export const BOOLS = [
  'enabled',
  'network.allowNetwork',
  'network.allowLocalBinding',
  'network.allowAllUnixSockets',
];

export const VIEWS = ['projects', 'policy', 'grants', 'activity'];

/** The value at a dotted key path of a plain object, or undefined. */
export function getPath(obj, dotted) {
  let at = obj;
  for (const key of dotted.split('.')) {
    if (at === null || typeof at !== 'object') return undefined;
    at = at[key];
  }
  return at;
}

/** One policy file (a FileView from the core) as the page shows it. */
export function fileModel(view) {
  const state = view.state;
  const base = { path: view.path, shown: view.shown, state: state.state };
  if (state.state === 'invalid') {
    let where = null;
    if (state.line != null && state.column != null) where = TEXT.policy.at(state.line, state.column);
    else if (state.field) where = TEXT.policy.field(state.field);
    return { ...base, editable: false, error: state.error, where, text: state.text ?? null };
  }
  const overrides = state.state === 'valid' ? state.overrides : {};
  return {
    ...base,
    editable: true,
    bools: BOOLS.map((field) => {
      const value = getPath(overrides, field);
      return { field, value: typeof value === 'boolean' ? value : null };
    }),
    lists: LISTS.map((list) => {
      const entries = getPath(overrides, list);
      return { list, entries: Array.isArray(entries) ? entries : [] };
    }),
  };
}

const order = (list) => {
  const i = LISTS.indexOf(list);
  return i < 0 ? LISTS.length : i;
};

/** Beyond this an entry that answered nothing is marked unused. */
export const UNUSED_AFTER_MS = 30 * 24 * 3600 * 1000;

/** How long ago `ms` was, relative to `now`, in words ("3 hours ago"). */
export function relativeTime(ms, now) {
  const s = Math.max(0, Math.floor((now - ms) / 1000));
  if (s < 60) return TEXT.policy.ago(0, 'second');
  const [n, unit] = s < 3600 ? [Math.floor(s / 60), 'minute']
    : s < 86400 ? [Math.floor(s / 3600), 'hour']
      : [Math.floor(s / 86400), 'day'];
  return TEXT.policy.ago(n, unit);
}

/**
 * One effective entry's use from the activity log: its words, and whether it is marked
 * unused (last hit over 30 days ago, or never while another entry of its list was hit).
 * Null where nothing was counted (network lists).
 */
export function usageModel(entry, anyHitInList, now) {
  if (typeof entry.hits !== 'number') return null;
  if (entry.hits === 0 || entry.lastHitMs == null) {
    return { hits: 0, text: TEXT.policy.neverUsed, unused: anyHitInList };
  }
  return {
    hits: entry.hits,
    text: TEXT.policy.hits(entry.hits, relativeTime(entry.lastHitMs, now)),
    unused: now - entry.lastHitMs > UNUSED_AFTER_MS,
  };
}

/** The effective policy with each value's layer in words; null when a file is invalid. */
export function effectiveModel(effective, now = Date.now()) {
  if (!effective) return null;
  const source = (s) => ({ source: s, sourceText: TEXT.sources[s] ?? s, sourceMeaning: TEXT.sourceMeaning[s] ?? '' });
  return {
    fields: effective.fields.map((f) => ({ field: f.field, value: f.value, ...source(f.source) })),
    // The same order as the file columns, so a list reads across the three.
    lists: [...effective.lists].sort((a, b) => order(a.list) - order(b.list)).map((l) => {
      const anyHit = l.entries.some((e) => (e.hits ?? 0) > 0);
      return {
        list: l.list,
        entries: l.entries.map((e) => ({
          entry: e.entry,
          meaning: e.meaning ?? '',
          broad: e.broad ?? null,
          redundantWith: e.redundantWith ?? null,
          usage: usageModel(e, anyHit, now),
          ...source(e.source),
        })),
      };
    }),
  };
}

/** A served project's state in words, and whether it can be taken over. */
export function projectState(info) {
  const status = info.status;
  switch (status.state) {
    case 'serving':
      return { kind: 'serving', text: TEXT.projects.serving(info.port), canTakeOver: false };
    case 'conflict':
      return { kind: 'conflict', text: TEXT.projects.conflict(status.other_pid, status.other_port), canTakeOver: true };
    default:
      return { kind: 'error', text: TEXT.projects.unpublished(status.error ?? ''), canTakeOver: true };
  }
}

/** The `file` argument of settings_change for the global file or a project's. */
export function fileTarget(which, projectDir) {
  return which === 'global' ? { file: 'global' } : { file: 'project', dir: projectDir };
}

/** What a saved change did, in words (Changed from the core). */
export function changedMessage(changed) {
  const text = changed.written
    ? TEXT.policy.wrote(changed.description, changed.file)
    : TEXT.policy.unchanged(changed.description, changed.file);
  const n = (changed.alsoAnswered ?? []).length;
  return n > 0 ? text + TEXT.policy.answeredToo(n) : text;
}

/** A typed entry as it will be saved, or null when there is nothing to save. */
export function typedEntry(text) {
  const entry = text.trim();
  return entry === '' ? null : entry;
}

/** The first view from the window's query string (`?view=…&project=…`). */
export function parseQuery(search) {
  const params = new URLSearchParams(search);
  const view = params.get('view');
  return {
    // `settings` (or nothing) is the window's default view.
    view: VIEWS.includes(view) ? view : 'projects',
    project: params.get('project') || null,
  };
}

/** The list to focus from the window's query string (`?…&list=filesystem.allowWrite`). */
export function queryList(search) {
  const list = new URLSearchParams(search).get('list');
  return LISTS.includes(list) ? list : null;
}

/** How many activity rows the view shows at first, and how many more each "Show more" adds. */
export const ACTIVITY_PAGE = 200;

/** The activity filter the core takes, from the page's controls (the newest `limit`). */
export function activityFilter({ project, decision, text, limit }) {
  const filter = {};
  if (project) filter.project = project;
  if (decision === 'allow' || decision === 'deny') filter.decision = decision;
  if (text && text.trim()) filter.grep = text.trim();
  filter.limit = limit ?? 500;
  return filter;
}

/** A count with thousands separators: 9871 → "9,871". */
export const count = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * What the activity view says about a page (ActivityPage from the core): how many rows it
 * shows of how many matched, and how many "Show more" would add.
 */
export function activitySummary(page, pageSize = ACTIVITY_PAGE) {
  const shown = page.rows.length;
  const more = Math.min(pageSize, Math.max(0, page.total - shown));
  return { shown, total: page.total, more, text: TEXT.activity.showing(count(shown), count(page.total)) };
}

/** One activity row (ActivityRow from the core) as the table shows it. */
export function activityRowModel(row, now = Date.now()) {
  const e = row.entry;
  return {
    time: shortTime(e.ts, now),
    fullTime: formatTime(e.ts),
    project: row.projectShown,
    projectFull: e.project,
    session: e.session ?? '',
    program: row.program,
    programName: row.programName ?? row.program,
    pid: e.pid == null ? '' : TEXT.activity.pid(e.pid),
    operation: e.operation || e.kind,
    target: row.subjectShown,
    targetFull: e.subject,
    outcome: e.outcome,
    decision: TEXT.activity.outcomes[e.outcome] ?? e.outcome,
    by: TEXT.activity.deciders[e.by] ?? e.by,
    explain: row.explainable ? (e.outcome === 'deny' ? TEXT.activity.showDenying : TEXT.activity.showAllowing) : null,
    grant: row.grantable,
  };
}

/** A time as the activity table shows it: `HH:MM:SS` today, `YYYY-MM-DD HH:MM` before. */
export function shortTime(ms, now = Date.now(), tz) {
  const full = formatTime(ms, tz);
  return full.slice(0, 10) === formatTime(now, tz).slice(0, 10) ? full.slice(11) : full.slice(0, 16);
}

/** Where "show the entry" lands (AnsweringEntry from the core): the policy view's focus. */
export function focusFromAnswering(found) {
  const which = found.source === 'default' ? 'effective' : found.source;
  return { project: found.project, list: found.list, entry: found.entry, which };
}

/** The `settings_change` arguments that save a previewed grant option into its file. */
export function grantChange(preview, option, projectDir) {
  return {
    file: fileTarget(preview.target, projectDir),
    change: { op: 'add', list: preview.array, entry: option.entry },
  };
}

/** A time in ms since the epoch as `YYYY-MM-DD HH:MM:SS` (local time). */
export function formatTime(ms, tz) {
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  if (tz === 'UTC') {
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  }
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Which project directory to select: the asked one, else the current one, else the first served. */
export function pickProject(projects, asked, current) {
  return asked || current || (projects[0] ? projects[0].dir : null);
}
