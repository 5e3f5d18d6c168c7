import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  activityFilter, changedMessage, effectiveModel, fileModel, fileTarget, formatTime,
  getPath, parseQuery, pickProject, projectState, relativeTime, typedEntry, LISTS, BOOLS,
  checkModel, isUndoKey, undoneMessage,
} from './model.js';

test('a valid file shows every list and boolean, unset ones as such', () => {
  const model = fileModel({
    path: '/h/p/.opencode/sandbox.json',
    shown: '~/p/.opencode/sandbox.json',
    state: {
      state: 'valid',
      text: '{}',
      overrides: { network: { allowNetwork: true }, filesystem: { allowWrite: ['out', '~/x'] } },
    },
  });
  assert.equal(model.editable, true);
  assert.equal(model.lists.length, LISTS.length);
  assert.deepEqual(model.lists.find((l) => l.list === 'filesystem.allowWrite').entries, ['out', '~/x']);
  assert.deepEqual(model.lists.find((l) => l.list === 'filesystem.denyRead').entries, []);
  assert.equal(model.bools.length, BOOLS.length);
  assert.equal(model.bools.find((b) => b.field === 'network.allowNetwork').value, true);
  assert.equal(model.bools.find((b) => b.field === 'enabled').value, null);
});

test('a file\'s plugin conflicts carry the field, whether it is rejected and the version known', () => {
  const model = fileModel({
    path: '/p/.opencode/sandbox.json',
    shown: '/p/.opencode/sandbox.json',
    state: { state: 'valid', text: '{}', overrides: {} },
    pluginConflicts: [
      { field: 'filesystem.denyReadAlways', plugin: { state: 'known', version: '0.19.1' }, rejected: true },
      { field: 'shell', plugin: { state: 'unknown' }, rejected: false },
    ],
  });
  assert.deepEqual(model.conflicts, [
    { field: 'filesystem.denyReadAlways', rejected: true, version: '0.19.1' },
    { field: 'shell', rejected: false, version: null },
  ]);
  assert.deepEqual(fileModel({ path: '/g', shown: '~/g', state: { state: 'missing' } }).conflicts, []);
});

test('the later plugin\'s fields: the Always lists are lists, shell and windows read-only values', () => {
  const model = fileModel({
    path: '/p/.opencode/sandbox.json',
    shown: '/p/.opencode/sandbox.json',
    state: {
      state: 'valid',
      text: '{}',
      overrides: {
        shell: { readAccess: 'policy' },
        windows: { allowLoopback: false },
        filesystem: { denyWriteAlways: ['.git'], denyReadAlways: ['~/.ssh'] },
      },
    },
  });
  assert.deepEqual(model.lists.find((l) => l.list === 'filesystem.denyWriteAlways').entries, ['.git']);
  assert.deepEqual(model.lists.find((l) => l.list === 'filesystem.denyReadAlways').entries, ['~/.ssh']);
  assert.deepEqual(model.platform, [
    { field: 'shell.readAccess', value: 'policy' },
    { field: 'windows.allowLoopback', value: 'false' },
  ]);
  assert.deepEqual(fileModel({ path: '/g', shown: '~/g', state: { state: 'missing' } }).platform, []);
  const effective = effectiveModel({
    fields: [],
    lists: [],
    platform: [
      { field: 'shell.readAccess', value: 'policy', source: 'project' },
      { field: 'windows.allowLoopback', value: null, source: null },
    ],
  });
  assert.equal(effective.platform[0].sourceText, 'project');
  assert.equal(effective.platform[1].value, null);
  assert.equal(effective.platform[1].source, null);
});

test('a missing file is editable and empty', () => {
  const model = fileModel({ path: '/g', shown: '~/g', state: { state: 'missing' } });
  assert.equal(model.editable, true);
  assert.ok(model.lists.every((l) => l.entries.length === 0));
});

test('an invalid file is read-only with its error and where it is', () => {
  const model = fileModel({
    path: '/g', shown: '~/g',
    state: { state: 'invalid', text: '{,', error: 'expected value', line: 1, column: 2, field: null },
  });
  assert.equal(model.editable, false);
  assert.equal(model.where, 'line 1, column 2');
  assert.equal(model.text, '{,');
  assert.equal(model.lists, undefined, 'no edit controls');
  const schema = fileModel({
    path: '/g', shown: '~/g',
    state: { state: 'invalid', text: null, error: 'bad type', line: null, column: null, field: 'network.allowNetwork' },
  });
  assert.equal(schema.where, 'field network.allowNetwork');
});

test('effective entries carry their layer in words', () => {
  const model = effectiveModel({
    fields: [{ field: 'enabled', value: true, source: 'default' }],
    lists: [{
      list: 'filesystem.allowWrite',
      entries: [
        { entry: '.', resolved: '~/p', meaning: 'the project', broad: null, source: 'default', redundantWith: null },
        { entry: '~', resolved: '~', meaning: 'your home', broad: 'everything', source: 'global', redundantWith: null },
        { entry: 'out', resolved: '~/p/out', meaning: 'out', broad: null, source: 'project', redundantWith: '.' },
      ],
    }],
  });
  const entries = model.lists[0].entries;
  assert.deepEqual(entries.map((e) => e.sourceText), ['default', 'global', 'project']);
  assert.equal(entries[1].broad, 'everything');
  assert.equal(entries[2].redundantWith, '.');
  assert.match(entries[2].sourceMeaning, /project/);
  assert.equal(model.fields[0].sourceText, 'default');
  assert.equal(effectiveModel(null), null);
  const ordered = effectiveModel({
    fields: [],
    lists: [{ list: 'filesystem.denyRead', entries: [] }, { list: 'filesystem.allowWrite', entries: [] }],
  });
  assert.deepEqual(ordered.lists.map((l) => l.list), ['filesystem.allowWrite', 'filesystem.denyRead'], 'file-column order');
});

test('project states in words', () => {
  assert.match(projectState({ port: 4100, status: { state: 'serving' } }).text, /port 4100/);
  const conflict = projectState({ port: 1, status: { state: 'conflict', other_pid: 77, other_port: 5 } });
  assert.match(conflict.text, /pid 77/);
  assert.equal(conflict.canTakeOver, true);
  assert.equal(projectState({ port: 1, status: { state: 'unpublished', error: 'disk full' } }).kind, 'error');
  const contested = projectState({ port: 1, status: { state: 'contested', other_pid: 78, other_port: 6, rounds: 3 } });
  assert.equal(contested.kind, 'conflict');
  assert.ok(contested.canTakeOver);
  assert.match(contested.text, /pid 78.*3 times/);
});

test('change targets name exactly one file', () => {
  assert.deepEqual(fileTarget('global', '/p'), { file: 'global' });
  assert.deepEqual(fileTarget('project', '/p'), { file: 'project', dir: '/p' });
});

test('what a change did, in words', () => {
  const text = changedMessage({ file: '/p/.opencode/sandbox.json', written: true, description: 'add out', alsoAnswered: [3] });
  assert.match(text, /written to \/p\/\.opencode\/sandbox\.json/);
  assert.match(text, /One waiting request/);
  assert.match(changedMessage({ file: '/f', written: false, description: 'd', alsoAnswered: [] }), /nothing written/);
});

test('typed entries are trimmed; blank is nothing', () => {
  assert.equal(typedEntry('  out/ '), 'out/');
  assert.equal(typedEntry('   '), null);
});

test('the query string picks the first view', () => {
  assert.deepEqual(parseQuery('?view=policy&project=%2Fh%2Fa%20b'), { view: 'policy', project: '/h/a b' });
  assert.deepEqual(parseQuery(''), { view: 'projects', project: null });
  assert.equal(parseQuery('?view=settings').view, 'projects');
  assert.equal(parseQuery('?view=nonsense').view, 'projects');
});

test('activity filter from the controls', () => {
  assert.deepEqual(activityFilter({ project: '', decision: 'any', text: ' ' }), { limit: 500 });
  assert.deepEqual(activityFilter({ project: '/p', decision: 'deny', text: ' ssh ' }),
    { project: '/p', decision: 'deny', grep: 'ssh', limit: 500 });
});

test('helpers', () => {
  assert.equal(getPath({ a: { b: 1 } }, 'a.b'), 1);
  assert.equal(getPath({ a: null }, 'a.b'), undefined);
  assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5), 'UTC'), '2026-01-02 03:04:05');
  assert.equal(pickProject([{ dir: '/a' }], null, null), '/a');
  assert.equal(pickProject([{ dir: '/a' }], '/b', '/a'), '/b');
  assert.equal(pickProject([{ dir: '/a' }], null, '/c'), '/c');
  assert.equal(pickProject([], null, null), null);
});

test('effective filesystem entries show their hits, and long-unused ones are marked', () => {
  const now = Date.UTC(2026, 11, 1, 12, 0, 0);
  const hour = 3600 * 1000;
  const day = 24 * hour;
  const entry = (name, hits, lastHitMs) => ({ entry: name, meaning: name, source: 'project', redundantWith: null, hits, lastHitMs });
  const model = effectiveModel({
    fields: [],
    lists: [
      {
        list: 'filesystem.allowWrite',
        entries: [
          entry('.', 3, now - 2 * hour),
          entry('out', 1, now - 31 * day),
          entry('/never', 0, undefined),
          entry('tmp', 1, now - 29 * day),
        ],
      },
      // Nothing in this list was hit: never used, but not marked.
      { list: 'filesystem.denyWrite', entries: [entry('**/.env', 0, undefined)] },
      { list: 'network.allowedDomains', entries: [{ entry: 'a.example', source: 'global', redundantWith: null }] },
    ],
  }, now);
  const [write, deny, net] = model.lists;
  assert.deepEqual(write.entries.map((e) => [e.usage.text, e.usage.unused]), [
    ['3 hits · last 2 hours ago', false],
    ['1 hit · last 31 days ago', true],
    ['never used', true],
    ['1 hit · last 29 days ago', false],
  ]);
  assert.deepEqual([deny.entries[0].usage.text, deny.entries[0].usage.unused], ['never used', false]);
  assert.equal(net.entries[0].usage, null, 'network entries are not counted');
});

test('relative times', () => {
  const now = 10_000_000_000;
  assert.equal(relativeTime(now - 5_000, now), 'just now');
  assert.equal(relativeTime(now + 5_000, now), 'just now', 'a clock a little ahead');
  assert.equal(relativeTime(now - 60_000, now), '1 minute ago');
  assert.equal(relativeTime(now - 59 * 60_000, now), '59 minutes ago');
  assert.equal(relativeTime(now - 3600_000, now), '1 hour ago');
  assert.equal(relativeTime(now - 3 * 86400_000, now), '3 days ago');
});

test('an entry being typed: its meaning and flags, or why it cannot be saved', () => {
  const broad = checkModel({
    entry: '~', resolved: '~', meaning: 'your home folder and everything in it may be written',
    broad: 'your whole home folder', redundantWith: null, duplicate: false, invalid: null,
  });
  assert.equal(broad.invalid, false);
  assert.equal(broad.broad, true);
  assert.deepEqual(broad.lines.map((l) => l.kind), ['meaning', 'broad']);
  assert.match(broad.lines[1].text, /your whole home folder/);
  const relative = checkModel({
    entry: 'build', resolved: '~/p/build', meaning: 'the project\'s build and everything in it may be written',
    broad: null, redundantWith: '.', duplicate: true, invalid: null,
  });
  assert.deepEqual(relative.lines.map((l) => l.kind), ['meaning', 'redundant', 'duplicate']);
  assert.match(relative.lines[0].text, /resolved to ~\/p\/build/);
  const invalid = checkModel({ entry: '', resolved: '', meaning: '', invalid: '"" is not a usable entry' });
  assert.equal(invalid.invalid, true);
  assert.deepEqual(invalid.lines.map((l) => l.kind), ['invalid']);
  assert.deepEqual(checkModel(null), { lines: [], invalid: false, broad: false });
});

test('Ctrl+Z undoes the last save only outside text fields', () => {
  const key = (extra) => ({ key: 'z', ctrlKey: true, shiftKey: false, altKey: false, metaKey: false, ...extra });
  assert.equal(isUndoKey(key(), { tagName: 'LI' }), true);
  assert.equal(isUndoKey(key(), { tagName: 'INPUT', type: 'checkbox' }), true);
  assert.equal(isUndoKey(key(), { tagName: 'INPUT', type: 'text' }), false);
  assert.equal(isUndoKey(key({ shiftKey: true }), { tagName: 'LI' }), false);
  assert.equal(isUndoKey(key({ ctrlKey: false }), { tagName: 'LI' }), false);
  assert.equal(isUndoKey(key({ key: 'y' }), { tagName: 'LI' }), false);
});

test('an undo says which file it restored', () => {
  assert.match(undoneMessage({ description: 'add "x" to filesystem.allowWrite', file: '/p/.opencode/sandbox.json', removed: false, alsoAnswered: [] }),
    /restored the previous \/p\/.opencode\/sandbox.json/);
  assert.match(undoneMessage({ description: 'd', file: '/f', removed: true }), /removed \/f again/);
});
