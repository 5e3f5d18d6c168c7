// The Session grants view's pure logic: each grant in words (allow or deny, its scope and
// its limits) and when the list must be drawn again (the next grant to lapse). Tested with
// node --test (grants-model.test.mjs).

import { TEXT } from './text.js';

/** The clock time `ms` from `now` (ms since the epoch), as HH:MM in local time. */
export function clockAt(now, ms) {
  const at = new Date(now + ms);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
}

/** What a grant does and to what: "allow write /p/out", "deny connect 127.0.0.1:9". */
export function grantWhat(grant) {
  const effect = grant.effect === 'deny' ? TEXT.grants.deny : TEXT.grants.allow;
  const subject = grant.scope.kind === 'filesystem' ? grant.scope.root : grant.scope.target;
  return `${effect} ${grant.scope.operation} ${subject}`;
}

/** A grant's limits in words, `now` being the time it was listed (ms since the epoch). */
export function grantLimit(grant, now) {
  const parts = [];
  if (grant.remaining_ms != null) {
    parts.push(TEXT.grants.lapses(grant.for, clockAt(now, grant.remaining_ms)));
  } else if (grant.run != null) {
    parts.push(TEXT.grants.untilRunEnds);
  } else {
    parts.push(TEXT.grants.untilQuit);
  }
  if (grant.program) parts.push(TEXT.grants.onlyProgram(grant.program.split('/').pop()));
  return parts.join(' · ');
}

/**
 * When to draw the list again: the milliseconds until the next grant lapses (a little
 * after, so it is gone when asked), or null when none lapses — then no timer is set.
 */
export function nextRedraw(grants) {
  const left = grants.map((g) => g.remaining_ms).filter((ms) => ms != null);
  return left.length ? Math.min(...left) + 50 : null;
}
