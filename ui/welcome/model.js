// The welcome window's pure logic (tested with node --test ui/welcome/).

import { TEXT } from './text.js';

/** `path` with `~` for the home directory. */
export function homeRelative(path, home) {
  if (!home) return path;
  if (path === home) return '~';
  return path.startsWith(home + '/') ? '~' + path.slice(home.length) : path;
}

/** The rows to draw: each offered directory, checked when it was given with --project,
 *  is the current one or is served already (a served one cannot be unchecked). */
export function rows(offered, home) {
  return offered.map((o) => ({
    dir: o.dir,
    shown: homeRelative(o.dir, home),
    source: TEXT.source[o.source] ?? o.source,
    served: o.served,
    checked: o.served || o.source === 'given' || o.source === 'currentDir',
  }));
}

/** The directories "Done" adds: checked and not served yet. */
export function toAdd(rowsChecked) {
  return rowsChecked.filter((r) => r.checked && !r.served).map((r) => r.dir);
}

/** What the connect box says: a state, a line about the opencode found, and each set-up
 *  (the installed one's first) with its heading. `result` is welcome_connect's answer;
 *  undefined while it runs. */
export function connectView(result) {
  const installed = result?.installed;
  const connect = result?.connect?.length ? result.connect : TEXT.connectDefault;
  const state = installed?.state ?? 'checking';
  const found = state === 'found';
  const line = {
    found: () => TEXT.connectFound(installed.version),
    unknown: () => TEXT.connectUnknown(installed.message),
    missing: () => TEXT.connectMissing,
  }[state]?.() ?? TEXT.connectChecking;
  return {
    state,
    line,
    items: connect.map((c, i) => ({
      generation: c.generation,
      heading: found && i === 0 ? TEXT.connectYours(installed.version) : TEXT.connectFor(c.label),
      command: c.command,
      config: TEXT.connectConfig(c.config),
    })),
  };
}

/** What the doctor box says: a state, a headline, details and whether to show how to
 *  install landstrip. */
export function doctorView(result) {
  switch (result?.state) {
    case 'ok':
      return {
        state: 'ok',
        headline: TEXT.doctorOk(result.version, result.implementation),
        detail: TEXT.doctorBinary(result.binary),
        install: false,
      };
    case 'failed':
      return { state: 'failed', headline: TEXT.doctorFailed, detail: result.message, install: false };
    case 'missing':
      return { state: 'missing', headline: TEXT.doctorMissing, detail: result.reason, install: true };
    default:
      return { state: 'checking', headline: TEXT.doctorChecking, detail: '', install: false };
  }
}
