// The welcome window's pure logic (tested with node --test ui/welcome/).

import { TEXT } from './text.js';

/** `path` with `~` for the home directory. */
export function homeRelative(path, home) {
  if (!home) return path;
  if (path === home) return '~';
  return path.startsWith(home + '/') ? '~' + path.slice(home.length) : path;
}

/** The rows to draw: each offered directory, checked when it is the current one or
 *  served already (a served one cannot be unchecked). */
export function rows(offered, home) {
  return offered.map((o) => ({
    dir: o.dir,
    shown: homeRelative(o.dir, home),
    source: TEXT.source[o.source] ?? o.source,
    served: o.served,
    checked: o.served || o.source === 'currentDir',
  }));
}

/** The directories "Done" adds: checked and not served yet. */
export function toAdd(rowsChecked) {
  return rowsChecked.filter((r) => r.checked && !r.served).map((r) => r.dir);
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
