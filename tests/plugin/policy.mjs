// Runs the real opencode-landstrip plugin's bash hook outside opencode and prints, as one
// JSON object on stdout, the command line it rewrote and the landstrip policy it wrote.
//
//   tsx policy.mjs --plugin-dir DIR --project DIR [--session ID] [--command CMD] [--keep]
//
// --keep leaves the policy file in place (the bash call is never finished, so the rewritten
// command line can still be run); the plugin's per-call HTTP proxy and trap server stop
// with this process either way.
//
// DIR is where scripts/setup.sh --test installed tests/plugin/package.json (.tools/plugin).
// The plugin reads the global sandbox.json from $HOME/.config/opencode (os.homedir(), so
// HOME, not XDG_CONFIG_HOME), writes its policy under $TMPDIR, and looks for a presenter's
// discovery file under $XDG_RUNTIME_DIR when given a session: the caller sets all three.
//
// Output: {"original", "command", "wrapped", "policyPath", "policy", "messages"}; policy is
// null when the plugin left the command alone (sandbox disabled). Exit 1 with a message on
// stderr when the hook throws (a rejected sandbox.json, say).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'plugin-dir': { type: 'string' },
    project: { type: 'string' },
    session: { type: 'string' },
    command: { type: 'string', default: 'true' },
    keep: { type: 'boolean', default: false },
  },
});
if (!values['plugin-dir'] || !values.project) {
  process.stderr.write('usage: policy.mjs --plugin-dir DIR --project DIR [--session ID] [--command CMD] [--keep]\n');
  process.exit(2);
}

// The plugin's own TypeScript entry point, loaded from the installed package so that its
// imports resolve inside that node_modules.
const entry = join(values['plugin-dir'], 'node_modules', 'opencode-landstrip', 'index.ts');
const { default: plugin } = await import(pathToFileURL(entry).href);

// Outside opencode there is no TUI or log service: a stub client records what the plugin
// would have shown, which helps explain a run where it did not wrap the command.
const messages = [];
const record = (kind) => async (request) => {
  messages.push({ kind, message: request?.body?.message ?? null });
  return {};
};
const client = { tui: { showToast: record('toast') }, app: { log: record('log') } };

const hooks = await plugin.server({ client, directory: values.project }, {});
const output = { args: { command: values.command, description: 'policy driver' } };
const input = { tool: 'bash', sessionID: values.session ?? '', callID: 'call_policy_driver' };

let result;
try {
  await hooks['tool.execute.before'](input, output);
  const command = output.args.command;
  const wrapped = command !== values.command;
  let policyPath = null;
  let policy = null;
  if (wrapped) {
    // The policy file is the argument after the first `-p` in the shell-quoted line.
    const match = command.match(/ '-p' '((?:[^']|'\\'')*)' /);
    if (!match) throw new Error(`no -p file in the rewritten command: ${command}`);
    policyPath = match[1].replaceAll("'\\''", "'");
    policy = JSON.parse(readFileSync(policyPath, 'utf-8'));
  }
  result = { original: values.command, command, wrapped, policyPath, policy, messages };
} catch (error) {
  process.stderr.write(`the plugin's tool.execute.before hook failed: ${error?.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  // Stops the per-call HTTP filter proxy and trap server so the process can exit; this also
  // removes the plugin's policy directory, which is why the policy is printed, not pointed to.
  if (!values.keep) await hooks.dispose?.();
}
if (result) process.stdout.write(JSON.stringify(result) + '\n');
// With --keep the proxy and trap server still listen: end here rather than wait on them.
if (values.keep) process.exit();
