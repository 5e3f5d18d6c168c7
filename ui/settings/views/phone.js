// The phone page's section of Settings → General: the switch and the address it listens
// on, its URL and certificate fingerprint, "Pair a phone" with the pairing QR code (an SVG
// built node by node: the CSP allows no inline style or markup), and the paired devices
// with Revoke. Everything goes through the settings_web_* commands (the core's operations,
// as `ctl web` does).

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { deviceRowModel, exposureWarning, pairingModel, parseBind } from '../phone-model.js';
import { say, state } from '../app.js';

const SVG = 'http://www.w3.org/2000/svg';
/** Pixels per QR module: the code is about 200 px wide, easy for a phone's camera. */
const MODULE_PX = 5;

/** The section, drawn with the phone page's state and devices (loaded by the caller). */
export function phoneSection(status, devices) {
  const t = TEXT.phone;
  const bind = h('input', {
    id: 'web-bind',
    type: 'text',
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: t.bindPlaceholder,
    value: status.bind ?? '',
    'aria-describedby': 'web-bind-hint web-bind-warning web-error',
    oninput: () => {
      bind.removeAttribute('aria-invalid');
      showWarning(bind.value);
    },
    onchange: () => {
      showWarning(bind.value);
      // A new address for a page that is on: it moves there at once.
      if (document.getElementById('web-on')?.checked) turn(true).catch(showFailure);
    },
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        if (document.getElementById('web-on')?.checked) turn(true).catch(showFailure);
      }
    },
  });
  return h('section', { id: 'phone', className: 'phone', 'aria-labelledby': 'phone-heading' },
    h('h2', { id: 'phone-heading' }, t.heading),
    h('p', { className: 'hint phone-note' }, t.note),
    h('div', { className: 'setting bool', 'data-setting': 'web' },
      h('input', {
        type: 'checkbox',
        id: 'web-on',
        checked: status.on,
        'aria-describedby': 'web-error',
        onchange: (event) => turn(event.target.checked).catch(showFailure),
      }),
      h('label', { for: 'web-on' }, t.on)),
    h('div', { className: 'setting' },
      h('label', { for: 'web-bind' }, t.bindLabel),
      bind,
      h('p', { className: 'hint', id: 'web-bind-hint' }, t.bindHint),
      h('p', { className: 'phone-warning', id: 'web-bind-warning', role: 'note' }, exposureWarning(status.bind))),
    h('p', { className: 'field-error', id: 'web-error', role: 'alert' }),
    h('div', { id: 'web-status' }, statusFacts(status)),
    h('div', { className: 'actions phone-actions' },
      h('button', {
        type: 'button',
        id: 'web-pair',
        disabled: !status.on,
        'aria-describedby': status.on ? null : 'web-pair-off',
        onclick: () => pair().catch(showFailure),
      }, t.pair),
      status.on ? null : h('span', { className: 'hint', id: 'web-pair-off' }, t.pairOff)),
    h('div', { id: 'web-pairing' }),
    h('h3', {}, t.devicesHeading),
    h('div', { id: 'web-devices' }, deviceList(devices)));
}

/** The section when the phone page's state could not be read: the reason. */
export function phoneUnavailable(error) {
  return h('section', { id: 'phone', className: 'phone', 'aria-labelledby': 'phone-heading' },
    h('h2', { id: 'phone-heading' }, TEXT.phone.heading),
    h('p', { className: 'field-error', id: 'web-error', role: 'alert' }, TEXT.error(error)));
}

function statusFacts(status) {
  const t = TEXT.phone;
  if (!status.on) return h('p', { className: 'hint', 'data-web': 'off' }, t.off);
  return h('dl', { className: 'phone-facts', 'data-web': 'on' },
    h('dt', {}, t.url),
    h('dd', { className: 'mono', id: 'web-url' }, status.url ?? ''),
    h('dt', {}, t.fingerprint),
    h('dd', { className: 'mono fingerprint', id: 'web-fingerprint' }, status.fingerprint ?? ''));
}

function deviceList(devices) {
  if (!devices.length) return h('p', { className: 'empty' }, TEXT.phone.noDevices);
  return h('ul', { className: 'devices' }, devices.map((device) => {
    const m = deviceRowModel(device);
    return h('li', { 'data-device': String(m.id) },
      h('div', { className: 'project-text' },
        h('span', {}, m.name),
        h('span', { className: 'hint' }, m.line)),
      h('button', {
        type: 'button', className: 'destructive', 'aria-label': m.revokeLabel,
        onclick: () => revoke(m).catch(showFailure),
      }, TEXT.phone.revoke));
  }));
}

/** The QR code as an SVG: a white square (the quiet zone included) and the dark runs. */
export function qrSvg(qr) {
  const px = qr.size * MODULE_PX;
  const svg = document.createElementNS(SVG, 'svg');
  for (const [key, value] of [
    ['viewBox', `0 0 ${qr.size} ${qr.size}`], ['width', px], ['height', px],
    ['role', 'img'], ['aria-label', TEXT.phone.qrLabel], ['shape-rendering', 'crispEdges'],
    ['class', 'qr'], ['id', 'web-qr'],
  ]) svg.setAttribute(key, String(value));
  const rect = (x, y, width, height, cls) => {
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('x', String(x));
    r.setAttribute('y', String(y));
    r.setAttribute('width', String(width));
    r.setAttribute('height', String(height));
    if (cls) r.setAttribute('class', cls);
    return r;
  };
  svg.append(rect(0, 0, qr.size, qr.size, 'qr-light'));
  const dark = document.createElementNS(SVG, 'g');
  dark.setAttribute('class', 'qr-dark');
  for (const run of qr.rects) dark.append(rect(run.x, run.y, run.width, 1));
  svg.append(dark);
  return svg;
}

let working = Promise.resolve();

/** Runs one change at a time, in order (a switch flicked twice is two changes). */
function serially(work) {
  working = working.then(work, work);
  return working;
}

function turn(on) {
  return serially(async () => {
    const error = document.getElementById('web-error');
    if (error) error.textContent = '';
    let status;
    if (on) {
      const input = document.getElementById('web-bind');
      const parsed = parseBind(input?.value ?? '');
      if (parsed.error) {
        input.setAttribute('aria-invalid', 'true');
        const box = document.getElementById('web-on');
        if (box) box.checked = false;
        throw new Error(parsed.error);
      }
      status = await invoke('settings_web_on', { bind: parsed.bind });
      say(TEXT.phone.turnedOn(status.url));
    } else {
      status = await invoke('settings_web_off');
      say(TEXT.phone.turnedOff);
    }
    refresh(status);
  });
}

/** Shows the page's state without redrawing the section: focus and typing stay. */
function refresh(status) {
  if (state.view !== 'general') return;
  const box = document.getElementById('web-on');
  if (box) box.checked = status.on;
  const bind = document.getElementById('web-bind');
  if (bind && status.bind && document.activeElement !== bind) bind.value = status.bind;
  showWarning(status.bind ?? '');
  document.getElementById('web-status')?.replaceChildren(statusFacts(status));
  const pairButton = document.getElementById('web-pair');
  if (pairButton) {
    pairButton.disabled = !status.on;
    if (status.on) pairButton.removeAttribute('aria-describedby');
  }
  document.getElementById('web-pair-off')?.toggleAttribute('hidden', status.on);
  // Off, a pairing shown would point at nothing.
  if (!status.on) document.getElementById('web-pairing')?.replaceChildren();
}

function showWarning(typed) {
  const line = document.getElementById('web-bind-warning');
  const parsed = parseBind(typed);
  if (line) line.textContent = parsed.error ? '' : exposureWarning(parsed.bind);
}

async function pair() {
  const t = TEXT.phone;
  const m = pairingModel(await invoke('settings_web_pair'));
  const box = document.getElementById('web-pairing');
  if (!box || m.qr.error) throw new Error(m.qr.error ?? 'the view changed');
  const done = h('button', {
    type: 'button', id: 'web-pair-done',
    onclick: () => {
      box.replaceChildren();
      document.getElementById('web-pair')?.focus();
    },
  }, t.pairDone);
  box.replaceChildren(h('div', { className: 'pairing', role: 'group', 'aria-labelledby': 'web-pairing-heading' },
    h('div', { className: 'qr-box' }, qrSvg(m.qr)),
    h('div', { className: 'pairing-text' },
      h('h3', { id: 'web-pairing-heading' }, t.pairHeading),
      h('p', { className: 'caption' }, t.pairingUrl),
      h('p', { className: 'mono pairing-url', id: 'web-pairing-url' }, m.url),
      h('p', { className: 'hint', id: 'web-pairing-expires' }, m.expires),
      h('p', { className: 'caption' }, t.fingerprint),
      h('p', { className: 'mono fingerprint', id: 'web-pairing-fingerprint' }, m.fingerprint),
      h('p', { className: 'hint' }, t.compare),
      h('div', { className: 'actions' }, done))));
  say(t.paired);
  done.focus();
}

async function revoke(m) {
  await invoke('settings_web_revoke', { device: String(m.id) });
  say(TEXT.phone.revoked(m.name));
  const devices = await invoke('settings_web_devices');
  document.getElementById('web-devices')?.replaceChildren(deviceList(devices));
  document.getElementById('web-pair')?.focus();
}

function showFailure(e) {
  const text = e instanceof Error ? e.message : String(e);
  const line = document.getElementById('web-error');
  if (line) line.textContent = text;
  say(TEXT.error(text), 'error');
}
