// The dialog's state and the element helpers every part of the page shares.

// How long a notice from the app (another surface answered, say) stays up.
const NOTICE_MS = 4000;

export const $ = (id) => document.getElementById(id);
export const body = document.body;

/** The choice buttons of the main step. */
export const mainButtons = () => Array.from(document.querySelectorAll('#actions-main button'));

/**
 * The buttons the input delay holds back: all but "Edit policy…" and the command's
 * show/hide, which never answer.
 */
export const allButtons = () =>
  Array.from(document.querySelectorAll('button:not(#edit-policy):not(#command-toggle):not(#command-back)'));

export const state = {
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

export function setText(id, text) {
  $(id).textContent = text == null ? '' : String(text);
}

/** A details row: shown with its value (and the value, or `title`, as tooltip) when there is one. */
export function row(id, value, title) {
  const shown = value != null && value !== '';
  $('row-' + id).hidden = !shown;
  setText(id, shown ? value : '');
  $(id).title = title || (shown ? String(value) : '');
}

export function showNotice(text) {
  const notice = $('notice');
  notice.textContent = text;
  notice.hidden = false;
  clearTimeout(state.noticeTimer);
  state.noticeTimer = setTimeout(() => { notice.hidden = true; }, NOTICE_MS);
}

export function showError(text) {
  const error = $('error');
  error.textContent = text || '';
  error.hidden = !text;
}
