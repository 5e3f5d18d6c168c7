// The welcome window: what the app does, projects to serve, landstrip's own check, and
// how to connect opencode. Every string is in text.js; the logic in model.js.

import { h } from '../shared/dom.js';
import { invoke } from '../shared/ipc.js';
import { TEXT } from './text.js';
import { rows, toAdd, doctorView, connectView } from './model.js';
import { pluginWarnings } from './plugin-warnings.js';

const main = document.getElementById('main');
const status = document.getElementById('status');
const done = document.getElementById('done');
let drawn = [];

const say = (text) => { status.textContent = text; };
const command = (text) => h('pre', { className: 'command' }, h('code', {}, text));

function section(id, title, ...children) {
  return h('section', { className: 'card', 'aria-labelledby': `${id}-title` },
    h('h2', { id: `${id}-title` }, title), ...children);
}

function drawProjects(box, view) {
  drawn = rows(view.offered, view.home);
  box.replaceChildren();
  if (drawn.length === 0) {
    box.append(h('p', { className: 'empty', id: 'offered-none' }, TEXT.projectsNone));
    return;
  }
  const list = h('ul', { className: 'offered', id: 'offered', 'aria-label': TEXT.projectsList });
  for (const row of drawn) {
    const box = h('input', {
      type: 'checkbox',
      'data-dir': row.dir,
      checked: row.checked,
      disabled: row.served,
      onChange: (e) => { row.checked = e.target.checked; },
    });
    const error = h('span', { className: 'error', 'data-error-for': row.dir, hidden: true });
    list.append(h('li', { 'data-source': row.source },
      h('label', {}, box, h('span', { className: 'dir', title: row.dir }, row.shown),
        h('span', { className: 'source' }, row.served ? TEXT.alreadyServed : row.source)),
      error));
  }
  box.append(list);
}

function drawDoctor(box, result) {
  const view = doctorView(result);
  box.dataset.state = view.state;
  box.replaceChildren(
    h('div', { className: 'headline' }, view.headline),
    view.detail ? h('div', { className: 'detail' }, view.detail) : null,
  );
  document.getElementById('doctor-install').hidden = !view.install;
}

function drawConnect(box, result) {
  const view = connectView(result);
  box.dataset.state = view.state;
  box.replaceChildren(
    h('p', { className: 'hint', id: 'connect-found' }, view.line),
    ...view.items.map((item) => h('div', { className: 'connect', 'data-generation': item.generation },
      h('p', {}, item.heading), command(item.command), h('p', { className: 'hint' }, item.config))),
  );
}

async function connect(box) {
  drawConnect(box, undefined);
  try {
    drawConnect(box, await invoke('welcome_connect'));
  } catch (e) {
    drawConnect(box, { installed: { state: 'unknown', message: String(e) } });
  }
}

async function check(box) {
  drawDoctor(box, undefined);
  try {
    drawDoctor(box, await invoke('welcome_doctor'));
  } catch (e) {
    drawDoctor(box, { state: 'failed', message: String(e) });
  }
}

async function finish() {
  const dirs = toAdd(drawn);
  done.disabled = true;
  try {
    if (dirs.length) {
      say(TEXT.adding);
      const results = await invoke('welcome_add', { dirs });
      const failed = results.filter((r) => r.error);
      for (const r of results) {
        const error = main.querySelector(`[data-error-for="${CSS.escape(r.dir)}"]`);
        if (error) {
          error.textContent = r.error || '';
          error.hidden = !r.error;
        }
        const row = drawn.find((d) => d.dir === r.dir);
        if (row && !r.error) row.served = true;
      }
      if (failed.length) {
        say(TEXT.addFailed);
        done.disabled = false;
        return;
      }
      say(TEXT.added(results.length));
    }
    await invoke('welcome_done');
  } catch (e) {
    say(TEXT.failed(e));
    done.disabled = false;
  }
}

async function start() {
  document.title = TEXT.title;
  done.textContent = TEXT.done;
  done.addEventListener('click', finish);
  const projects = h('div', { id: 'projects' }, h('p', { className: 'hint' }, TEXT.projectsLoading));
  const doctor = h('div', { className: 'doctor', id: 'doctor', role: 'status', 'aria-live': 'polite' });
  const connectBox = h('div', { id: 'connect', 'aria-live': 'polite' });
  main.append(
    h('h1', { id: 'welcome-title' }, TEXT.title),
    ...TEXT.lead.map((line) => h('p', { className: 'lead' }, line)),
    section('projects', TEXT.projectsTitle, h('p', { className: 'hint' }, TEXT.projectsHint), projects),
    section('doctor', TEXT.doctorTitle, doctor,
      h('div', { id: 'doctor-install', hidden: true },
        h('p', {}, TEXT.doctorInstall), command(TEXT.installCommand),
        h('p', { className: 'hint' }, TEXT.installAfter)),
      h('button', { type: 'button', id: 'again', onClick: () => check(doctor) }, TEXT.doctorAgain)),
    section('plugin', TEXT.pluginTitle,
      h('p', {}, TEXT.pluginIntro), connectBox,
      h('p', {}, TEXT.pluginAfter),
      h('h2', { className: 'sub' }, TEXT.tuiTitle),
      h('p', {}, TEXT.tuiText), command(TEXT.tuiCommand)),
  );
  const checking = check(doctor);
  const looking = connect(connectBox);
  try {
    const view = await invoke('welcome_offered');
    drawProjects(projects, view);
    // Said before the projects: with such a file every sandboxed command fails.
    const warning = pluginWarnings(view.pluginWarnings);
    if (warning) main.insertBefore(warning, projects.closest('section'));
  } catch (e) {
    projects.replaceChildren(h('p', { className: 'empty' }, TEXT.projectsFailed(e)));
  }
  document.body.dataset.ready = 'true';
  (main.querySelector('#offered input:not(:disabled)') || done).focus();
  await Promise.all([checking, looking]);
}

start();
