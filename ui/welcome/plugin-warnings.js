// The welcome window's warning about policy files the user's opencode-landstrip rejects:
// one card, each file with its fields and the one command that removes each.

import { h } from '../shared/dom.js';
import { TEXT } from './text.js';

/** The `ctl` command that removes `field` from `file` (`{file: 'global'}` or a project's). */
export function removeCommand(file, field) {
  const which = file.file === 'global' ? '--global' : `--project '${file.dir.replaceAll("'", "'\\''")}'`;
  return `landstrip-tray ctl policy remove-field ${which} ${field}`;
}

/** The card, or null when nothing is said (`warnings`: `ops::plugin_warnings`). */
export function pluginWarnings(warnings) {
  if (!warnings?.length) return null;
  const text = TEXT.pluginWarnings;
  return h('section', { className: 'card warning', id: 'plugin-warnings', role: 'alert', 'aria-labelledby': 'plugin-warnings-title' },
    h('h2', { id: 'plugin-warnings-title' }, text.title),
    warnings.map((w) => h('div', { className: 'plugin-warning', 'data-file': w.shown },
      h('p', {}, h('code', {}, w.shown)),
      w.conflicts.map((c) => h('div', { 'data-conflict': c.field, 'data-rejected': String(c.rejected) },
        h('p', {}, c.rejected && c.plugin?.state === 'known'
          ? text.rejects(c.field, c.plugin.version)
          : text.mayReject(c.field)),
        h('pre', { className: 'command' }, h('code', {}, removeCommand(w.file, c.field))))))));
}
