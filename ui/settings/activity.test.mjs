import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  activityFilter, activityRowModel, activitySummary, count, focusFromAnswering, grantChange, queryList, shortTime,
} from './model.js';

const row = (entry, extra = {}) => ({
  entry: {
    ts: Date.UTC(2026, 0, 2, 3, 4, 5), project: '/h/p', kind: 'filesystem', operation: 'write',
    subject: '/h/p/out', outcome: 'allow', by: 'policy', pid: 7, ...entry,
  },
  projectShown: '~/p', subjectShown: '~/p/out', program: 'python3 (pid 7)', programName: 'python3',
  explainable: false, grantable: false, ...extra,
});

test('the page says how many rows of how many, and what Show more adds', () => {
  const page = { rows: new Array(100).fill(row({})), total: 9871 };
  assert.deepEqual(activitySummary(page), { shown: 100, total: 9871, more: 100, text: 'Showing 100 of 9,871, newest first.' });
  assert.equal(activitySummary({ rows: new Array(350).fill(row({})), total: 400 }).more, 50);
  assert.equal(activitySummary({ rows: [], total: 0 }).more, 0);
  assert.equal(count(10000), '10,000');
  assert.equal(count(999), '999');
});

test('the filter carries the limit the view asks for', () => {
  assert.deepEqual(activityFilter({ project: '', decision: 'any', text: 'x', limit: 400 }), { grep: 'x', limit: 400 });
});

test('a row in words, with the follow-up the core says applies', () => {
  const allowed = activityRowModel(row({}, { explainable: true }), Date.UTC(2026, 0, 2, 9));
  assert.equal(allowed.decision, 'allowed');
  assert.equal(allowed.by, 'policy');
  assert.equal(allowed.explain, 'Show the entry that allowed it');
  assert.equal(allowed.grant, false);
  assert.equal(allowed.programName, 'python3');
  assert.equal(allowed.pid, 'pid 7');
  const hard = activityRowModel(row({ outcome: 'deny', by: 'hard_denial' }, { explainable: true }));
  assert.equal(hard.explain, 'Show the entry that denied it');
  assert.equal(hard.by, 'hard denial');
  const asked = activityRowModel(row({ outcome: 'deny', by: 'user' }, { grantable: true }));
  assert.equal(asked.explain, null);
  assert.equal(asked.grant, true);
  assert.equal(asked.by, 'you');
  const canary = activityRowModel(row({ outcome: 'deny', by: 'canary', operation: 'read' }, { grantable: true }));
  assert.equal(canary.grant, false);
  assert.equal(canary.by, 'canary');
});

test('an asked request shows its command on the program', () => {
  const plain = activityRowModel(row({}));
  assert.equal(plain.program, 'python3 (pid 7)');
  const asked = activityRowModel(row({ by: 'user', command: 'npm ci --token=***' }));
  assert.equal(asked.program, 'python3 (pid 7)\nnpm ci --token=***');
  assert.equal(asked.programName, 'python3');
});

test('times: today only the time, before that the date', () => {
  const t = Date.UTC(2026, 0, 2, 3, 4, 5);
  assert.equal(shortTime(t, Date.UTC(2026, 0, 2, 20), 'UTC'), '03:04:05');
  assert.equal(shortTime(t, Date.UTC(2026, 0, 5), 'UTC'), '2026-01-02 03:04');
});

test('where Show entry lands, and what saving a grant sends', () => {
  assert.deepEqual(
    focusFromAnswering({ project: '/p', source: 'project', list: 'filesystem.allowWrite', entry: 'out' }),
    { project: '/p', list: 'filesystem.allowWrite', entry: 'out', which: 'project' });
  assert.equal(focusFromAnswering({ project: '/p', source: 'default', list: 'filesystem.allowRead', entry: '/usr' }).which, 'effective');
  const preview = { target: 'global', array: 'filesystem.allowWrite' };
  assert.deepEqual(grantChange(preview, { entry: '~/x' }, '/p'), {
    file: { file: 'global' },
    change: { op: 'add', list: 'filesystem.allowWrite', entry: '~/x' },
  });
  assert.deepEqual(grantChange({ ...preview, target: 'project' }, { entry: 'out' }, '/p').file, { file: 'project', dir: '/p' });
  assert.equal(queryList('?view=policy&list=filesystem.allowWrite'), 'filesystem.allowWrite');
  assert.equal(queryList('?list=nonsense'), null);
});
