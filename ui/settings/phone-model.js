// The pure logic of the phone page's section in Settings → General: the typed listening
// address checked as the core parses it (a socket address), who it exposes the page to,
// the pairing QR code's rows as the rectangles of an SVG, and a paired device's line.
// Tested with `node --test` (phone-model.test.mjs).

import { TEXT } from './text.js';
import { formatTime, shortTime } from './model.js';

/** The light border around a QR code, in modules (the standard asks for 4). */
export const QUIET_ZONE = 4;

const octet = (s) => /^\d{1,3}$/.test(s) && Number(s) <= 255;

/**
 * A typed listening address: `{ bind: null }` when empty (the core's default, loopback),
 * `{ bind }` for `IPv4:PORT` or `[IPv6]:PORT`, else `{ error }`. Port 0 is let through:
 * the core then chooses one and keeps it.
 */
export function parseBind(typed) {
  const text = typed.trim();
  if (!text) return { bind: null };
  const bad = { error: TEXT.phone.badBind(text) };
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:(\d{1,5})$/.exec(text);
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(text);
  const match = v6 ?? v4;
  if (!match || Number(match[2]) > 65535) return bad;
  if (v4 && !match[1].split('.').every(octet)) return bad;
  if (v6 && !match[1].includes(':')) return bad;
  return { bind: text };
}

/**
 * Who reaches a listening address: `loopback` (this computer; also when empty), `all`
 * (0.0.0.0 or [::]: the whole local network) or `some` (one of this computer's addresses).
 */
export function exposure(bind) {
  if (!bind) return 'loopback';
  const host = bind.slice(0, bind.lastIndexOf(':'));
  if (host.startsWith('127.') || host === '[::1]') return 'loopback';
  if (host === '0.0.0.0' || host === '[::]') return 'all';
  return 'some';
}

/** The warning for an address that is not loopback, or '' for one that is. */
export function exposureWarning(bind) {
  const who = exposure(bind);
  if (who === 'all') return TEXT.phone.exposedAll;
  if (who === 'some') return TEXT.phone.exposedOne;
  return '';
}

/**
 * The QR code's rows (`"1"` a dark module, `"0"` a light one, as the core sends them)
 * as an SVG's parts: `{ size, rects }`, `size` the side in modules with the quiet zone
 * around, `rects` the dark runs of each row as `{ x, y, width }` (one rectangle per run,
 * not per module: fewer nodes, no hairlines between neighbours). `{ error }` when the rows
 * are not a square of 0s and 1s.
 */
export function qrRects(rows) {
  const n = Array.isArray(rows) ? rows.length : 0;
  if (n === 0 || !rows.every((row) => typeof row === 'string' && row.length === n && /^[01]+$/.test(row))) {
    return { error: 'not a QR code' };
  }
  const rects = [];
  rows.forEach((row, y) => {
    let start = -1;
    for (let x = 0; x <= n; x += 1) {
      const dark = x < n && row[x] === '1';
      if (dark && start < 0) start = x;
      if (!dark && start >= 0) {
        rects.push({ x: start + QUIET_ZONE, y: y + QUIET_ZONE, width: x - start });
        start = -1;
      }
    }
  });
  return { size: n + 2 * QUIET_ZONE, rects };
}

/** A pairing (WebPairing from the core) as the page shows it. */
export function pairingModel(pairing) {
  return {
    url: pairing.pairing_url,
    fingerprint: pairing.fingerprint,
    expires: TEXT.phone.expires(formatTime(pairing.expires_ms).slice(11, 16)),
    qr: qrRects(pairing.qr),
  };
}

/** A paired device (DeviceInfo from the core) as the list shows it. */
export function deviceRowModel(device, now = Date.now()) {
  const t = TEXT.phone;
  const used = device.last_used_ms ? t.lastUsed(shortTime(device.last_used_ms, now)) : t.neverUsed;
  return {
    id: device.id,
    name: device.name,
    line: `${t.pairedOn(shortTime(device.paired_ms, now))} · ${used}`,
    revokeLabel: t.revokeLabel(device.name),
  };
}
