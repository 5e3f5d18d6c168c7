import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  appSettingMessage, homeRelative, parseQuery, parseTimeout, pickedEntry, timeoutText, TIMEOUT_MAX, TIMEOUT_MIN, VIEWS,
} from './model.js';

test('paths under home are written ~/…, others as they are', () => {
  assert.equal(homeRelative('/home/dev/code/x', '/home/dev'), '~/code/x');
  assert.equal(homeRelative('/home/dev', '/home/dev'), '~');
  assert.equal(homeRelative('/home/dev/', '/home/dev/'), '~/');
  assert.equal(homeRelative('/home/dev/code', '/home/dev/'), '~/code');
  // A sibling whose name starts like home is not under it.
  assert.equal(homeRelative('/home/devel/x', '/home/dev'), '/home/devel/x');
  assert.equal(homeRelative('/srv/x', '/home/dev'), '/srv/x');
  assert.equal(homeRelative('/srv/x', null), '/srv/x');
  assert.equal(homeRelative('/srv/x', '/'), '/srv/x');
});

test('the prompt timeout is off, or whole seconds in the core\'s range', () => {
  assert.deepEqual(parseTimeout(''), { value: null });
  assert.deepEqual(parseTimeout('  off '), { value: null });
  assert.deepEqual(parseTimeout('Off'), { value: null });
  assert.deepEqual(parseTimeout(' 30 '), { value: 30 });
  assert.deepEqual(parseTimeout(String(TIMEOUT_MIN)), { value: TIMEOUT_MIN });
  assert.deepEqual(parseTimeout(String(TIMEOUT_MAX)), { value: TIMEOUT_MAX });
  for (const bad of ['4', '3601', '0', '-5', '1.5', '10s', 'soon']) {
    const parsed = parseTimeout(bad);
    assert.ok(parsed.error, bad);
    assert.equal(parsed.value, undefined, bad);
  }
  assert.match(parseTimeout('3601').error, /5 to 3600 seconds/);
  assert.match(parseTimeout('soon').error, /not a number of seconds/);
  assert.equal(timeoutText(null), '');
  assert.equal(timeoutText(45), '45');
});

test('the General view is the last view and can be asked for', () => {
  assert.equal(VIEWS[VIEWS.length - 1], 'general');
  assert.equal(parseQuery('?view=general').view, 'general');
});

test('a saved app setting says what it wrote where', () => {
  const text = appSettingMessage({ description: 'notification sound: off', file: '/c/settings.json', settings: {} });
  assert.match(text, /notification sound: off/);
  assert.match(text, /\/c\/settings\.json/);
});

test('a picked folder becomes an entry as the file it goes to reads it', () => {
  const where = { project: '/home/dev/code/app', home: '/home/dev' };
  const project = (p) => pickedEntry(p, { which: 'project', ...where });
  const global = (p) => pickedEntry(p, { which: 'global', ...where });
  assert.equal(project('/home/dev/code/app/build/out'), 'build/out');
  assert.equal(project('/home/dev/code/app'), '.');
  assert.equal(project('/home/dev/code/app-other'), '~/code/app-other');
  assert.equal(project('/home/dev/.cache'), '~/.cache');
  assert.equal(project('/srv/data'), '/srv/data');
  // The global file applies to every project: never relative to this one.
  assert.equal(global('/home/dev/code/app/build'), '~/code/app/build');
  assert.equal(global('/srv/data'), '/srv/data');
  assert.equal(pickedEntry('/p/x', { which: 'project', project: '/p/', home: null }), 'x');
});

test('switching start at login off says the entry was removed', () => {
  const text = appSettingMessage({
    description: 'start at login: off', file: '/c/autostart/landstrip-tray.desktop', removed: true, settings: {},
  });
  assert.match(text, /removed \/c\/autostart\/landstrip-tray\.desktop/);
  assert.doesNotMatch(text, /written/);
});
