// The first step: the request drawn from the app's view, the choices, the session's limits.

import { $, body, mainButtons, row, setText, state } from './page.js';
import { applyDisabled } from './delay.js';
import { showCommand } from './command.js';
import { TEXT } from './text.js';
import {
  afterSecretText, bulkTitle, chainShown, choiceKeys, kindOf, limitedAfterSecret, limitsExtra,
  programOnly, programText, sensitiveText, sessionText, startLifetime, subjectKind,
} from './model.js';

export function renderQueue(view) {
  const queue = $('queue');
  queue.hidden = view.total < 2;
  queue.textContent = TEXT.queue(view.position, view.total);
  queue.setAttribute('aria-label', TEXT.queueLabel(view.position, view.total));
  const bulk = $('bulk');
  bulk.hidden = !view.bulk;
  // Room is short when a warning or the answer-all offer shows; the tooltips say the same.
  $('scope-hint').hidden = !!view.sensitive || !!view.bulk || !!view.after_secret;
  bulk.dataset.off = view.bulk ? 'false' : 'true';
  setText('bulk-label', view.bulk ? view.bulk.label : '');
  bulk.title = bulkTitle(view);
}

export function renderPrompt(view) {
  body.dataset.state = 'prompt';
  body.dataset.kind = kindOf(view);
  body.dataset.sensitive = view.sensitive ? 'true' : 'false';
  body.dataset.afterSecret = view.after_secret ? 'true' : 'false';
  body.dataset.promptId = String(view.id);
  document.title = TEXT.documentTitle(view.title);
  setText('title', view.title);
  renderSummary(view);
  setText('subject-kind', subjectKind(view));
  setText('subject-text', view.subject.text);
  $('subject').title = view.subject.full;
  $('subject').setAttribute('aria-label', TEXT.subjectLabel(view.kind === 'network', view.subject.full));

  row('requested', view.requested);
  const program = view.program;
  const shownProgram = programText(program);
  setText('program', shownProgram);
  $('program').title = shownProgram;
  // The sentence names the working directory when it starts with the command.
  const said = !!(view.origin && view.origin.command.text);
  row('cwd', said ? null : program.cwd && program.cwd.text, program.cwd && program.cwd.full);
  row('syscall', view.syscall);
  row('reason', view.reason);
  row('undo', view.undo);
  setText('project', view.project.text);
  $('project').title = view.project.full;
  row('session', sessionText(view));
  renderOrigin(view);

  $('sensitive').hidden = !view.sensitive;
  setText('sensitive-text', sensitiveText(view));
  $('after-secret').hidden = !view.after_secret;
  setText('after-secret-text', afterSecretText(view, Date.now()));
  $('after-secret').title = view.after_secret ? view.after_secret.path.full : '';

  const byKey = new Map(view.choices.map((c) => [c.name, c]));
  for (const button of mainButtons()) {
    const choice = byKey.get(button.dataset.choice);
    button.hidden = !choice;
    button.dataset.off = choice ? 'false' : 'true';
    button.classList.toggle('suggested', !!(choice && choice.default));
    button.classList.remove('focused');
    if (!choice) continue;
    const keys = choiceKeys(choice);
    button.querySelector('.label').textContent = choice.short;
    button.querySelector('kbd').textContent = keys.kbd;
    button.title = choice.hint;
    button.setAttribute('aria-keyshortcuts', keys.aria);
    button.setAttribute('aria-label', TEXT.choiceLabel(choice.label, choice.hint));
  }
  for (const group of document.querySelectorAll('.grants, .denies')) {
    const count = mainButtons().filter((b) => !b.hidden && group.contains(b)).length;
    group.hidden = count === 0;
    group.dataset.count = String(count);
  }
  renderLimits(view);
  renderScopeHint();
  renderQueue(view);
}

// The duration chooser and the program limit beside "Session": they shape a session
// grant and a denial for the session. The duration starts at the one last chosen in
// this project, else the view's default (an hour); the program limit starts off.
function renderLimits(view) {
  const limits = view.session_limits;
  const select = $('lifetime');
  select.replaceChildren();
  for (const option of limits.options) {
    const item = document.createElement('option');
    item.value = option.value;
    item.textContent = option.label;
    select.append(item);
  }
  select.value = startLifetime(limits);
  // After a secret a network request's Session is this run's, whatever was chosen.
  $('limits').hidden = limitedAfterSecret(view);
  const program = limits.program;
  $('program-row').hidden = !program;
  $('program-only').checked = false;
  setText('program-label', program ? programOnly(program) : '');
  $('program-row').title = program ? TEXT.programOnlyTitle(program) : '';
}

// The sentence under the choices says what Session covers, with the limits chosen
// beside it (drawn again when they change).
export function renderScopeHint() {
  const view = state.view;
  if (!view) return;
  const hint = $('scope-hint');
  hint.replaceChildren();
  const b = document.createElement('b');
  b.textContent = TEXT.hint.session;
  hint.append(b, TEXT.hint.allows(view.kind === 'network'));
  const scope = document.createElement('b');
  scope.textContent = view.session_scope.text;
  scope.title = view.session_scope.full;
  const limits = [];
  const select = $('lifetime');
  if (select.selectedIndex >= 0) {
    limits.push(select.options[select.selectedIndex].textContent);
  }
  if (programChecked()) {
    limits.push($('program-label').textContent);
  }
  hint.append(scope, TEXT.hint.rest(view.session_holder, limits, view.kind === 'network'));
}

const programChecked = () => !$('program-row').hidden && $('program-only').checked;

/** What the limits chosen add to a session answer: {for, program}, left out when unset. */
export function limitsChosen() {
  return limitsExtra($('lifetime').value, programChecked());
}

/** T: the next lifetime, round. */
export function nextLifetime() {
  const select = $('lifetime');
  if (select.disabled || !select.options.length) return;
  select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
  renderScopeHint();
}

/** R: the program limit on or off. */
export function toggleProgram() {
  const box = $('program-only');
  if (box.disabled || $('program-row').hidden) return;
  box.checked = !box.checked;
  renderScopeHint();
}

// The sentence starts with the command behind the request when it is known: the
// command in a code element (the whole of it on hover and under "Full").
function renderSummary(view) {
  const summary = $('summary');
  const origin = view.origin;
  if (!origin || !origin.command.text) {
    summary.textContent = view.summary;
    return;
  }
  const code = document.createElement('code');
  code.className = 'command';
  code.textContent = origin.command.text;
  code.title = origin.command.full;
  // The core's summary names a remote machine first; so does this one.
  const lead = view.host ? [document.createTextNode(TEXT.onHost(view.host))] : [];
  summary.replaceChildren(...lead, code, document.createTextNode(origin.sentence_rest));
}

// The chain from the command landstrip started to the asking process, one line in the
// details; each process's whole command line in the "Full" panel.
function renderOrigin(view) {
  const origin = view.origin;
  const chain = origin ? origin.chain : [];
  $('row-chain').hidden = chain.length === 0;
  const lines = $('chain');
  lines.replaceChildren();
  chainShown(chain).forEach((link, i) => {
    const line = document.createElement('span');
    line.className = 'link';
    if (i > 0 || (origin && origin.chain_cut)) line.append(TEXT.chainArrow);
    if (link === null) {
      line.append(TEXT.chainMore(chain.length - 3));
    } else {
      const code = document.createElement('code');
      code.textContent = link.argv.text;
      line.title = link.argv.full;
      line.append(code);
    }
    lines.append(line);
  });
  row('agent', agentSays(origin));
  const list = $('command-list');
  list.replaceChildren();
  for (const link of chain) {
    const item = document.createElement('li');
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = TEXT.process(link.program, link.pid);
    const full = document.createElement('code');
    full.className = 'full';
    full.textContent = link.argv.full;
    item.append(who, full);
    list.append(item);
  }
  showCommand(false);
}

export function renderEmpty() {
  body.dataset.state = 'empty';
  body.dataset.sensitive = 'false';
  body.dataset.afterSecret = 'false';
  delete body.dataset.promptId;
  setText('title', TEXT.empty.title);
  setText('summary', TEXT.empty.summary);
  $('queue').hidden = true;
  applyDisabled();
}

// What the agent says of the command: opencode 1.x's description of it, or (opencode 2
// keeps none) the command as the agent wrote it, where it differs from the chain's.
function agentSays(origin) {
  if (!origin) return null;
  if (origin.description) return origin.description;
  return origin.agent_command ? TEXT.agentCommand(origin.agent_command) : null;
}
