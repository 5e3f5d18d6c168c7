import { test } from 'node:test';
import assert from 'node:assert/strict';

import { remoteForm, remoteRowModel, stateWords, typedFile } from './remotes-model.js';
import { TEXT } from './text.js';
import { VIEWS } from './model.js';

const HOME = '/home/dev';

const view = (extra = {}) => ({
  name: 'devbox',
  destination: 'me@devbox',
  port: null,
  identity: null,
  known_hosts: null,
  state: 'connected',
  detail: '',
  since_ms: Date.UTC(2026, 0, 2, 3, 4, 5),
  pending: 0,
  ...extra,
});

test('every state the core sends has words, and the ones needing the person a hint', () => {
  const states = ['connecting', 'connected', 'unreachable', 'needs_key', 'host_key_unknown', 'host_key_changed',
    'not_running', 'protocol_mismatch', 'failed'];
  for (const state of states) {
    const words = stateWords(state, 'me@devbox', 'ssh said something');
    assert.ok(words.label && words.label !== state, `${state} has words`);
  }
  const key = stateWords('needs_key', 'me@devbox');
  assert.match(key.hint, /authorized_keys/);
  assert.match(key.hint, /password is never asked/);
  assert.equal(key.tone, 'act');
  for (const state of ['host_key_unknown', 'host_key_changed']) {
    const words = stateWords(state, 'me@devbox', 'the core\'s advice');
    assert.match(words.hint, /Run `ssh me@devbox` once in a terminal/i);
    assert.match(words.hint, /check the key/);
    // Never an offer to accept it here.
    assert.doesNotMatch(words.hint, /click|press|accept it here/i);
    assert.equal(words.detail, '', 'the core\'s advice is not repeated');
  }
  assert.equal(stateWords('host_key_changed', 'd').tone, 'alarm');
  assert.match(stateWords('host_key_changed', 'd').hint, /attack/);
  // What ssh said is shown where the page has no words of its own for it.
  const down = stateWords('unreachable', 'd', ' ssh: connect to host 127.0.0.1 port 9: Connection refused ');
  assert.equal(down.detail, 'ssh: connect to host 127.0.0.1 port 9: Connection refused');
  assert.equal(down.label, 'Unreachable');
  assert.equal(down.tone, 'down');
  assert.equal(stateWords('connected', 'd', 'hello').detail, '');
  assert.equal(stateWords('connected', 'd').tone, 'ok');
  // A state from a newer core is shown as it is rather than hidden.
  assert.equal(stateWords('sleeping', 'd').label, 'sleeping');
});

test('a remote row says where it is, since when and how many requests wait', () => {
  const now = Date.UTC(2026, 0, 2, 12);
  const m = remoteRowModel(view({
    port: 2222, identity: '/home/dev/.ssh/id_ed25519', known_hosts: '/etc/ssh/hosts', pending: 2,
  }), HOME, now);
  assert.equal(m.where, 'me@devbox · port 2222 · key ~/.ssh/id_ed25519 · known hosts /etc/ssh/hosts');
  assert.equal(m.waiting, '2 requests waiting');
  assert.match(m.since, /^since /);
  assert.match(m.confirm, /Remove devbox\? Its 2 waiting requests leave this desktop/);
  assert.equal(remoteRowModel(view({ pending: 1 }), HOME, now).waiting, '1 request waiting');
  const none = remoteRowModel(view(), HOME, now);
  assert.equal(none.waiting, 'nothing waiting');
  assert.equal(none.where, 'me@devbox');
  assert.equal(none.confirm, 'Remove devbox? Its settings are forgotten.');
  assert.equal(none.removeLabel, 'Remove the remote machine devbox');
});

test('the add form is checked as the core checks it, naming the field to fix', () => {
  const ok = remoteForm({ name: ' devbox ', destination: ' me@devbox ', port: '', identity: '', knownHosts: '' }, HOME);
  assert.deepEqual(ok, { remote: { name: 'devbox', destination: 'me@devbox' } });
  const full = remoteForm({
    name: 'dev.box_2-x', destination: 'alias', port: '2222', identity: '~/.ssh/k', knownHosts: '/tmp/kh',
  }, HOME);
  assert.deepEqual(full, {
    remote: { name: 'dev.box_2-x', destination: 'alias', port: 2222, identity: '/home/dev/.ssh/k', knownHosts: '/tmp/kh' },
  });
  // A destination starting with '-' would be an option to ssh: refused.
  const dash = remoteForm({ name: 'd', destination: '-oProxyCommand=sh' }, HOME);
  assert.equal(dash.field, 'destination');
  assert.equal(dash.error, TEXT.remotes.dashDestination('-oProxyCommand=sh'));
  for (const bad of ['a b', 'a\tb', 'x'.repeat(256)]) {
    assert.equal(remoteForm({ name: 'd', destination: bad }, HOME).field, 'destination', bad);
  }
  assert.equal(remoteForm({ name: 'd', destination: '' }, HOME).error, TEXT.remotes.noDestination);
  assert.equal(remoteForm({ name: '', destination: 'h' }, HOME).error, TEXT.remotes.noName);
  for (const bad of ['a b', '-x', 'é', 'x'.repeat(33), 'a/b']) {
    assert.equal(remoteForm({ name: bad, destination: 'h' }, HOME).field, 'name', bad);
  }
  for (const bad of ['0', '65536', 'ssh', '-1', '22.5']) {
    assert.equal(remoteForm({ name: 'd', destination: 'h', port: bad }, HOME).field, 'port', bad);
  }
  assert.equal(remoteForm({ name: 'd', destination: 'h', port: '65535' }, HOME).remote.port, 65535);
  const relative = remoteForm({ name: 'd', destination: 'h', identity: 'id_rsa' }, HOME);
  assert.deepEqual(relative, { error: TEXT.remotes.notAbsolute('id_rsa'), field: 'identity' });
  assert.equal(remoteForm({ name: 'd', destination: 'h', knownHosts: 'kh' }, HOME).field, 'knownHosts');
});

test('a typed key or known-hosts file is absolute, ~ made so with the home', () => {
  assert.deepEqual(typedFile('  ', HOME), {});
  assert.deepEqual(typedFile('~/.ssh/k', HOME), { path: '/home/dev/.ssh/k' });
  assert.deepEqual(typedFile('~/.ssh/k', '/home/dev/'), { path: '/home/dev/.ssh/k' });
  assert.deepEqual(typedFile('/k', null), { path: '/k' });
  assert.ok(typedFile('~/k', null).error, 'no home known: ~ cannot be made absolute');
  assert.ok(typedFile('k', HOME).error);
});

test('the remote machines view comes before General and has a name', () => {
  assert.ok(VIEWS.includes('remotes'));
  assert.equal(VIEWS[VIEWS.length - 1], 'general');
  assert.equal(TEXT.views.remotes, 'Remote machines');
});
