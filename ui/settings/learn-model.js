// Pure logic of the Learn view: which activity to ask about, and the core's review
// (ops::learn) as diff lines against the target file (no DOM, no IPC; node --test).

import { TEXT } from './text.js';
import { formatTime } from './model.js';

/** The time ranges offered besides the sessions, in the order shown. */
export const LEARN_RANGES = ['hour', 'today', 'week'];

const HOUR = 3600 * 1000;

/**
 * The settings_learn request for `source` (`session:<id>` or one of LEARN_RANGES) and
 * `target` (`project` or `global`), as of `now` (ms). "today" starts at local midnight.
 */
export function learnRequest(source, target, now) {
  const request = { target };
  if (source.startsWith('session:')) {
    request.session = source.slice('session:'.length);
  } else if (source === 'hour') {
    request.since_ms = now - HOUR;
  } else if (source === 'today') {
    const midnight = new Date(now);
    midnight.setHours(0, 0, 0, 0);
    request.since_ms = midnight.getTime();
  } else {
    request.since_ms = now - 7 * 24 * HOUR;
  }
  return request;
}

/** The source chosen first: the newest session, else the last 7 days. */
export function defaultSource(sessions) {
  return sessions.length ? `session:${sessions[0].id}` : 'week';
}

/** Whether `source` is still offered (a session can vanish from the log). */
export function sourceOffered(source, sessions) {
  if (!source) return false;
  if (source.startsWith('session:')) return sessions.some((s) => `session:${s.id}` === source);
  return LEARN_RANGES.includes(source);
}

/** A session as the source picker names it: its id, when (the date once), how many answered. */
export function sessionLabel(session, tz) {
  const from = formatTime(session.firstMs, tz);
  const to = formatTime(session.lastMs, tz);
  const sameDay = from.slice(0, 10) === to.slice(0, 10);
  return TEXT.learn.session(session.id, from, sameDay ? to.slice(11) : to, session.answered);
}

/** A proposal's identity in the review (its list and entry). */
export const proposalKey = (p) => `${p.list}:${p.entry}`;

/** The lists a proposal can go into, in the order the policy view shows them. */
const ORDER = ['allowWrite', 'allowRead'];

/**
 * The review as diff groups, one per list that gets a proposal: the target file's
 * entries as context lines, then a `+` line per proposal (checked unless its key is in
 * `unchecked`), with what it covers.
 */
export function learnDiff(review, unchecked) {
  const groups = [];
  for (const list of ORDER) {
    const adds = review.proposals.filter((p) => p.list === list);
    if (adds.length === 0) continue;
    const current = review.current.find((c) => c.list === list)?.entries ?? [];
    groups.push({
      list: `filesystem.${list}`,
      lines: [
        ...current.map((entry) => ({ kind: 'context', entry })),
        ...adds.map((p) => ({
          kind: 'add',
          key: proposalKey(p),
          entry: p.entry,
          checked: !unchecked.has(proposalKey(p)),
          covers: TEXT.learn.covers(p.covers, p.examples),
        })),
      ],
    });
  }
  return groups;
}

/** The settings_change_all changes that save the checked proposals, in review order. */
export function learnChanges(review, unchecked) {
  return review.proposals
    .filter((p) => !unchecked.has(proposalKey(p)))
    .map((p) => ({ op: 'add', list: `filesystem.${p.list}`, entry: p.entry }));
}
