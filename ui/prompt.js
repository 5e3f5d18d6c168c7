// The prompt dialog page. Plain JS, no framework, no remote content (strict CSP).
//
// The app pushes `dialog:update` events ({seq, view, notice}); the page renders each one,
// acknowledges it with `dialog_rendered` (the window is shown or hidden only then), and
// answers with `dialog_answer`. Input is ignored for DELAY_MS after a prompt appears (a new
// prompt, or the window becoming visible), so a keystroke meant for another window cannot
// answer it.
'use strict';

(() => {
  const DELAY_MS = 500;
  const NOTICE_MS = 4000;

  const ipc = window.__TAURI_INTERNALS__;
  const invoke = (cmd, args) => ipc.invoke(cmd, args);
  const listen = (event, handler) =>
    invoke('plugin:event|listen', {
      event,
      target: { kind: 'Any' },
      handler: ipc.transformCallback(handler),
    });

  const $ = (id) => document.getElementById(id);
  const body = document.body;
  const mainButtons = () => Array.from(document.querySelectorAll('#actions-main button'));
  // "Edit policy…" and the command's show/hide never answer, so the arming delay does not
  // hold them back.
  const allButtons = () =>
    Array.from(document.querySelectorAll('button:not(#edit-policy):not(#command-toggle):not(#command-back)'));

  const state = {
    seq: -1,
    view: null,
    step: 'main', // main | scope | confirm
    armed: false,
    busy: false,
    timer: 0,
    noticeTimer: 0,
    pending: null, // what the second step confirms: {choice, target, never}
    preview: null,
    scope: null,
    commandOpen: false, // the whole command lines shown in place of the details
    focusBefore: null, // what had the focus before the command lines were opened
  };

  // --- input delay --------------------------------------------------------

  function applyDisabled() {
    const blocked = !state.armed || state.busy || !state.view;
    for (const button of allButtons()) {
      button.disabled = blocked || button.dataset.off === 'true';
    }
    $('confirm-check').disabled = blocked;
    $('lifetime').disabled = blocked;
    $('program-only').disabled = blocked;
    if (!blocked && state.step !== 'main') {
      $('confirm').disabled = !confirmAllowed();
    }
  }

  // The delay runs only while the page is visible: a prompt rendered into the hidden
  // window starts its delay when the window appears, never before.
  function arm() {
    clearTimeout(state.timer);
    state.armed = false;
    body.dataset.armed = 'false';
    $('dialog').setAttribute('aria-busy', 'true');
    const delay = $('delay');
    delay.classList.remove('running');
    applyDisabled();
    if (document.visibilityState !== 'visible') return;
    void delay.offsetWidth; // restart the fill animation
    delay.classList.add('running');
    state.timer = setTimeout(() => {
      state.armed = true;
      body.dataset.armed = 'true';
      $('dialog').setAttribute('aria-busy', 'false');
      applyDisabled();
      focusDefault();
    }, DELAY_MS);
  }

  // --- rendering ----------------------------------------------------------

  function setText(id, text) {
    $(id).textContent = text == null ? '' : String(text);
  }

  function row(id, value, title) {
    const shown = value != null && value !== '';
    $('row-' + id).hidden = !shown;
    setText(id, shown ? value : '');
    $(id).title = title || (shown ? String(value) : '');
  }

  function showNotice(text) {
    const notice = $('notice');
    notice.textContent = text;
    notice.hidden = false;
    clearTimeout(state.noticeTimer);
    state.noticeTimer = setTimeout(() => { notice.hidden = true; }, NOTICE_MS);
  }

  function showError(text) {
    const error = $('error');
    error.textContent = text || '';
    error.hidden = !text;
  }

  function renderQueue(view) {
    const queue = $('queue');
    queue.hidden = view.total < 2;
    queue.textContent = `${view.position} of ${view.total}`;
    queue.setAttribute('aria-label', `Request ${view.position} of ${view.total} waiting`);
    const bulk = $('bulk');
    bulk.hidden = !view.bulk;
    // Room is short when a warning or the answer-all offer shows; the tooltips say the same.
    $('scope-hint').hidden = !!view.sensitive || !!view.bulk;
    bulk.dataset.off = view.bulk ? 'false' : 'true';
    setText('bulk-label', view.bulk ? view.bulk.label : '');
    bulk.title = view.bulk
      ? `Allow ${view.session_scope.full} for ${view.session_holder}: answers this request and the ${view.bulk.count - 1} others under it`
      : '';
  }

  function renderPrompt(view) {
    body.dataset.state = 'prompt';
    body.dataset.kind = view.kind === 'network' ? 'network' : view.operation;
    body.dataset.sensitive = view.sensitive ? 'true' : 'false';
    body.dataset.promptId = String(view.id);
    document.title = `${view.title} — landstrip-tray`;
    setText('title', view.title);
    renderSummary(view);
    setText('subject-kind', view.kind === 'network' ? 'Address' : view.operation === 'read' ? 'Read' : 'Write');
    setText('subject-text', view.subject.text);
    $('subject').title = view.subject.full;
    $('subject').setAttribute('aria-label', `${view.kind === 'network' ? 'Address' : 'Path'}: ${view.subject.full}`);

    row('requested', view.requested);
    const program = view.program;
    const programText = [program.exe || program.name, program.pid != null ? `pid ${program.pid}` : null]
      .filter(Boolean)
      .join(' · ');
    setText('program', programText);
    $('program').title = programText;
    // The sentence names the working directory when it starts with the command.
    const said = !!(view.origin && view.origin.command.text);
    row('cwd', said ? null : program.cwd && program.cwd.text, program.cwd && program.cwd.full);
    row('syscall', view.syscall);
    row('reason', view.reason);
    setText('project', view.project.text);
    $('project').title = view.project.full;
    const title = view.origin && view.origin.session_title;
    row('session', view.session && title ? `${title} · ${view.session}` : view.session);
    renderOrigin(view);

    const sensitive = $('sensitive');
    sensitive.hidden = !view.sensitive;
    setText('sensitive-text', view.sensitive
      ? `${view.sensitive.location.text} holds ${view.sensitive.what}. Deny unless you expected this request.`
      : '');


    const byKey = new Map(view.choices.map((c) => [c.name, c]));
    for (const button of mainButtons()) {
      const choice = byKey.get(button.dataset.choice);
      button.hidden = !choice;
      button.dataset.off = choice ? 'false' : 'true';
      button.classList.toggle('suggested', !!(choice && choice.default));
      button.classList.remove('focused');
      if (!choice) continue;
      button.querySelector('.label').textContent = choice.short;
      button.querySelector('kbd').textContent = choice.default ? `${choice.shortcut} ↵` : choice.shortcut;
      button.title = choice.hint;
      button.setAttribute('aria-keyshortcuts', choice.default ? `${choice.shortcut} Enter` : choice.shortcut);
      button.setAttribute('aria-label', `${choice.label.replace('…', '')}. ${choice.hint}`);
    }
    for (const row of document.querySelectorAll('.grants, .denies')) {
      const count = mainButtons().filter((b) => !b.hidden && row.contains(b)).length;
      row.hidden = count === 0;
      row.dataset.count = String(count);
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
    const chosen = limits.options.some((o) => o.value === limits.chosen) ? limits.chosen : '';
    select.value = chosen;
    const program = limits.program;
    $('program-row').hidden = !program;
    $('program-only').checked = false;
    const name = program ? program.split('/').pop() : '';
    setText('program-label', program ? `only ${name}` : '');
    $('program-row').title = program ? `Only requests of ${program} (R)` : '';
  }

  // The sentence under the choices says what Session covers, with the limits chosen
  // beside it (drawn again when they change).
  function renderScopeHint() {
    const view = state.view;
    if (!view) return;
    const hint = $('scope-hint');
    hint.replaceChildren();
    const b = document.createElement('b');
    b.textContent = 'Session';
    hint.append(b, ` allows ${view.kind === 'network' ? '' : 'everything under '}`);
    const scope = document.createElement('b');
    scope.textContent = view.session_scope.text;
    scope.title = view.session_scope.full;
    const limits = [];
    const select = $('lifetime');
    if (select.selectedIndex >= 0) {
      limits.push(select.options[select.selectedIndex].textContent);
    }
    if (!$('program-row').hidden && $('program-only').checked) {
      limits.push($('program-label').textContent);
    }
    const limited = limits.length ? ` (${limits.join(', ')})` : '';
    hint.append(scope, ` for ${view.session_holder}${limited}; nothing is saved.`);
  }

  // What the chooser adds to a session answer: {for, program}, left out when unset.
  function limitsChosen() {
    const extra = {};
    const value = $('lifetime').value;
    if (value) extra.for = value;
    if (!$('program-row').hidden && $('program-only').checked) extra.program = true;
    return extra;
  }

  function nextLifetime() {
    const select = $('lifetime');
    if (select.disabled || !select.options.length) return;
    select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
    renderScopeHint();
  }

  function toggleProgram() {
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
    summary.replaceChildren(code, document.createTextNode(origin.sentence_rest));
  }

  // The chain from the command landstrip started to the asking process, one line in the
  // details; each process's whole command line in the "Full" panel.
  function renderOrigin(view) {
    const origin = view.origin;
    const chain = origin ? origin.chain : [];
    $('row-chain').hidden = chain.length === 0;
    // One line per process, the command landstrip started first; past four, the first
    // and the last two, with how many are left out between (all of them under "Full"):
    // "… 1 more" would take the line the one process it stands for needs.
    const lines = $('chain');
    lines.replaceChildren();
    const shown = chain.length > 4
      ? [chain[0], null, ...chain.slice(-2)]
      : chain;
    shown.forEach((link, i) => {
      const line = document.createElement('span');
      line.className = 'link';
      if (i > 0 || (origin && origin.chain_cut)) line.append('→ ');
      if (link === null) {
        line.append(`… ${chain.length - 3} more`);
      } else {
        const code = document.createElement('code');
        code.textContent = link.argv.text;
        line.title = link.argv.full;
        line.append(code);
      }
      lines.append(line);
    });
    row('agent', origin && origin.description);
    const list = $('command-list');
    list.replaceChildren();
    for (const link of chain) {
      const item = document.createElement('li');
      const who = document.createElement('span');
      who.className = 'who';
      who.textContent = `${link.program} · pid ${link.pid}`;
      const full = document.createElement('code');
      full.className = 'full';
      full.textContent = link.argv.full;
      item.append(who, full);
      list.append(item);
    }
    showCommand(false);
  }

  // Opening moves the focus into the panel (its list scrolls with the arrow keys);
  // closing gives it back to where it was, so the focus is never lost with the panel.
  function showCommand(open) {
    const hasChain = !!(state.view && state.view.origin && state.view.origin.chain.length);
    const wasOpen = state.commandOpen;
    state.commandOpen = open && hasChain;
    const panel = $('command-full');
    const inPanel = panel.contains(document.activeElement);
    if (state.commandOpen && !wasOpen && !inPanel) state.focusBefore = document.activeElement;
    panel.hidden = !state.commandOpen;
    $('details').hidden = state.commandOpen;
    $('command-toggle').setAttribute('aria-expanded', String(state.commandOpen));
    if (state.commandOpen) {
      panel.focus();
    } else if (wasOpen && (inPanel || document.activeElement === document.body)) {
      const before = state.focusBefore;
      state.focusBefore = null;
      const back = before && before.isConnected && !before.hidden && !before.disabled
        ? before
        : defaultButton() || $('command-toggle');
      back.focus();
      // Shown as focused, as the default is when the prompt appears (focus-visible is not
      // guaranteed for a focus the page moves).
      if (back instanceof HTMLButtonElement) back.classList.add('focused');
    }
  }

  function renderEmpty() {
    body.dataset.state = 'empty';
    body.dataset.sensitive = 'false';
    delete body.dataset.promptId;
    setText('title', 'No requests waiting');
    setText('summary', 'This window closes by itself.');
    $('queue').hidden = true;
    applyDisabled();
  }

  function showStep(step) {
    state.step = step;
    $('step-main').hidden = step !== 'main';
    $('step-scope').hidden = step !== 'scope';
    $('step-confirm').hidden = step !== 'confirm';
    $('actions-main').hidden = step !== 'main';
    $('actions-step').hidden = step === 'main';
    // "Never" takes access away: no second confirmation for it.
    const never = !!(state.pending && state.pending.never);
    const sensitiveStep = step !== 'main' && !never && !!(state.view && state.view.sensitive);
    $('confirm-row').hidden = !sensitiveStep;
    $('confirm-check').checked = false;
    body.dataset.step = step;
    showError('');
    applyDisabled();
  }

  function defaultButton() {
    if (state.step !== 'main') {
      const never = !!(state.pending && state.pending.never);
      return state.view && state.view.sensitive && !never ? $('back') : $('confirm');
    }
    return mainButtons().find((b) => !b.hidden && b.classList.contains('suggested')) || null;
  }

  function focusDefault() {
    const button = defaultButton();
    if (button && !button.disabled) {
      button.focus();
      button.classList.add('focused');
    }
  }

  // --- updates from the app -------------------------------------------------

  function apply(update) {
    if (!update || update.seq <= state.seq) return;
    state.seq = update.seq;
    if (update.notice) showNotice(update.notice);
    const view = update.view;
    if (!view) {
      state.view = null;
      showStep('main');
      renderEmpty();
      // The window hides on this acknowledgement: let the answering click or key finish
      // its frame first (input that is still being presented when the window unmaps never
      // completes for WebKit's input simulation, and the user sees the answer land).
      afterNextFrame(() => acknowledge(update.seq));
      return;
    }
    const same = state.view && state.view.id === view.id;
    state.view = view;
    if (same) {
      // Same prompt, new counts: keep the step, the focus and the input delay.
      renderQueue(view);
      applyDisabled();
    } else {
      state.busy = false;
      state.pending = null;
      showStep('main');
      renderPrompt(view);
      arm();
    }
    acknowledge(update.seq);
  }

  // The window is shown (or hidden) only once the page shows what the update says.
  function acknowledge(seq) {
    invoke('dialog_rendered', { seq }).catch(() => {});
  }

  // Two animation frames: the next frame has been painted. A hidden page paints nothing,
  // so it acknowledges at once.
  function afterNextFrame(callback) {
    if (document.visibilityState !== 'visible') return callback();
    requestAnimationFrame(() => requestAnimationFrame(callback));
  }

  // --- answering --------------------------------------------------------------

  async function answer(choice, extra) {
    const view = state.view;
    if (!view || state.busy) return;
    state.busy = true;
    applyDisabled();
    const request = Object.assign({ id: view.id, choice }, extra || {});
    try {
      await invoke('dialog_answer', { request });
      // The next update moves on (or hides the window); stay busy until then.
    } catch (error) {
      state.busy = false;
      showError(String(error));
      applyDisabled();
    }
  }

  function choose(key) {
    const view = state.view;
    if (!view) return;
    if (key === 'bulk') {
      if (!view.bulk) return;
      key = 'session';
    }
    const offered = key === 'deny' || view.choices.some((c) => c.name === key);
    if (!offered) return;
    if (key === 'once' || key === 'deny') return answer(key);
    if (key === 'deny_session') return answer('deny', Object.assign({ session: true }, limitsChosen()));
    if (key === 'session') {
      if (!view.sensitive) return answer('session', limitsChosen());
      return openConfirm();
    }
    return openScope(key);
  }

  function openConfirm() {
    const view = state.view;
    state.pending = { choice: 'session', limits: limitsChosen() };
    const count = view.bulk ? view.bulk.count : 1;
    setText('confirm-title', `Allow ${view.session_scope.text} for this session?`);
    setText('confirm-kind', view.operation);
    setText('confirm-subject', view.session_scope.text);
    $('confirm-subject').title = view.session_scope.full;
    setText('confirm-text',
      `${view.program.name} could then ${view.operation} anything under ${view.session_scope.text} ` +
      `without asking again, for ${view.session_holder}` +
      (count > 1 ? ` (this request and ${count - 1} more waiting).` : '.'));
    setText('confirm-label', `Yes, allow access to ${view.sensitive.location.text} (${view.sensitive.what}).`);
    setText('confirm-button-label', 'Allow for session');
    $('confirm').classList.add('destructive');
    $('confirm').classList.remove('suggested');
    showStep('confirm');
    arm();
  }

  // `name` is a button: project, global (allow) or never, never_global (deny).
  async function openScope(name) {
    const view = state.view;
    const never = name === 'never' || name === 'never_global';
    const target = name === 'global' || name === 'never_global' ? 'global' : 'project';
    state.busy = true;
    applyDisabled();
    let preview;
    try {
      preview = await invoke('dialog_preview', { id: view.id, target, never });
    } catch (error) {
      state.busy = false;
      showError(String(error));
      applyDisabled();
      return;
    }
    state.busy = false;
    if (!state.view || state.view.id !== view.id) return;
    state.pending = { choice: never ? 'never' : target, target, never };
    state.preview = preview;
    const suggested = preview.options.find((o) => o.suggested) || preview.options[0];
    state.scope = suggested ? suggested.kind : null;
    const titles = {
      project: 'Allow for this project — add to its sandbox.json:',
      global: 'Allow for all projects — add to your global sandbox.json:',
      never: 'Never in this project — add to its sandbox.json:',
      never_global: 'Never in any project — add to your global sandbox.json:',
    };
    setText('scope-title', titles[name]);
    renderScopeOptions();
    renderDiff();
    const buttons = {
      project: 'Add to project & allow',
      global: 'Add globally & allow',
      never: 'Add to project & deny',
      never_global: 'Add globally & deny',
    };
    setText('confirm-button-label', buttons[name]);
    if (never) {
      $('confirm').classList.add('destructive');
      $('confirm').classList.remove('suggested');
      showStep('scope');
      arm();
      return;
    }
    const sensitive = !!view.sensitive;
    $('confirm').classList.toggle('destructive', sensitive);
    $('confirm').classList.toggle('suggested', !sensitive);
    if (sensitive) {
      setText('confirm-label', `Yes, allow access to ${view.sensitive.location.text} (${view.sensitive.what}) in every run${target === 'global' ? ' of every project' : ''}.`);
    }
    showStep('scope');
    arm();
  }

  function renderScopeOptions() {
    const list = $('scope-options');
    list.replaceChildren();
    state.preview.options.forEach((option, index) => {
      const label = document.createElement('label');
      label.className = 'scope-option';
      label.title = option.root.full;
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'scope';
      input.value = option.kind;
      input.id = `scope-${option.kind}`;
      input.checked = option.kind === state.scope;
      input.setAttribute('aria-describedby', `scope-root-${option.kind}`);
      input.addEventListener('change', () => {
        state.scope = option.kind;
        renderDiff();
      });
      const what = document.createElement('span');
      what.className = 'what';
      what.textContent = `${index + 1}  ${option.label}`;
      const root = document.createElement('span');
      root.className = 'root';
      root.id = `scope-root-${option.kind}`;
      // rtl keeps the end of a long path visible; the bidi isolate keeps it in order.
      const bdi = document.createElement('bdi');
      bdi.textContent = option.root.text;
      root.append(bdi);
      const tags = document.createElement('span');
      tags.className = 'tags';
      if (option.already_listed) {
        const tag = document.createElement('span');
        tag.className = 'tag';
        tag.textContent = 'listed';
        tag.title = 'The file already has this entry';
        tags.append(tag);
      }
      if (option.covers_sensitive.length) {
        const tag = document.createElement('span');
        tag.className = 'tag danger';
        tag.textContent = 'covers secrets';
        tag.title = `Also covers ${option.covers_sensitive.join(', ')}`;
        tags.append(tag);
      }
      label.append(input, what, root, tags);
      list.append(label);
    });
  }

  function selectedOption() {
    return state.preview && state.preview.options.find((o) => o.kind === state.scope);
  }

  function renderDiff() {
    const preview = state.preview;
    const option = selectedOption();
    setText('preview-file', preview.file.text);
    $('preview-file').title = preview.file.full;
    $('preview-new').hidden = preview.file_exists;
    const diff = $('preview-diff');
    diff.replaceChildren();
    const [group, key] = preview.array.split('.');
    const line = (text, cls) => {
      const span = document.createElement('span');
      if (cls) span.className = cls;
      span.textContent = text + '\n';
      diff.append(span);
    };
    if (preview.error) {
      line(`Cannot edit this file: ${preview.error}`);
    } else {
      line(preview.array, 'key');
      const current = preview.current;
      const shownCurrent = current.slice(-2);
      if (current.length > shownCurrent.length) {
        line(`    … ${current.length - shownCurrent.length} more`);
      }
      for (const entry of shownCurrent) line(`    ${JSON.stringify(entry)}`);
      if (option && !option.already_listed) {
        line(`  + ${JSON.stringify(option.entry)}`, 'add');
      } else if (option) {
        line('    (already listed: the file stays as it is)');
      }
    }
    $('preview-diff').setAttribute('aria-label', option
      ? `${preview.array} in ${preview.file.full} gains ${option.entry}`
      : '');
    const view = state.view;
    const who = preview.target === 'project' ? 'every run of this project' : 'every run of every project';
    const never = !!(state.pending && state.pending.never);
    const what = view && view.operation === 'read' ? 'reads' : 'writes';
    setText('scope-note', option && view
      ? never
        ? `Denies this request now and, from then on, ${what} of ${option.root.text} in ${who} ` +
          'without asking, until the entry is removed from the file.'
        : `Allows this request now and, from then on, ${what} under ` +
          `${option.root.text} in ${who} without asking, until the entry is removed from the file.`
      : '');
    const sensitive = $('scope-sensitive');
    const covers = option ? option.covers_sensitive : [];
    sensitive.hidden = covers.length === 0 || !!(state.view && state.view.sensitive);
    sensitive.className = 'warning soft';
    sensitive.textContent = covers.length
      ? `Also covers ${covers.slice(0, 2).join(', ')}${covers.length > 2 ? ` and ${covers.length - 2} more` : ''}.`
      : '';
    applyDisabled();
  }

  function confirmAllowed() {
    if (state.step === 'scope' && (!state.preview || state.preview.error || !selectedOption())) {
      return false;
    }
    const never = !!(state.pending && state.pending.never);
    if (state.view && state.view.sensitive && !never && !$('confirm-check').checked) return false;
    return true;
  }

  function confirm() {
    if (!state.pending || !confirmAllowed()) return;
    const sensitive = !!(state.view && state.view.sensitive);
    if (state.pending.choice === 'session') {
      return answer('session', Object.assign({ confirmed: sensitive }, state.pending.limits));
    }
    if (state.pending.never) {
      const extra = { scope: state.scope };
      if (state.pending.target === 'global') extra.global = true;
      return answer('never', extra);
    }
    return answer(state.pending.choice, { scope: state.scope, confirmed: sensitive });
  }

  function back() {
    state.pending = null;
    state.preview = null;
    showStep('main');
    focusDefault();
  }

  // --- input ------------------------------------------------------------------

  document.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const blocked = !state.armed || state.busy || !state.view;
    // Held keys never answer: a repeat would land on the next prompt.
    if (event.repeat || blocked) {
      if (event.key !== 'Tab') {
        event.preventDefault();
        // Counted for the tests (tests/tests/dialog.rs) and for nobody else.
        body.dataset.swallowed = String(Number(body.dataset.swallowed || 0) + 1);
      }
      return;
    }
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (state.step !== 'main') {
      if (key === 'Escape') {
        event.preventDefault();
        back();
      } else if (key === 'Enter' && !(document.activeElement instanceof HTMLButtonElement)) {
        event.preventDefault();
        if (!$('confirm').disabled) confirm();
      } else if (state.step === 'scope' && /^[1-3]$/.test(key)) {
        const option = state.preview && state.preview.options[Number(key) - 1];
        if (option) {
          event.preventDefault();
          state.scope = option.kind;
          $(`scope-${option.kind}`).checked = true;
          renderDiff();
        }
      }
      return;
    }
    const shortcuts = {
      o: 'once', s: 'session', p: 'project', g: 'global', d: 'deny', a: 'bulk',
      x: 'deny_session', n: 'never', e: 'never_global',
    };
    if (key === 't') {
      event.preventDefault();
      nextLifetime();
    } else if (key === 'r') {
      event.preventDefault();
      toggleProgram();
    } else if (key === 'c') {
      event.preventDefault();
      showCommand(!state.commandOpen);
    } else if (key === 'Escape') {
      event.preventDefault();
      answer('deny');
    } else if (key === 'Enter') {
      // A focused button activates itself; otherwise Enter means the default.
      if (!(document.activeElement instanceof HTMLButtonElement)) {
        event.preventDefault();
        const button = defaultButton();
        if (button) choose(button.dataset.choice);
      }
    } else if (shortcuts[key]) {
      event.preventDefault();
      choose(shortcuts[key]);
    }
  });

  // Opens the settings window on this prompt's project and the list it would change; the
  // prompt keeps waiting (it is answered here or elsewhere, never by this).
  async function editPolicy() {
    const view = state.view;
    if (!view) return;
    try {
      await invoke('dialog_edit_policy', { id: view.id });
    } catch (error) {
      showError(String(error));
    }
  }

  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button') : null;
    if (button && button.id === 'edit-policy') return editPolicy();
    if (button && (button.id === 'command-toggle' || button.id === 'command-back')) {
      return showCommand(!state.commandOpen);
    }
    if (!button || button.disabled || !state.armed || state.busy) return;
    if (button.id === 'back') return back();
    if (button.id === 'confirm') return confirm();
    if (button.dataset.choice) choose(button.dataset.choice);
  });

  document.addEventListener('focusin', (event) => {
    for (const b of allButtons()) {
      if (b !== event.target) b.classList.remove('focused');
    }
  });

  $('confirm-check').addEventListener('change', applyDisabled);
  $('lifetime').addEventListener('change', renderScopeHint);
  $('program-only').addEventListener('change', renderScopeHint);

  // The window appearing (shown after being hidden, restored, brought back to the screen)
  // starts the delay again: typing meant for another window must not answer.
  document.addEventListener('visibilitychange', () => {
    if (state.view && !state.busy) arm();
  });

  // --- start ------------------------------------------------------------------

  async function start() {
    await listen('dialog:update', (event) => apply(event.payload));
    apply(await invoke('dialog_ready'));
  }

  start().catch((error) => {
    showError(`The dialog could not start: ${error}`);
  });
})();
