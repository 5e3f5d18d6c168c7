import { test } from 'node:test';
import assert from 'node:assert/strict';

import { grantLimit, grantWhat, nextRedraw } from './grants-model.js';

const grant = (extra = {}) => ({
  id: 1, key: { project: '/p', session: null }, effect: 'allow',
  scope: { kind: 'filesystem', operation: 'write', root: '/p/out' },
  run: null, program: null, remaining_ms: null, ...extra,
});

test('a grant says whether it allows or denies, and what', () => {
  assert.equal(grantWhat(grant()), 'allow write /p/out');
  assert.equal(grantWhat(grant({ effect: 'deny', scope: { kind: 'network', operation: 'connect', target: '127.0.0.1:9' } })),
    'deny connect 127.0.0.1:9');
});

test('its limits: the time it lapses, its run, its program', () => {
  const now = new Date(2026, 0, 2, 10, 0, 0).getTime();
  assert.equal(grantLimit(grant(), now), 'until landstrip-tray quits');
  assert.equal(grantLimit(grant({ for: '15m', remaining_ms: 14 * 60_000 }), now), 'for 15m, until 10:14');
  assert.equal(grantLimit(grant({ for: 'run', run: 3 }), now), 'until its run ends');
  assert.equal(grantLimit(grant({ program: '/usr/bin/python3.11' }), now),
    'until landstrip-tray quits · only python3.11');
});

test('one redraw at the next lapse, none when nothing lapses', () => {
  assert.equal(nextRedraw([grant(), grant({ run: 2 })]), null);
  assert.equal(nextRedraw([grant({ remaining_ms: 9000 }), grant({ remaining_ms: 2000 }), grant()]), 2050);
  assert.equal(nextRedraw([]), null);
});
