// The prompt dialog's pure logic: what each part says, what each key and answer means.
// Nothing here touches the DOM, so node --test covers it (model.test.mjs).

import { TEXT } from './text.js';

/** The main step's keys (lower case) and the choice each one makes. */
export const SHORTCUTS = {
  o: 'once', s: 'session', p: 'project', g: 'global', d: 'deny', a: 'bulk',
  x: 'deny_session', n: 'never', e: 'never_global',
};

/** A key as the shortcuts name it: a letter in lower case (Shift, Caps Lock), others as they are. */
export const keyName = (key) => (key.length === 1 ? key.toLowerCase() : key);

/** Whether an update from the app is one the page has not drawn yet. */
export const isNewer = (update, seq) => !!update && !(update.seq <= seq);

/** The body's data-kind: network, or the filesystem operation. */
export const kindOf = (view) => (view.kind === 'network' ? 'network' : view.operation);

/** The word before the path or address. */
export function subjectKind(view) {
  if (view.kind === 'network') return TEXT.subjectKind.network;
  return view.operation === 'read' ? TEXT.subjectKind.read : TEXT.subjectKind.write;
}

/** The program row: its executable (else its name) and its pid, each when known. */
export function programText(program) {
  return [program.exe || program.name, program.pid != null ? TEXT.pid(program.pid) : null]
    .filter(Boolean)
    .join(TEXT.separator);
}

/** The session row: the session's title before its id when both are known. */
export function sessionText(view) {
  const title = view.origin && view.origin.session_title;
  return view.session && title ? [title, view.session].join(TEXT.separator) : view.session;
}

/** The warning under the request, or '' when the path is not sensitive. */
export function sensitiveText(view) {
  return view.sensitive ? TEXT.sensitive(view.sensitive.location.text, view.sensitive.what) : '';
}

/**
 * The warning of a request of a run after a secret, its age taken at `nowMs`; '' when the
 * run read none.
 */
export function afterSecretText(view, nowMs) {
  const read = view.after_secret;
  if (!read) return '';
  const secs = Math.max(0, Math.round((nowMs - read.at_ms) / 1000));
  return TEXT.afterSecret(read.path.text, read.what, TEXT.ago(secs), read.network);
}

/** Whether the answers of `view` are those of a network request after a secret. */
export const limitedAfterSecret = (view) => !!(view.after_secret && view.after_secret.network);

/** The answer-all button's tooltip, or '' when it is not offered. */
export function bulkTitle(view) {
  return view.bulk
    ? TEXT.bulkTitle(view.session_scope.full, view.session_holder, view.bulk.count - 1, view.kind === 'network')
    : '';
}

/** A choice button's key hint, and its aria-keyshortcuts: the default also takes Enter. */
export function choiceKeys(choice) {
  return choice.default
    ? { kbd: TEXT.defaultKey(choice.shortcut), aria: `${choice.shortcut} Enter` }
    : { kbd: choice.shortcut, aria: choice.shortcut };
}

/**
 * The chain's lines in the details, the command landstrip started first: past four, the
 * first and the last two with `null` for the ones left out between (all of them are under
 * "Full"): "… 1 more" would take the line the one process it stands for needs.
 */
export function chainShown(chain) {
  return chain.length > 4 ? [chain[0], null, ...chain.slice(-2)] : chain;
}

/** The lifetime chosen at first: the last one chosen in this project if offered, else ''. */
export function startLifetime(limits) {
  return limits.options.some((o) => o.value === limits.chosen) ? limits.chosen : '';
}

/** The program limit's label: "only" and the executable's file name. */
export const programOnly = (program) => TEXT.programOnly(program.split('/').pop());

/** What the limits add to a session answer: {for, program}, each left out when unset. */
export function limitsExtra(lifetime, programOnly) {
  const extra = {};
  if (lifetime) extra.for = lifetime;
  if (programOnly) extra.program = true;
  return extra;
}

/**
 * What choosing `key` (a choice's name, or "bulk") does for `view`: answer at once
 * ({answer, extra}), open a second step ({step: 'confirm'} or {step: 'scope', name}), or
 * nothing (null) when it is not offered. `limits` is what the session's limits add.
 */
export function choiceAction(view, key, limits) {
  if (!view) return null;
  if (key === 'bulk') {
    if (!view.bulk) return null;
    key = 'session';
  }
  const offered = key === 'deny' || view.choices.some((c) => c.name === key);
  if (!offered) return null;
  // After a secret, a network request's Once is given with the read in view and its
  // Session is this address for this run: the app refuses anything else.
  if (limitedAfterSecret(view) && key === 'once') {
    return { answer: 'once', extra: { confirmed_after_secret: true } };
  }
  if (limitedAfterSecret(view) && key === 'session') return { answer: 'session', extra: { for: 'run' } };
  if (key === 'once' || key === 'deny') return { answer: key };
  if (key === 'deny_session') return { answer: 'deny', extra: Object.assign({ session: true }, limits) };
  if (key === 'session') {
    return view.sensitive ? { step: 'confirm' } : { answer: 'session', extra: limits };
  }
  return { step: 'scope', name: key };
}

/** What a scope step confirms, by the button that opened it: project, global, never(_global). */
export function scopePending(name) {
  const never = name === 'never' || name === 'never_global';
  const target = name === 'global' || name === 'never_global' ? 'global' : 'project';
  return { choice: never ? 'never' : target, target, never };
}

/** The scope a preview starts at: the suggested one, else the first; null when none is offered. */
export function startScope(preview) {
  const suggested = preview.options.find((o) => o.suggested) || preview.options[0];
  return suggested ? suggested.kind : null;
}

/** The preview's option of the chosen scope. */
export function selectedOption(preview, scope) {
  return preview && preview.options.find((o) => o.kind === scope);
}

/** The file's change as lines ({text, cls}): the array, its last two entries, the new one. */
export function diffLines(preview, option) {
  if (preview.error) return [{ text: TEXT.diff.cannotEdit(preview.error) }];
  const lines = [{ text: preview.array, cls: 'key' }];
  const current = preview.current;
  const shownCurrent = current.slice(-2);
  if (current.length > shownCurrent.length) {
    lines.push({ text: TEXT.diff.more(current.length - shownCurrent.length) });
  }
  for (const entry of shownCurrent) lines.push({ text: TEXT.diff.entry(entry) });
  if (option && !option.already_listed) {
    lines.push({ text: TEXT.diff.added(option.entry), cls: 'add' });
  } else if (option) {
    lines.push({ text: TEXT.diff.alreadyListed });
  }
  return lines;
}

/** The diff's aria-label: what gains which entry, or '' with no scope chosen. */
export function diffLabel(preview, option) {
  return option ? TEXT.diff.label(preview.array, preview.file.full, option.entry) : '';
}

/** The sentence under the preview: what the entry allows or denies from then on. */
export function scopeNote(view, preview, option, never) {
  if (!option || !view) return '';
  const who = preview.target === 'project' ? TEXT.note.who.project : TEXT.note.who.global;
  const what = view.operation === 'read' ? TEXT.note.what.read : TEXT.note.what.write;
  if (never) return TEXT.note.never(what, option.root.text, who);
  const names = option.covers_names || [];
  return TEXT.note.allow(what, option.root.text, who) + (names.length ? TEXT.scope.names(names) : '');
}

/** The soft warning of a scope that covers sensitive locations (the first two named). */
export function coversText(covers) {
  return covers.length ? TEXT.scope.covers(covers.slice(0, 2), covers.length - 2) : '';
}

/**
 * Whether a second step may be confirmed: a scope step needs an editable file and a scope,
 * and allowing a sensitive path needs its box checked ("never" takes access away: no box).
 */
export function confirmAllowed({ step, preview, scope, view, pending, checked }) {
  if (step === 'scope' && (!preview || preview.error || !selectedOption(preview, scope))) {
    return false;
  }
  const never = !!(pending && pending.never);
  if (view && view.sensitive && !never && !checked) return false;
  return true;
}

/** Whether a second step asks for the sensitive-path box: allowing a sensitive path. */
export function asksCheck(step, view, pending) {
  const never = !!(pending && pending.never);
  return step !== 'main' && !never && !!(view && view.sensitive);
}

/** A second step's default button: Back when allowing a sensitive path, else Confirm. */
export function stepDefault(view, pending) {
  const never = !!(pending && pending.never);
  return view && view.sensitive && !never ? 'back' : 'confirm';
}

/** The answer a second step confirms: {choice, extra} for dialog_answer. */
export function confirmedAnswer(pending, scope, sensitive) {
  if (pending.choice === 'session') {
    return { choice: 'session', extra: Object.assign({ confirmed: sensitive }, pending.limits) };
  }
  if (pending.never) {
    const extra = { scope };
    if (pending.target === 'global') extra.global = true;
    return { choice: 'never', extra };
  }
  return { choice: pending.choice, extra: { scope, confirmed: sensitive } };
}
