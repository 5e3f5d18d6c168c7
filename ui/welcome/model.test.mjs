import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rows, toAdd, doctorView, connectView, homeRelative } from './model.js';

test('a --project one and the current directory are checked, a served one is checked and stays out of the add', () => {
  const drawn = rows(
    [
      { dir: '/home/u/src/given', source: 'given', served: false },
      { dir: '/home/u/src/app', source: 'currentDir', served: false },
      { dir: '/home/u/src/lib', source: 'activity', served: false },
      { dir: '/srv/x', source: 'presenter', served: true },
    ],
    '/home/u',
  );
  assert.deepEqual(drawn.map((r) => [r.shown, r.checked]), [
    ['~/src/given', true],
    ['~/src/app', true],
    ['~/src/lib', false],
    ['/srv/x', true],
  ]);
  assert.equal(drawn[0].source, 'given with --project');
  assert.equal(drawn[3].source, 'open in opencode now');
  assert.deepEqual(toAdd(drawn), ['/home/u/src/given', '/home/u/src/app']);
});

test('homeRelative leaves other paths and look-alike prefixes alone', () => {
  assert.equal(homeRelative('/home/user2/x', '/home/user'), '/home/user2/x');
  assert.equal(homeRelative('/home/user', '/home/user'), '~');
});

test('the doctor box: ok, failed, missing with the install hint', () => {
  const ok = doctorView({ state: 'ok', binary: '/b/landstrip', version: '0.19.2', implementation: 'landlock+seccomp' });
  assert.equal(ok.state, 'ok');
  assert.match(ok.headline, /0\.19\.2 works here \(landlock\+seccomp\)/);
  assert.equal(ok.install, false);
  const missing = doctorView({ state: 'missing', reason: 'not on PATH', install: '…' });
  assert.equal(missing.install, true);
  assert.equal(missing.detail, 'not on PATH');
  const failed = doctorView({ state: 'failed', binary: '/b', message: 'landlock off' });
  assert.equal(failed.detail, 'landlock off');
  assert.equal(doctorView(undefined).state, 'checking');
});

test('the connect box leads with the installed opencode, and shows both, 1.x first, when unknown', () => {
  const v1 = { generation: 'v1', label: 'opencode 1.x', command: 'opencode plugin opencode-landstrip@0.19.1', config: '"plugin": ["opencode-landstrip@0.19.1"]' };
  const v2 = { generation: 'v2', label: 'opencode 2', command: 'opencode plugin install opencode-landstrip', config: '"plugins": ["opencode-landstrip"]' };
  const two = connectView({ installed: { state: 'found', version: '2.0.20', major: 2 }, connect: [v2, v1] });
  assert.equal(two.state, 'found');
  assert.equal(two.line, 'opencode 2.0.20 is installed here.');
  assert.deepEqual(two.items.map((i) => [i.heading, i.command]), [
    ['For your opencode 2.0.20:', 'opencode plugin install opencode-landstrip'],
    ['For opencode 1.x:', 'opencode plugin opencode-landstrip@0.19.1'],
  ]);
  assert.equal(two.items[0].config, 'or add "plugins": ["opencode-landstrip"] to opencode.json');
  const missing = connectView({ installed: { state: 'missing' }, connect: [v1, v2] });
  assert.equal(missing.line, 'opencode was not found on PATH.');
  assert.deepEqual(missing.items.map((i) => i.heading), ['For opencode 1.x:', 'For opencode 2:']);
  // While the app looks (and the words it falls back to are the core's).
  const checking = connectView(undefined);
  assert.equal(checking.state, 'checking');
  assert.deepEqual(checking.items.map((i) => [i.generation, i.command]), [
    ['v1', v1.command],
    ['v2', v2.command],
  ]);
});
