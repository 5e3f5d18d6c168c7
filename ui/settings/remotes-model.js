// The pure logic of the Remote machines view: a remote's state in words and what the
// person does about it, and the add form's fields checked as the core checks them
// (app_settings/remote.rs), so a refusal comes at once and next to its field. Tested with
// `node --test` (remotes-model.test.mjs).

import { TEXT } from './text.js';
import { formatTime, homeRelative, shortTime } from './model.js';

/** The longest name and destination the core takes. */
export const MAX_NAME = 32;
export const MAX_DESTINATION = 255;

/**
 * How a state looks: `ok` (connected), `busy` (connecting), `act` (the person must do
 * something the app never does for them: a key, a host key), `alarm` (a changed host
 * key), `down` (the rest).
 */
const TONES = {
  connected: 'ok',
  connecting: 'busy',
  needs_key: 'act',
  host_key_unknown: 'act',
  host_key_changed: 'alarm',
};

/** The states whose words come from this page rather than the core's detail. */
const OWN_HINT = new Set(['needs_key', 'host_key_unknown', 'host_key_changed']);

/**
 * A state as shown: `{ label, tone, hint, detail }`. For the states that need the person
 * the hint is this page's (naming the destination, never offering to accept a key); for
 * the others the core's detail (what ssh said) comes first and a general hint after it.
 */
export function stateWords(state, destination, detail = '') {
  const t = TEXT.remotes;
  const label = t.states[state] ?? state;
  const tone = TONES[state] ?? 'down';
  const hintOf = t.hints[state];
  const hint = typeof hintOf === 'function' ? hintOf(destination) : (hintOf ?? '');
  // The core's detail repeats the advice of the states this page words itself.
  const shownDetail = OWN_HINT.has(state) || state === 'connected' ? '' : detail.trim();
  return { label, tone, hint, detail: shownDetail };
}

/** One remote (RemoteView from the core) as the list shows it. */
export function remoteRowModel(view, home, now = Date.now()) {
  const t = TEXT.remotes;
  const words = stateWords(view.state, view.destination, view.detail ?? '');
  const where = [view.destination];
  if (view.port != null) where.push(t.port(view.port));
  if (view.identity) where.push(t.identity(homeRelative(view.identity, home)));
  if (view.known_hosts) where.push(t.knownHosts(homeRelative(view.known_hosts, home)));
  return {
    name: view.name,
    state: view.state,
    ...words,
    where: where.join(' · '),
    since: view.since_ms ? t.since(shortTime(view.since_ms, now)) : '',
    sinceFull: view.since_ms ? formatTime(view.since_ms) : '',
    pending: view.pending ?? 0,
    waiting: t.waiting(view.pending ?? 0),
    removeLabel: t.removeLabel(view.name),
    confirm: t.confirm(view.name, view.pending ?? 0),
  };
}

/** A typed file path: `{ path }` (absolute, `~` made so with `home`), `{}` when empty, or `{ error }`. */
export function typedFile(typed, home) {
  const text = typed.trim();
  if (!text) return {};
  if (text === '~' || text.startsWith('~/')) {
    if (!home) return { error: TEXT.remotes.notAbsolute(text) };
    const root = home.endsWith('/') ? home.slice(0, -1) : home;
    return { path: `${root}${text.slice(1)}` };
  }
  if (!text.startsWith('/')) return { error: TEXT.remotes.notAbsolute(text) };
  return { path: text };
}

/** Whitespace or a control character (what the core refuses in a destination). */
const BLANK_OR_CONTROL = /[\s\u0000-\u001f\u007f]/u;

/**
 * The add form's fields (`{ name, destination, port, identity, knownHosts }`, as typed)
 * as the `settings_remote_add` argument `{ remote }`, or `{ error, field }` naming the
 * field to fix. A destination starting with `-` is refused, as the core refuses it: ssh
 * would read it as an option.
 */
export function remoteForm(fields, home) {
  const t = TEXT.remotes;
  const name = (fields.name ?? '').trim();
  if (!name) return { error: t.noName, field: 'name' };
  if (name.length > MAX_NAME || name.startsWith('-') || !/^[A-Za-z0-9._-]+$/.test(name)) {
    return { error: t.badName(name), field: 'name' };
  }
  const destination = (fields.destination ?? '').trim();
  if (!destination) return { error: t.noDestination, field: 'destination' };
  if (destination.startsWith('-')) return { error: t.dashDestination(destination), field: 'destination' };
  if (destination.length > MAX_DESTINATION || BLANK_OR_CONTROL.test(destination)) {
    return { error: t.badDestination(destination), field: 'destination' };
  }
  const remote = { name, destination };
  const port = (fields.port ?? '').trim();
  if (port) {
    const n = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
    if (!(n >= 1 && n <= 65535)) return { error: t.badPort(port), field: 'port' };
    remote.port = n;
  }
  for (const field of ['identity', 'knownHosts']) {
    const file = typedFile(fields[field] ?? '', home);
    if (file.error) return { error: file.error, field };
    if (file.path) remote[field] = file.path;
  }
  return { remote };
}
