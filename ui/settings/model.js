// Pure view-model logic of the settings window: no DOM, no IPC (tested with node --test).

import { TEXT } from './text.js';

/** The lists a policy file can hold, in the order shown. */
export const LISTS = [
  'filesystem.allowWrite',
  'filesystem.allowRead',
  'filesystem.denyRead',
  'filesystem.denyWrite',
  'filesystem.denyReadAlways',
  'filesystem.denyWriteAlways',
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

/** The later plugin's shell and windows fields, shown read-only. */
export const PLATFORM = ['shell.readAccess', 'windows.appContainerMode', 'windows.allowLoopback'];

/** A platform field's value as the file spells it, or null. */
const platformText = (value) => (typeof value === 'string' || typeof value === 'boolean' ? String(value) : null);

export const VIEWS = ['projects', 'policy', 'grants', 'activity', 'learn', 'canaries', 'remotes', 'general'];

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
  // The fields the user's opencode-landstrip rejects (`version` null: it is unknown).
  const conflicts = (view.pluginConflicts ?? []).map((c) => ({
    field: c.field,
    rejected: c.rejected,
    version: c.plugin?.state === 'known' ? c.plugin.version : null,
  }));
  const base = { path: view.path, shown: view.shown, state: state.state, conflicts };
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
    // Only what this file sets: the rest is the plugin's default.
    platform: PLATFORM.map((field) => ({ field, value: platformText(getPath(overrides, field)) }))
      .filter((p) => p.value !== null),
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
    platform: (effective.platform ?? []).map((p) => ({
      field: p.field,
      value: p.value ?? null,
      ...(p.source ? source(p.source) : { source: null, sourceText: '', sourceMeaning: '' }),
    })),
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
    case 'contested':
      return {
        kind: 'conflict',
        text: TEXT.projects.contested(status.other_pid, status.other_port, status.rounds),
        canTakeOver: true,
      };
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

/**
 * What the page shows under an entry being typed (an EntryCheck from the core): its lines
 * (`kind`: meaning, broad, redundant, duplicate, invalid), whether it cannot be saved at
 * all, and whether saving needs the explicit "Save anyway".
 */
export function checkModel(check) {
  if (!check) return { lines: [], invalid: false, broad: false };
  if (check.invalid) {
    return { lines: [{ kind: 'invalid', text: TEXT.policy.invalidEntry(check.invalid) }], invalid: true, broad: false };
  }
  const lines = [];
  if (check.meaning) {
    const resolved = check.resolved && check.resolved !== check.entry && !check.meaning.includes(check.resolved)
      ? ` (${TEXT.policy.resolvedTo(check.resolved)})` : '';
    lines.push({ kind: 'meaning', text: TEXT.policy.readsAs(check.meaning) + resolved });
  }
  if (check.broad) lines.push({ kind: 'broad', text: `${TEXT.policy.broad}: ${check.broad}` });
  if (check.redundantWith) lines.push({ kind: 'redundant', text: TEXT.policy.redundant(check.redundantWith) });
  if (check.duplicate) lines.push({ kind: 'duplicate', text: TEXT.policy.duplicate });
  return { lines, invalid: false, broad: Boolean(check.broad) };
}

/** What an undo did, in words (Undone from the core). */
export function undoneMessage(undone) {
  const text = TEXT.policy.undone(undone.description, undone.file, undone.removed);
  const n = (undone.alsoAnswered ?? []).length;
  return n > 0 ? text + TEXT.policy.answeredToo(n) : text;
}

/**
 * Whether a key press undoes the last save: Ctrl+Z (Cmd+Z), not with Shift or Alt, and
 * not while typing in a text field (there it undoes the typing).
 */
export function isUndoKey(event, target) {
  if (!(event.ctrlKey || event.metaKey) || event.shiftKey || event.altKey) return false;
  if (event.key !== 'z' && event.key !== 'Z') return false;
  const tag = target?.tagName?.toLowerCase?.() ?? '';
  const typing = tag === 'textarea' || tag === 'select' || target?.isContentEditable
    || (tag === 'input' && !['checkbox', 'radio', 'button', 'submit'].includes(target.type));
  return !typing;
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
export const ACTIVITY_PAGE = 100;

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
    // The command behind an asked request (secrets masked by the core) is the program's
    // tooltip: hovering shows what ran.
    program: e.command ? `${row.program}\n${e.command}` : row.program,
    programName: row.programName ?? row.program,
    pid: e.pid == null ? '' : TEXT.activity.pid(e.pid),
    operation: e.operation || e.kind,
    target: row.subjectShown,
    targetFull: e.subject,
    outcome: e.outcome,
    decision: TEXT.activity.outcomes[e.outcome] ?? e.outcome,
    by: TEXT.activity.deciders[e.by] ?? e.by,
    explain: row.explainable ? (e.outcome === 'deny' ? TEXT.activity.showDenying : TEXT.activity.showAllowing) : null,
    // A canary read is never made a grant: an allowRead entry covering it would let the
    // canary be read without asking, and the wire would never trip again.
    grant: row.grantable && e.by !== 'canary',
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

/** `path` as the user reads it: `~` for the home directory, `~/…` under it, else as is. */
export function homeRelative(path, home) {
  if (!home || home === '/') return path;
  const root = home.endsWith('/') ? home.slice(0, -1) : home;
  if (path === root) return '~';
  if (path.startsWith(`${root}/`)) return `~${path.slice(root.length)}`;
  return path;
}

/** The shortest and longest prompt timeouts the core accepts, in seconds. */
export const TIMEOUT_MIN = 5;
export const TIMEOUT_MAX = 3600;

/**
 * The prompt timeout typed in the General view: `{ value }` with null for off (empty or
 * "off") or whole seconds, or `{ error }`. The range is the core's to check too; it is
 * checked here so the message comes at once.
 */
export function parseTimeout(text) {
  const typed = text.trim().toLowerCase();
  if (typed === '' || typed === 'off') return { value: null };
  if (!/^[0-9]+$/.test(typed)) return { error: TEXT.general.notSeconds(text.trim()) };
  const secs = Number(typed);
  if (secs < TIMEOUT_MIN || secs > TIMEOUT_MAX) return { error: TEXT.general.outOfRange(secs, TIMEOUT_MIN, TIMEOUT_MAX) };
  return { value: secs };
}

/** The prompt timeout as the General view's box shows it ('' for off). */
export const timeoutText = (secs) => (secs == null ? '' : String(secs));

/** What an app-setting change wrote, in words (AppSettingChanged from the core). */
export const appSettingMessage = (changed) =>
  (changed.removed ? TEXT.general.removed : TEXT.general.wrote)(changed.description, changed.file);

/**
 * A picked folder as a policy entry of `which` file: in the project file, a path inside
 * the project is written relative to it (the project itself `.`), as landstrip resolves
 * relative entries against the project; in either file one under home is `~/…`; anything
 * else stays absolute.
 */
export function pickedEntry(picked, { which, project, home }) {
  if (which === 'project' && project) {
    const root = project.endsWith('/') ? project.slice(0, -1) : project;
    if (picked === root) return '.';
    if (picked.startsWith(`${root}/`)) return picked.slice(root.length + 1);
  }
  return homeRelative(picked, home);
}
