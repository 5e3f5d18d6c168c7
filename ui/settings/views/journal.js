// The write journal in the Activity view: each journaled write with "Undo this write", each
// session with "Undo this session's writes"; both show the same preview (a dry run in the
// core) before anything is restored.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { fail, say } from '../app.js';

/** The undo being previewed: its target (`{ids:[…]}` or `{session:…}`) and the outcomes. */
let pending = null;

/** Loads the journal and draws it into `#journal`. */
export async function loadJournal() {
  const items = await invoke('settings_journal');
  renderJournal(items);
}

/** The journal's writes grouped by session (or run), newest session first. */
function bySession(items) {
  const groups = new Map();
  for (const item of items) {
    const key = item.session ?? item.run;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  return [...groups.entries()].reverse();
}

function renderJournal(items) {
  const box = document.getElementById('journal');
  if (!box) return;
  const t = TEXT.journal;
  const writeRow = (w) => h('li', { 'data-journal-id': String(w.id) },
    h('span', { className: 'mono' }, w.path),
    h('span', { className: 'hint' }, ` ${w.syscall ?? 'write'} · ${t.before[w.before] ?? w.before} `),
    w.undoable
      ? h('button', {
        type: 'button', className: 'link', 'data-undo-write': String(w.id),
        onclick: () => preview({ ids: [w.id] }).catch(fail),
      }, t.undoWrite)
      : h('span', { className: 'hint' }, t.notUndoable(w.why ?? '')));
  const groups = bySession(items).map(([session, writes]) => h('section', { className: 'journal-session', 'data-session': session },
    h('h3', {}, t.session(session), ' ',
      writes.some((w) => w.undoable)
        ? h('button', {
          type: 'button', className: 'link', 'data-undo-session': session,
          onclick: () => preview({ session }).catch(fail),
        }, t.undoSession)
        : null),
    h('ul', { className: 'journal-writes' }, writes.slice().reverse().map(writeRow))));
  box.replaceChildren(
    h('h2', {}, t.heading),
    h('p', { className: 'hint' }, t.note),
    h('div', { id: 'journal-preview', hidden: true }),
    ...(items.length ? groups : [h('p', { className: 'empty' }, t.none)]));
}

/** The same preview for a write and for a session: what an undo would do, nothing changed. */
async function preview(target) {
  const outcomes = await invoke('settings_journal_undo', { target, dryRun: true });
  pending = { target, outcomes };
  const t = TEXT.journal;
  const panel = document.getElementById('journal-preview');
  const restorable = outcomes.some((o) => o.outcome === 'would_restore');
  panel.replaceChildren(h('section', { className: 'journal-preview', 'aria-labelledby': 'journal-preview-title' },
    h('h3', { id: 'journal-preview-title' }, t.previewHeading),
    h('ul', {}, outcomes.map((o) => h('li', { 'data-outcome': o.outcome },
      h('span', { className: 'mono' }, o.path),
      ` ${o.outcome === 'would_restore' ? t.would : t.refused}: ${o.detail}`))),
    restorable ? null : h('p', { className: 'hint' }, t.nothingToRestore),
    h('div', { className: 'actions' },
      h('button', { type: 'button', id: 'journal-cancel', onclick: closePreview }, t.cancel),
      h('button', {
        type: 'button', id: 'journal-restore', className: 'suggested', disabled: !restorable,
        onclick: () => restore().catch(fail),
      }, t.restore))));
  panel.hidden = false;
  document.getElementById('journal-restore')?.focus();
}

function closePreview() {
  pending = null;
  const panel = document.getElementById('journal-preview');
  panel.hidden = true;
  panel.replaceChildren();
}

async function restore() {
  if (!pending) return;
  const outcomes = await invoke('settings_journal_undo', { target: pending.target, dryRun: false });
  pending = null;
  const restored = outcomes.filter((o) => o.outcome === 'restored').length;
  const refused = outcomes.length - restored;
  say(TEXT.journal.done(restored, refused), refused ? 'error' : 'info');
  await loadJournal();
}
