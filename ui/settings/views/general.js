// The General view: the app's own settings (prompt timeout, quiet denial summaries,
// notification sound, start at login, network requests after a secret). Each control saves on change through settings_change_app_setting
// (the core's ops::change_app_setting, as `ctl config set` does) and says what it wrote;
// an error shows next to the control that caused it. The phone page's section below them
// is views/phone.js.

import { invoke } from '../../shared/ipc.js';
import { h } from '../../shared/dom.js';
import { TEXT } from '../text.js';
import { appSettingMessage, parseTimeout, timeoutText } from '../model.js';
import { main, say, state } from '../app.js';
import { phoneSection, phoneUnavailable } from './phone.js';

export async function loadGeneral() {
  // The phone page's state is asked for at the same time; its failure (a devices file
  // that does not parse) is shown in its section and leaves the settings above usable.
  const [settings, phone] = await Promise.all([
    invoke('settings_app_settings'),
    Promise.all([invoke('settings_web'), invoke('settings_web_devices')])
      .catch((e) => ({ error: String(e) })),
  ]);
  if (state.view !== 'general') return;
  render(settings);
  main.append(phone.error ? phoneUnavailable(phone.error) : phoneSection(...phone));
}

function render(settings) {
  const timeout = h('input', {
    id: 'general-timeout',
    type: 'text',
    inputmode: 'numeric',
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: TEXT.general.timeoutPlaceholder,
    value: timeoutText(settings.promptTimeoutSecs),
    'aria-describedby': 'general-timeout-hint general-timeout-error',
    onchange: () => saveTimeout(timeout),
    onkeydown: (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        saveTimeout(timeout);
      }
    },
  });
  main.replaceChildren(
    h('h1', {}, TEXT.general.heading),
    h('p', { className: 'hint' }, TEXT.general.note),
    h('div', { className: 'setting', 'data-setting': 'promptTimeout' },
      h('label', { for: 'general-timeout' }, TEXT.general.timeoutLabel),
      timeout,
      h('p', { className: 'hint', id: 'general-timeout-hint' },
        `${TEXT.general.timeoutNow(settings.promptTimeoutSecs)} ${TEXT.general.timeoutHint}`),
      errorLine('general-timeout-error')),
    checkbox('summarizeDenials', 'general-summaries', TEXT.general.summaries, settings.summarizeDenials),
    checkbox('notificationSound', 'general-sound', TEXT.general.sound, settings.notificationSound),
    checkbox('autostart', 'general-autostart', TEXT.general.autostart, settings.autostart,
      h('p', { className: 'hint', id: 'general-autostart-hint' }, TEXT.general.autostartHint(settings.autostartFile))),
    // ask | deny in the settings file; a box here, checked for deny.
    checkbox('afterSecret', 'general-after-secret', TEXT.general.afterSecret, settings.afterSecret === 'deny',
      h('p', { className: 'hint', id: 'general-after-secret-hint' }, TEXT.general.afterSecretHint),
      (checked) => (checked ? 'deny' : 'ask')),
  );
}

function errorLine(id) {
  return h('p', { className: 'field-error', id, role: 'alert', 'data-error': '' });
}

function checkbox(key, id, label, checked, hint, value = (on) => on) {
  const errorId = `${id}-error`;
  const describedBy = hint ? `${hint.id} ${errorId}` : errorId;
  return h('div', { className: 'setting bool', 'data-setting': key },
    h('input', {
      type: 'checkbox', id, checked, 'aria-describedby': describedBy,
      onchange: (event) => save(key, value(event.target.checked), errorId),
    }),
    h('label', { for: id }, label),
    hint,
    errorLine(errorId));
}

async function saveTimeout(input) {
  // Enter and the change event that follows it are one save.
  if (input.dataset.submitted === input.value) return;
  input.dataset.submitted = input.value;
  const parsed = parseTimeout(input.value);
  if (parsed.error) {
    showError('general-timeout-error', parsed.error);
    return;
  }
  await save('promptTimeout', parsed.value, 'general-timeout-error');
}

let saving = Promise.resolve();

/** Saves one setting (one at a time, in order), then shows the file as it now is. */
function save(key, value, errorId) {
  saving = saving.then(async () => {
    showError(errorId, '');
    try {
      const changed = await invoke('settings_change_app_setting', { change: { key, value } });
      say(appSettingMessage(changed));
      if (state.view === 'general') refresh(changed.settings);
    } catch (e) {
      showError(errorId, String(e));
    }
  });
  return saving;
}

/**
 * Shows the settings as saved without rebuilding the view: the controls (and what is being
 * typed, and the focus) stay as they are.
 */
function refresh(settings) {
  const hint = document.getElementById('general-timeout-hint');
  if (hint) hint.textContent = `${TEXT.general.timeoutNow(settings.promptTimeoutSecs)} ${TEXT.general.timeoutHint}`;
  const summaries = document.getElementById('general-summaries');
  if (summaries) summaries.checked = settings.summarizeDenials;
  const sound = document.getElementById('general-sound');
  if (sound) sound.checked = settings.notificationSound;
  const autostart = document.getElementById('general-autostart');
  if (autostart) autostart.checked = settings.autostart;
  const afterSecret = document.getElementById('general-after-secret');
  if (afterSecret) afterSecret.checked = settings.afterSecret === 'deny';
}

function showError(id, text) {
  const line = document.getElementById(id);
  if (line) line.textContent = text;
}
