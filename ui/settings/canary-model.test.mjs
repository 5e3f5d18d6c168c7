import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  canaryAddedMessage, canaryPath, canaryRowModel, incidentActions, incidentModel, incidentsNewestFirst,
} from './canary-model.js';
import { VIEWS } from './model.js';

const HOME = '/home/dev';

const incident = (extra = {}) => ({
  id: 3,
  session: 'ses_abc',
  run: '1700000000000.4',
  project: '/home/dev/p',
  path: '/home/dev/.aws/credentials',
  exe: '/usr/bin/python3.12',
  pids: [40, 41, 42],
  at_ms: Date.UTC(2026, 0, 2, 3, 4, 5),
  state: 'stopped',
  origin: {
    chain: [
      { pid: 40, program: 'sh', argv: { text: 'sh -c …', full: 'sh -c cat' }, command: { text: 'npm ci', full: 'npm ci --verbose' } },
      { pid: 42, exe: '/usr/bin/python3.12', program: 'python3', argv: { text: 'python3 x.py', full: 'python3 x.py' }, command: { text: 'python3 x.py', full: 'python3 x.py' } },
    ],
    chain_cut: false,
    opencode: { session: 'ses_abc', title: 'Fix the build' },
  },
  earlier: [
    { at_ms: Date.UTC(2026, 0, 2, 3, 4, 1), operation: 'write', subject: '/home/dev/out.txt', outcome: 'deny', by: 'canary' },
  ],
  ...extra,
});

test('a typed canary path: ~ is the home, anything else must be absolute', () => {
  assert.deepEqual(canaryPath(' ~/.aws/credentials ', HOME), { path: '/home/dev/.aws/credentials' });
  assert.deepEqual(canaryPath('~/.npmrc', '/home/dev/'), { path: '/home/dev/.npmrc' });
  assert.deepEqual(canaryPath('/srv/secret.env', HOME), { path: '/srv/secret.env' });
  assert.match(canaryPath('.env', HOME).error, /not a full path/);
  assert.match(canaryPath('~other/x', HOME).error, /not a full path/);
  // Without a known home, ~ cannot be made absolute.
  assert.match(canaryPath('~/.npmrc', null).error, /not a full path/);
  assert.match(canaryPath('   ', HOME).error, /Type the path/);
});

test('a canary row shows ~/…, whether its decoy is there, and a Remove that says which', () => {
  const row = canaryRowModel({ path: '/home/dev/.ssh/id_ed25519', present: true }, HOME);
  assert.equal(row.path, '~/.ssh/id_ed25519');
  assert.equal(row.full, '/home/dev/.ssh/id_ed25519');
  assert.equal(row.state, 'decoy in place');
  assert.equal(row.removeLabel, 'Remove the canary ~/.ssh/id_ed25519 (the file stays)');
  assert.match(canaryRowModel({ path: '/x', present: false }, HOME).state, /still trips the wire/);
});

test('adding says which decoy was written, or that the file was kept', () => {
  assert.equal(canaryAddedMessage({ path: '/home/dev/.aws/credentials', decoy: 'aws' }, HOME),
    'Canary set at ~/.aws/credentials: wrote fake AWS credentials.');
  assert.equal(canaryAddedMessage({ path: '/home/dev/.ssh/id_rsa', decoy: 'ssh_key' }, HOME),
    'Canary set at ~/.ssh/id_rsa: wrote a fake SSH private key.');
  assert.equal(canaryAddedMessage({ path: '/home/dev/.npmrc', decoy: null }, HOME),
    'Canary set at ~/.npmrc: the file there is kept as it is.');
  // A kind this page does not know yet is named as the core names it.
  assert.match(canaryAddedMessage({ path: '/x', decoy: 'gpg' }, HOME), /wrote gpg\.$/);
});

test('a stopped incident offers Kill first, then Resume; a resumed one only Kill', () => {
  assert.deepEqual(incidentActions('stopped').map((a) => a.action), ['kill', 'resume']);
  assert.equal(incidentActions('stopped')[0].label, 'Kill the stopped processes');
  assert.equal(incidentActions('stopped')[1].label, 'Resume (the read stays denied)');
  assert.deepEqual(incidentActions('resumed').map((a) => a.action), ['kill']);
  for (const ended of ['killed', 'gone', 'not_stopped']) assert.deepEqual(incidentActions(ended), [], ended);
});

test('an incident in words: state, canary, program, command, chain, session, pids, earlier requests', () => {
  const m = incidentModel(incident(), HOME, Date.UTC(2026, 0, 2, 9));
  assert.equal(m.alert, true);
  assert.equal(m.stateText, 'Stopped');
  assert.equal(m.path, '~/.aws/credentials');
  assert.equal(m.headline, 'python3 read the canary ~/.aws/credentials');
  assert.equal(m.command, 'npm ci');
  assert.equal(m.commandFull, 'npm ci --verbose');
  assert.equal(m.chain, 'sh → python3');
  assert.equal(m.session, '“Fix the build” (ses_abc)');
  assert.equal(m.pids, '40, 41, 42');
  assert.equal(m.earlierSummary, "The run's earlier requests (1)");
  assert.equal(m.earlier.length, 1);
  assert.match(m.earlier[0], /write ~\/out\.txt — denied \(canary\)$/);
  assert.deepEqual(m.actions.map((a) => a.action), ['kill', 'resume']);
});

test('an incident without an origin names the exe, the run, and no pids', () => {
  const m = incidentModel(incident({ session: null, origin: undefined, pids: [], state: 'not_stopped', earlier: [] }), HOME);
  assert.equal(m.alert, false);
  assert.equal(m.headline, 'python3.12 read the canary ~/.aws/credentials');
  assert.equal(m.command, null);
  assert.equal(m.chain, null);
  assert.equal(m.session, 'run 1700000000000.4');
  assert.equal(m.pids, 'none');
  assert.deepEqual(m.actions, []);
  const bare = incidentModel(incident({ exe: undefined, origin: undefined, state: 'killed' }), HOME);
  assert.equal(bare.headline, 'The canary ~/.aws/credentials was read');
  assert.equal(bare.stateText, 'Killed');
  // A session without an opencode title is shown by its id.
  assert.equal(incidentModel(incident({ origin: { chain: [] } }), HOME).session, 'ses_abc');
});

test('incidents are listed newest first; the Canaries view sits before General', () => {
  assert.deepEqual(incidentsNewestFirst([{ id: 1 }, { id: 2 }]).map((i) => i.id), [2, 1]);
  assert.ok(VIEWS.includes('canaries'));
  assert.equal(VIEWS[VIEWS.length - 1], 'general');
});
