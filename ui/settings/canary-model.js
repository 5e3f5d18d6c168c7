// The pure logic of the Canaries view and of the incidents in the Activity view: what a
// typed path means, what a canary row and an incident say, and which buttons an incident
// offers. Tested with `node --test` (canary-model.test.mjs).

import { TEXT } from './text.js';
import { formatTime, homeRelative, shortTime } from './model.js';

/**
 * A typed canary path as the core takes it (absolute): `{ path }`, `~` and `~/…` made
 * absolute with `home`, or `{ error }`. The core refuses a relative path too; it is
 * checked here so the sentence comes at once.
 */
export function canaryPath(typed, home) {
  const text = typed.trim();
  if (!text) return { error: TEXT.canaries.empty };
  if (text === '~' || text.startsWith('~/')) {
    if (!home) return { error: TEXT.canaries.notAbsolute(text) };
    const root = home.endsWith('/') ? home.slice(0, -1) : home;
    return { path: `${root}${text.slice(1)}` };
  }
  if (!text.startsWith('/')) return { error: TEXT.canaries.notAbsolute(text) };
  return { path: text };
}

/** One canary (CanaryItem from the core) as the list shows it. */
export function canaryRowModel(item, home) {
  const shown = homeRelative(item.path, home);
  return {
    path: shown,
    full: item.path,
    present: item.present,
    state: item.present ? TEXT.canaries.present : TEXT.canaries.missing,
    removeLabel: TEXT.canaries.removeLabel(shown),
  };
}

/** What adding a canary did (CanaryAdded from the core), in words. */
export function canaryAddedMessage(added, home) {
  const shown = homeRelative(added.path, home);
  if (!added.decoy) return TEXT.canaries.addedKept(shown);
  return TEXT.canaries.added(shown, TEXT.canaries.decoys[added.decoy] ?? added.decoy);
}

/**
 * The buttons an incident offers, in order: Kill first. A stopped run can be killed or
 * resumed; a resumed one only killed (the core turns it `gone` once its processes have
 * all exited); a killed, gone or never-stopped one has nothing left to act on.
 */
export function incidentActions(state) {
  if (state === 'stopped') {
    return [
      { action: 'kill', label: TEXT.incidents.kill, destructive: true },
      { action: 'resume', label: TEXT.incidents.resume, destructive: false },
    ];
  }
  if (state === 'resumed') return [{ action: 'kill', label: TEXT.incidents.killResumed, destructive: true }];
  return [];
}

/** The last part of a path (`/usr/bin/python3` → `python3`). */
const baseName = (path) => path.slice(path.lastIndexOf('/') + 1);

/** One incident (Incident from the core) as the Activity view shows it. */
export function incidentModel(incident, home, now = Date.now()) {
  const t = TEXT.incidents;
  const chain = incident.origin?.chain ?? [];
  // The chain runs from the command landstrip started (first) to the reader (last).
  const reader = chain[chain.length - 1];
  const started = chain[0];
  const program = reader?.program ?? (incident.exe ? baseName(incident.exe) : null);
  const opencode = incident.origin?.opencode;
  const sessionId = incident.session ?? opencode?.session ?? null;
  let session;
  if (opencode?.title) session = t.sessionTitled(opencode.title, sessionId ?? opencode.session);
  else session = sessionId ?? t.noSession(incident.run);
  const path = homeRelative(incident.path, home);
  return {
    id: incident.id,
    state: incident.state,
    stateText: t.states[incident.state] ?? incident.state,
    stateNote: t.stateNotes[incident.state] ?? '',
    // Stopped is the state that waits for a person: shown as an alert.
    alert: incident.state === 'stopped',
    path,
    pathFull: incident.path,
    headline: t.read(path, program),
    program,
    command: started?.command?.text ?? opencode?.command ?? null,
    commandFull: started?.command?.full ?? opencode?.command ?? null,
    chain: chain.length > 1 ? chain.map((link) => link.program).join(' → ') : null,
    session,
    pids: incident.pids.length ? incident.pids.join(', ') : t.noPids,
    time: shortTime(incident.at_ms, now),
    fullTime: formatTime(incident.at_ms),
    earlierSummary: t.earlier(incident.earlier.length),
    earlier: incident.earlier.map((e) => t.earlierRow(
      shortTime(e.at_ms, now),
      e.operation,
      homeRelative(e.subject, home),
      TEXT.activity.outcomes[e.outcome] ?? e.outcome,
      TEXT.activity.deciders[e.by] ?? e.by,
    )),
    actions: incidentActions(incident.state),
  };
}

/** The incidents to list: the newest first (the core gives them oldest first). */
export const incidentsNewestFirst = (incidents) => incidents.slice().reverse();
