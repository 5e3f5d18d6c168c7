import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  defaultSource, learnChanges, learnDiff, learnRequest, proposalKey, sessionLabel, sourceOffered, LEARN_RANGES,
} from './learn-model.js';
import { VIEWS } from './model.js';

const review = {
  file: '/h/p/.opencode/sandbox.json',
  shown: '~/p/.opencode/sandbox.json',
  target: 'project',
  considered: 5,
  current: [
    { list: 'allowRead', entries: [] },
    { list: 'allowWrite', entries: ['out', '~/.cache/x'] },
  ],
  proposals: [
    { list: 'allowRead', entry: '~/notes', root: '/h/notes', covers: 1, examples: ['/h/notes/a.md'] },
    { list: 'allowWrite', entry: '/var/tmp/build', root: '/var/tmp/build', covers: 12, examples: ['/var/tmp/build/a', '/var/tmp/build/b'] },
    { list: 'allowWrite', entry: '~/.cargo', root: '/h/.cargo', covers: 2, examples: [] },
  ],
  leftOut: [{ path: '/h/.ssh/config', reason: 'sensitive: SSH keys and configuration' }],
};

test('the Learn view comes after Activity', () => {
  assert.equal(VIEWS[VIEWS.indexOf('activity') + 1], 'learn');
});

test('a session or a time range becomes the core request', () => {
  const now = Date.UTC(2026, 11, 1, 12, 30);
  assert.deepEqual(learnRequest('session:ses_1', 'project', now), { target: 'project', session: 'ses_1' });
  assert.deepEqual(learnRequest('hour', 'global', now), { target: 'global', since_ms: now - 3600 * 1000 });
  assert.deepEqual(learnRequest('week', 'project', now), { target: 'project', since_ms: now - 7 * 86400 * 1000 });
  const today = learnRequest('today', 'project', now).since_ms;
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  assert.equal(today, midnight.getTime());
  assert.ok(today <= now && now - today < 86400 * 1000);
});

test('the newest session is chosen first, else the last 7 days', () => {
  assert.equal(defaultSource([{ id: 'b' }, { id: 'a' }]), 'session:b');
  assert.equal(defaultSource([]), 'week');
  assert.ok(sourceOffered('session:a', [{ id: 'a' }]));
  assert.ok(!sourceOffered('session:gone', [{ id: 'a' }]));
  for (const range of LEARN_RANGES) assert.ok(sourceOffered(range, []));
  assert.ok(!sourceOffered(null, []));
});

test('the diff shows the file as context and each proposal as a checked + line', () => {
  const groups = learnDiff(review, new Set());
  assert.deepEqual(groups.map((g) => g.list), ['filesystem.allowWrite', 'filesystem.allowRead']);
  const write = groups[0].lines;
  assert.deepEqual(write.map((l) => [l.kind, l.entry]), [
    ['context', 'out'], ['context', '~/.cache/x'], ['add', '/var/tmp/build'], ['add', '~/.cargo'],
  ]);
  assert.equal(write[2].covers, 'covers 12 requests, e.g. /var/tmp/build/a, /var/tmp/build/b');
  assert.equal(write[3].covers, 'covers 2 requests');
  assert.ok(write.filter((l) => l.kind === 'add').every((l) => l.checked));
  assert.equal(groups[1].lines[0].covers, 'covers 1 request, e.g. /h/notes/a.md');
});

test('an unchecked proposal stays in the diff but is not saved', () => {
  const unchecked = new Set([proposalKey(review.proposals[1])]);
  const line = learnDiff(review, unchecked)[0].lines.find((l) => l.entry === '/var/tmp/build');
  assert.equal(line.checked, false);
  assert.deepEqual(learnChanges(review, unchecked), [
    { op: 'add', list: 'filesystem.allowRead', entry: '~/notes' },
    { op: 'add', list: 'filesystem.allowWrite', entry: '~/.cargo' },
  ]);
});

test('nothing proposed: no groups and no changes', () => {
  const none = { ...review, proposals: [] };
  assert.deepEqual(learnDiff(none, new Set()), []);
  assert.deepEqual(learnChanges(none, new Set()), []);
});

test('a session is named by its id, its times (the date once) and its answers', () => {
  const at = (h, m) => Date.UTC(2026, 11, 1, h, m, 5);
  assert.equal(
    sessionLabel({ id: 'ses_1', firstMs: at(9, 0), lastMs: at(9, 30), answered: 4 }, 'UTC'),
    'ses_1 · 2026-12-01 09:00:05–09:30:05 · 4 answered',
  );
  assert.equal(
    sessionLabel({ id: 'ses_2', firstMs: at(23, 0), lastMs: at(23, 0) + 3600 * 1000, answered: 1 }, 'UTC'),
    'ses_2 · 2026-12-01 23:00:05–2026-12-02 00:00:05 · 1 answered',
  );
});
