import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  deviceRowModel, exposure, exposureWarning, pairingModel, parseBind, qrRects, QUIET_ZONE,
} from './phone-model.js';
import { TEXT } from './text.js';

test('a typed listening address is a socket address as the core parses it', () => {
  assert.deepEqual(parseBind(''), { bind: null });
  assert.deepEqual(parseBind('  '), { bind: null });
  for (const good of ['127.0.0.1:8443', '0.0.0.0:0', '192.168.1.20:65535', '[::]:8443', '[::1]:9', '[fe80::1]:8443']) {
    assert.deepEqual(parseBind(` ${good} `), { bind: good }, good);
  }
  for (const bad of ['0.0.0.0', 'localhost:8443', '256.0.0.1:80', '1.2.3:80', '1.2.3.4:65536', '[::]', '::1:80', '[1234]:80', '1.2.3.4:', 'x']) {
    assert.deepEqual(parseBind(bad), { error: TEXT.phone.badBind(bad) }, bad);
  }
});

test('an address other than loopback is said to expose the page', () => {
  assert.equal(exposure(null), 'loopback');
  assert.equal(exposure('127.0.0.1:8443'), 'loopback');
  assert.equal(exposure('127.1.2.3:1'), 'loopback');
  assert.equal(exposure('[::1]:8443'), 'loopback');
  assert.equal(exposure('0.0.0.0:8443'), 'all');
  assert.equal(exposure('[::]:8443'), 'all');
  assert.equal(exposure('192.168.1.20:8443'), 'some');
  assert.equal(exposureWarning('127.0.0.1:1'), '');
  assert.match(exposureWarning('0.0.0.0:8443'), /local network/);
  assert.equal(exposureWarning('10.0.0.2:1'), TEXT.phone.exposedOne);
  // The hint under the field says it before anything is typed.
  assert.match(TEXT.phone.bindHint, /0\.0\.0\.0:PORT exposes the page to every device on your local network/);
});

test('the QR rows become one rectangle per dark run, inside the quiet zone', () => {
  const rows = ['110', '010', '111'];
  const qr = qrRects(rows);
  assert.equal(qr.size, 3 + 2 * QUIET_ZONE);
  const q = QUIET_ZONE;
  assert.deepEqual(qr.rects, [
    { x: q, y: q, width: 2 },
    { x: q + 1, y: q + 1, width: 1 },
    { x: q, y: q + 2, width: 3 },
  ]);
  // Every dark module is covered exactly once, and no light one.
  const big = Array.from({ length: 21 }, (_, y) => Array.from({ length: 21 }, (_, x) => ((x * 7 + y * 3) % 5 < 2 ? '1' : '0')).join(''));
  const drawn = new Set();
  for (const r of qrRects(big).rects) {
    for (let x = r.x; x < r.x + r.width; x += 1) {
      const key = `${x - q},${r.y - q}`;
      assert.ok(!drawn.has(key), `${key} twice`);
      drawn.add(key);
    }
  }
  const dark = new Set();
  big.forEach((row, y) => [...row].forEach((c, x) => c === '1' && dark.add(`${x},${y}`)));
  assert.deepEqual(drawn, dark);
  assert.deepEqual(qrRects(['000', '000', '000']).rects, []);
  for (const bad of [[], ['10', '1'], ['12', '01'], ['10', '01', '11'], null, [1, 0]]) {
    assert.ok(qrRects(bad).error, JSON.stringify(bad));
  }
});

test('a pairing shows its URL, its expiry as a clock time and the fingerprint', () => {
  const expires = new Date(2026, 0, 2, 14, 35, 10).getTime();
  const m = pairingModel({
    pairing_url: 'https://127.0.0.1:8443/pair?token=abc',
    expires_ms: expires,
    fingerprint: 'AB:CD',
    qr: ['1'],
  });
  assert.equal(m.url, 'https://127.0.0.1:8443/pair?token=abc');
  assert.equal(m.expires, 'Valid until 14:35, for one device.');
  assert.equal(m.fingerprint, 'AB:CD');
  assert.equal(m.qr.rects.length, 1);
});

test('a paired device says when it paired and was last used', () => {
  const now = new Date(2026, 0, 2, 15, 0, 0).getTime();
  const used = deviceRowModel({ id: 4, name: 'Firefox on Android', paired_ms: new Date(2026, 0, 1, 9, 0, 0).getTime(), last_used_ms: new Date(2026, 0, 2, 14, 0, 5).getTime() }, now);
  assert.equal(used.line, 'paired 2026-01-01 09:00 · last used 14:00:05');
  assert.equal(used.revokeLabel, 'Revoke Firefox on Android: it is refused at once');
  const never = deviceRowModel({ id: 5, name: 'x', paired_ms: now, last_used_ms: null }, now);
  assert.equal(never.line, 'paired 15:00:00 · never used');
});
