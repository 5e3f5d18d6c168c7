import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rows, toAdd, doctorView, homeRelative } from './model.js';

test('the current directory is checked, a served one is checked and stays out of the add', () => {
  const drawn = rows(
    [
      { dir: '/home/u/src/app', source: 'currentDir', served: false },
      { dir: '/home/u/src/lib', source: 'activity', served: false },
      { dir: '/srv/x', source: 'presenter', served: true },
    ],
    '/home/u',
  );
  assert.deepEqual(drawn.map((r) => [r.shown, r.checked]), [
    ['~/src/app', true],
    ['~/src/lib', false],
    ['/srv/x', true],
  ]);
  assert.equal(drawn[2].source, 'open in opencode now');
  assert.deepEqual(toAdd(drawn), ['/home/u/src/app']);
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
