// Unit tests of the prompt dialog's pure logic (model.js), run by node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  SHORTCUTS, afterSecretText, asksCheck, bulkTitle, chainShown, choiceAction, choiceKeys, confirmAllowed,
  confirmedAnswer, coversText, diffLabel, diffLines, isNewer, keyName, kindOf, limitsExtra,
  programOnly, programText, scopeNote, scopePending, selectedOption, sensitiveText,
  sessionText, startLifetime, startScope, stepDefault, subjectKind,
} from './model.js';
import { TEXT } from './text.js';

const choices = (...names) => names.map((name) => ({ name }));
const fileView = {
  kind: 'filesystem',
  operation: 'write',
  choices: choices('once', 'session', 'project', 'global', 'deny_session', 'never', 'never_global'),
  bulk: null,
  sensitive: null,
  session_scope: { text: '~/p/out', full: '/home/u/p/out' },
  session_holder: 'this session',
};
const sensitive = { location: { text: '~/.ssh' }, what: 'SSH keys' };

const preview = (over = {}) => ({
  target: 'project',
  file: { text: '~/p/.opencode/sandbox.json', full: '/home/u/p/.opencode/sandbox.json' },
  file_exists: true,
  array: 'filesystem.allowWrite',
  current: [],
  error: null,
  options: [
    { kind: 'exact', label: 'This file', root: { text: '~/p/out/a' }, entry: 'out/a', suggested: false, already_listed: false, covers_sensitive: [] },
    { kind: 'parent', label: 'Its folder', root: { text: '~/p/out' }, entry: 'out', suggested: true, already_listed: false, covers_sensitive: [] },
  ],
  ...over,
});

test('the shortcuts: every letter the dialog shows, and keys named as they are typed', () => {
  assert.deepEqual(SHORTCUTS, {
    o: 'once', s: 'session', p: 'project', g: 'global', d: 'deny', a: 'bulk',
    x: 'deny_session', n: 'never', e: 'never_global',
  });
  assert.equal(keyName('O'), 'o');
  assert.equal(keyName('Enter'), 'Enter');
  assert.equal(keyName('Escape'), 'Escape');
});

test('an update is drawn once, in order; one without a number is not told apart from a new one', () => {
  assert.equal(isNewer({ seq: 0 }, -1), true);
  assert.equal(isNewer({ seq: 3 }, 3), false);
  assert.equal(isNewer({ seq: 2 }, 3), false);
  assert.equal(isNewer(null, -1), false);
  assert.equal(isNewer(undefined, -1), false);
  // As the single script did: `seq <= last` is false for a missing seq, so it is drawn.
  assert.equal(isNewer({}, 3), true);
});

test('the subject: network is an address, a filesystem request its operation', () => {
  assert.equal(kindOf({ kind: 'network', operation: 'connect' }), 'network');
  assert.equal(kindOf(fileView), 'write');
  assert.equal(subjectKind({ kind: 'network', operation: 'connect' }), 'Address');
  assert.equal(subjectKind({ kind: 'filesystem', operation: 'read' }), 'Read');
  assert.equal(subjectKind(fileView), 'Write');
});

test('the program row names the executable, else the name, and the pid when known', () => {
  assert.equal(programText({ exe: '/usr/bin/python3', name: 'python3', pid: 42 }), '/usr/bin/python3 · pid 42');
  assert.equal(programText({ exe: null, name: 'python3', pid: 0 }), 'python3 · pid 0');
  assert.equal(programText({ exe: '', name: 'sh', pid: null }), 'sh');
  assert.equal(programText({ exe: null, name: '', pid: undefined }), '');
});

test('the session row puts the title before the id, only when both are known', () => {
  assert.equal(sessionText({ session: 'ses_1', origin: { session_title: 'Fix it' } }), 'Fix it · ses_1');
  assert.equal(sessionText({ session: 'ses_1', origin: null }), 'ses_1');
  assert.equal(sessionText({ session: null, origin: { session_title: 'Fix it' } }), null);
});

test('a sensitive path is named with what it holds', () => {
  assert.equal(sensitiveText({ sensitive }), '~/.ssh holds SSH keys. Deny unless you expected this request.');
  assert.equal(sensitiveText({ sensitive: null }), '');
});

test('the answer-all tooltip counts the others under the scope', () => {
  assert.equal(
    bulkTitle({ ...fileView, bulk: { count: 3 } }),
    'Allow /home/u/p/out for this session: answers this request and the 2 others under it; sensitive files in it still ask',
  );
  assert.equal(
    bulkTitle({ ...fileView, kind: 'network', bulk: { count: 2 } }),
    'Allow /home/u/p/out for this session: answers this request and the 1 others under it',
  );
  assert.equal(bulkTitle(fileView), '');
});

test('the default choice also takes Enter', () => {
  assert.deepEqual(choiceKeys({ shortcut: 'O', default: true }), { kbd: 'O ↵', aria: 'O Enter' });
  assert.deepEqual(choiceKeys({ shortcut: 'D', default: false }), { kbd: 'D', aria: 'D' });
});

test('a chain of more than four shows the first and the last two, the rest left out between', () => {
  const chain = [1, 2, 3, 4, 5, 6];
  assert.deepEqual(chainShown(chain), [1, null, 5, 6]);
  assert.deepEqual(chainShown([1, 2, 3, 4]), [1, 2, 3, 4]);
  assert.deepEqual(chainShown([]), []);
});

test('the lifetime starts at the last one chosen if it is offered, else the default', () => {
  const options = [{ value: '' }, { value: '15m' }, { value: '1d' }];
  assert.equal(startLifetime({ options, chosen: '15m' }), '15m');
  assert.equal(startLifetime({ options, chosen: '3h' }), '');
  assert.equal(startLifetime({ options, chosen: null }), '');
});

test('the program limit is named by its file name, and the limits leave out what is unset', () => {
  assert.equal(programOnly('/usr/bin/python3'), 'only python3');
  assert.equal(programOnly('node'), 'only node');
  assert.deepEqual(limitsExtra('', false), {});
  assert.deepEqual(limitsExtra('15m', false), { for: '15m' });
  assert.deepEqual(limitsExtra('', true), { program: true });
  assert.deepEqual(limitsExtra('1h', true), { for: '1h', program: true });
});

test('once and deny answer at once; a choice not offered does nothing', () => {
  const limits = { for: '15m' };
  assert.deepEqual(choiceAction(fileView, 'once', limits), { answer: 'once' });
  assert.deepEqual(choiceAction(fileView, 'deny', limits), { answer: 'deny' });
  // Deny is always there, offered or not.
  assert.deepEqual(choiceAction({ ...fileView, choices: [] }, 'deny', limits), { answer: 'deny' });
  assert.equal(choiceAction({ ...fileView, choices: choices('once') }, 'project', limits), null);
  assert.equal(choiceAction(null, 'once', limits), null);
  assert.equal(choiceAction(fileView, 'nonsense', limits), null);
});

test('session answers carry the limits; a denial for the session says so', () => {
  const limits = { for: '15m', program: true };
  assert.deepEqual(choiceAction(fileView, 'session', limits), { answer: 'session', extra: limits });
  assert.deepEqual(choiceAction(fileView, 'deny_session', limits), {
    answer: 'deny',
    extra: { session: true, for: '15m', program: true },
  });
  assert.deepEqual(choiceAction(fileView, 'deny_session', {}), { answer: 'deny', extra: { session: true } });
});

test('bulk is the session answer, only when it is offered', () => {
  assert.equal(choiceAction(fileView, 'bulk', {}), null);
  assert.deepEqual(choiceAction({ ...fileView, bulk: { count: 2 } }, 'bulk', {}), { answer: 'session', extra: {} });
});

test('a sensitive session grant and a file answer open a second step', () => {
  assert.deepEqual(choiceAction({ ...fileView, sensitive }, 'session', {}), { step: 'confirm' });
  for (const name of ['project', 'global', 'never', 'never_global']) {
    assert.deepEqual(choiceAction(fileView, name, {}), { step: 'scope', name });
  }
});

test('what a scope step confirms, by its button', () => {
  assert.deepEqual(scopePending('project'), { choice: 'project', target: 'project', never: false });
  assert.deepEqual(scopePending('global'), { choice: 'global', target: 'global', never: false });
  assert.deepEqual(scopePending('never'), { choice: 'never', target: 'project', never: true });
  assert.deepEqual(scopePending('never_global'), { choice: 'never', target: 'global', never: true });
});

test('the scope starts at the suggested option, else the first, else none', () => {
  assert.equal(startScope(preview()), 'parent');
  const none = preview().options.map((o) => ({ ...o, suggested: false }));
  assert.equal(startScope(preview({ options: none })), 'exact');
  assert.equal(startScope(preview({ options: [] })), null);
  assert.equal(selectedOption(preview(), 'exact').entry, 'out/a');
  assert.equal(selectedOption(preview(), 'suggested'), undefined);
  assert.equal(selectedOption(null, 'exact'), null);
});

test('the diff shows the array, its last two entries and the new one', () => {
  const p = preview({ current: ['a', 'b', 'c'] });
  assert.deepEqual(diffLines(p, p.options[1]), [
    { text: 'filesystem.allowWrite', cls: 'key' },
    { text: '    … 1 more' },
    { text: '    "b"' },
    { text: '    "c"' },
    { text: '  + "out"', cls: 'add' },
  ]);
  assert.equal(diffLabel(p, p.options[1]), 'filesystem.allowWrite in /home/u/p/.opencode/sandbox.json gains out');
  assert.equal(diffLabel(p, undefined), '');
});

test('the diff says when the entry is listed already, and when the file cannot be edited', () => {
  const listed = preview();
  listed.options[0].already_listed = true;
  assert.deepEqual(diffLines(listed, listed.options[0]), [
    { text: 'filesystem.allowWrite', cls: 'key' },
    { text: '    (already listed: the file stays as it is)' },
  ]);
  assert.deepEqual(diffLines(preview(), undefined), [{ text: 'filesystem.allowWrite', cls: 'key' }]);
  assert.deepEqual(diffLines(preview({ error: 'line 3, column 1: expected value' }), undefined), [
    { text: 'Cannot edit this file: line 3, column 1: expected value' },
  ]);
});

test('the note says what the entry does from then on, in which runs', () => {
  const p = preview();
  assert.equal(
    scopeNote(fileView, p, p.options[1], false),
    'Allows this request now and, from then on, writes under ~/p/out in every run of this ' +
      'project without asking, until the entry is removed from the file.',
  );
  assert.equal(
    scopeNote({ ...fileView, operation: 'read' }, preview({ target: 'global' }), p.options[1], true),
    'Denies this request now and, from then on, reads of ~/p/out in every run of every ' +
      'project without asking, until the entry is removed from the file.',
  );
  assert.equal(scopeNote(fileView, p, undefined, false), '');
  assert.equal(scopeNote(null, p, p.options[1], false), '');
  // A folder entry names the sensitive names it lets through too.
  const folder = { ...p.options[1], covers_names: ['id_*', '*.key'] };
  assert.equal(
    scopeNote(fileView, p, folder, false),
    'Allows this request now and, from then on, writes under ~/p/out in every run of this ' +
      'project without asking, until the entry is removed from the file. Files in it named ' +
      'id_*, *.key are allowed too; a session answer would still ask for them.',
  );
});

test('a scope that covers sensitive places names the first two', () => {
  assert.equal(coversText([]), '');
  assert.equal(coversText(['~/.ssh']), 'Also covers ~/.ssh.');
  assert.equal(coversText(['~/.ssh', '~/.aws']), 'Also covers ~/.ssh, ~/.aws.');
  assert.equal(coversText(['~/.ssh', '~/.aws', '~/.gnupg', '~/.netrc']), 'Also covers ~/.ssh, ~/.aws and 2 more.');
});

test('confirming needs an editable file and a scope, and the box for a sensitive allow', () => {
  const base = { step: 'scope', preview: preview(), scope: 'exact', view: fileView, pending: scopePending('project'), checked: false };
  assert.equal(confirmAllowed(base), true);
  assert.equal(confirmAllowed({ ...base, preview: null }), false);
  assert.equal(confirmAllowed({ ...base, preview: preview({ error: 'bad' }) }), false);
  assert.equal(confirmAllowed({ ...base, scope: 'suggested' }), false);
  const risky = { ...base, view: { ...fileView, sensitive } };
  assert.equal(confirmAllowed(risky), false);
  assert.equal(confirmAllowed({ ...risky, checked: true }), true);
  // "Never" takes access away: no box to check.
  assert.equal(confirmAllowed({ ...risky, pending: scopePending('never') }), true);
  // The session's confirmation has no preview; only the box counts.
  const session = { step: 'confirm', preview: null, scope: null, view: risky.view, pending: { choice: 'session' } };
  assert.equal(confirmAllowed({ ...session, checked: false }), false);
  assert.equal(confirmAllowed({ ...session, checked: true }), true);
});

test('the box and the default button of a second step', () => {
  const risky = { ...fileView, sensitive };
  assert.equal(asksCheck('main', risky, null), false);
  assert.equal(asksCheck('scope', risky, scopePending('project')), true);
  assert.equal(asksCheck('scope', risky, scopePending('never')), false);
  assert.equal(asksCheck('confirm', fileView, { choice: 'session' }), false);
  assert.equal(stepDefault(risky, scopePending('global')), 'back');
  assert.equal(stepDefault(risky, scopePending('never_global')), 'confirm');
  assert.equal(stepDefault(fileView, scopePending('project')), 'confirm');
  assert.equal(stepDefault(null, null), 'confirm');
});

test('what a second step answers', () => {
  assert.deepEqual(confirmedAnswer({ choice: 'session', limits: { for: '1h' } }, null, true), {
    choice: 'session',
    extra: { confirmed: true, for: '1h' },
  });
  assert.deepEqual(confirmedAnswer(scopePending('never'), 'parent', false), {
    choice: 'never',
    extra: { scope: 'parent' },
  });
  assert.deepEqual(confirmedAnswer(scopePending('never_global'), 'exact', true), {
    choice: 'never',
    extra: { scope: 'exact', global: true },
  });
  assert.deepEqual(confirmedAnswer(scopePending('global'), 'exact', true), {
    choice: 'global',
    extra: { scope: 'exact', confirmed: true },
  });
});

test('the texts the page writes itself, word for word', () => {
  assert.equal(TEXT.documentTitle('Allow write access?'), 'Allow write access? — landstrip-tray');
  assert.equal(TEXT.queue(2, 5), '2 of 5');
  assert.equal(TEXT.queueLabel(2, 5), 'Request 2 of 5 waiting');
  assert.equal(TEXT.subjectLabel(false, '/a'), 'Path: /a');
  assert.equal(TEXT.subjectLabel(true, '1.2.3.4:443'), 'Address: 1.2.3.4:443');
  assert.equal(TEXT.choiceLabel('Project…', 'Add it to the file'), 'Project. Add it to the file');
  assert.equal(TEXT.programOnlyTitle('/usr/bin/node'), 'Only requests of /usr/bin/node (R)');
  assert.equal(TEXT.process('sh', 7), 'sh · pid 7');
  assert.equal(TEXT.chainMore(3), '… 3 more');
  assert.equal(TEXT.hint.allows(false), ' allows everything under ');
  assert.equal(TEXT.hint.allows(true), ' allows ');
  assert.equal(TEXT.hint.rest('this session', [], true), ' for this session; nothing is saved.');
  assert.equal(TEXT.hint.rest('this run', ['1 hour', 'only node'], true), ' for this run (1 hour, only node); nothing is saved.');
  // A file scope says what it never covers: a sensitive request asks for itself.
  assert.equal(
    TEXT.hint.rest('this session', [], false),
    ' for this session; nothing is saved. Sensitive files in it (keys, .env, credentials) still ask.',
  );
  assert.equal(TEXT.confirm.title('~/.ssh'), 'Allow ~/.ssh for this session?');
  assert.equal(
    TEXT.confirm.text('python3', 'write', '~/.ssh', 'this session', 1),
    'python3 could then write anything under ~/.ssh without asking again, for this session.',
  );
  assert.equal(
    TEXT.confirm.text('python3', 'read', '~/.ssh', 'this session', 3),
    'python3 could then read anything under ~/.ssh without asking again, for this session ' +
      '(this request and 2 more waiting).',
  );
  assert.equal(TEXT.confirm.check('~/.ssh', 'SSH keys'), 'Yes, allow access to ~/.ssh (SSH keys).');
  assert.equal(TEXT.scope.check('~/.ssh', 'SSH keys', false), 'Yes, allow access to ~/.ssh (SSH keys) in every run.');
  assert.equal(
    TEXT.scope.check('~/.ssh', 'SSH keys', true),
    'Yes, allow access to ~/.ssh (SSH keys) in every run of every project.',
  );
  assert.equal(TEXT.scope.option(1, 'This file'), '1  This file');
  assert.equal(TEXT.scope.secretsTitle(['~/.ssh', '~/.aws']), 'Also covers ~/.ssh, ~/.aws');
  assert.equal(TEXT.startFailed(new Error('no')), 'The dialog could not start: Error: no');
});

test('after a secret: the earlier read and its age, and a connect answered once or for its run only', () => {
  const read = { path: { text: '~/.aws/credentials', full: '/home/u/.aws/credentials' }, what: 'AWS credentials', at_ms: 10_000, network: true };
  const net = { ...fileView, kind: 'network', operation: 'connect', choices: choices('once', 'session'), after_secret: read };
  assert.equal(
    afterSecretText(net, 14_400),
    'This run read ~/.aws/credentials (AWS credentials) 4\u00a0s ago. This connection could send it out: deny unless you expected it.',
  );
  assert.match(afterSecretText(net, 10_000 + 125_000), / 2\u00a0min ago\./);
  assert.equal(afterSecretText(fileView, 0), '');
  const limits = { for: '1h', program: true };
  assert.deepEqual(choiceAction(net, 'once', limits), { answer: 'once', extra: { confirmed_after_secret: true } });
  assert.deepEqual(choiceAction(net, 'session', limits), { answer: 'session', extra: { for: 'run' } });
  assert.deepEqual(choiceAction(net, 'deny', limits), { answer: 'deny' });
  assert.equal(choiceAction(net, 'deny_session', limits), null);
  // A write outside the project keeps its answers.
  const write = { ...fileView, after_secret: { ...read, network: false } };
  assert.deepEqual(choiceAction(write, 'session', limits), { answer: 'session', extra: limits });
  assert.match(afterSecretText(write, 10_000), /0\u00a0s ago\. Check that this write/);
});
