// Every string the prompt dialog's script writes, in one place (fixed labels: prompt.html).

export const TEXT = {
  documentTitle: (title) => `${title} — landstrip-tray`,
  // A remote machine's request: the sentence names the machine first.
  onHost: (host) => `On ${host}: `,
  subjectKind: { network: 'Address', read: 'Read', write: 'Write' },
  subjectLabel: (network, full) => `${network ? 'Address' : 'Path'}: ${full}`,
  // Between the parts of one detail: the program and its pid, a session's title and id.
  separator: ' · ',
  pid: (pid) => `pid ${pid}`,
  process: (program, pid) => `${program} · pid ${pid}`,
  sensitive: (location, what) =>
    `${location} holds ${what}. Deny unless you expected this request.`,
  // A request of a run after a secret: "This run read ~/.aws/credentials (AWS
  // credentials) 4 s ago." and, for a network request, what it may send.
  afterSecret: (path, what, ago, network) =>
    `This run read ${path} (${what}) ${ago}.` +
    (network
      ? ' This connection could send it out: deny unless you expected it.'
      : ' Check that this write is what you expected.'),
  // A number and its unit never part at a line's end.
  ago: (secs) => {
    if (secs < 60) return `${secs}\u00a0s ago`;
    if (secs < 3600) return `${Math.floor(secs / 60)}\u00a0min ago`;
    return `${Math.floor(secs / 3600)}\u00a0h ago`;
  },

  queue: (position, total) => `${position} of ${total}`,
  queueLabel: (position, total) => `Request ${position} of ${total} waiting`,
  bulkTitle: (scope, holder, others, network) =>
    `Allow ${scope} for ${holder}: answers this request and the ${others} others under it` +
    (network ? '' : '; sensitive files in it still ask'),

  // A choice's key, and the sentence a screen reader says for its button.
  defaultKey: (shortcut) => `${shortcut} ↵`,
  choiceLabel: (label, hint) => `${label.replace('…', '')}. ${hint}`,

  programOnly: (name) => `only ${name}`,
  programOnlyTitle: (program) => `Only requests of ${program} (R)`,

  // The sentence under the choices: "<b>Session</b> allows everything under <b>scope</b>
  // for holder (limits); nothing is saved. Sensitive files in it … still ask." (a sensitive
  // request is allowed only by an answer to itself).
  hint: {
    session: 'Session',
    allows: (network) => ` allows ${network ? '' : 'everything under '}`,
    rest: (holder, limits, network) =>
      ` for ${holder}${limits.length ? ` (${limits.join(', ')})` : ''}; nothing is saved.` +
      (network ? '' : ' Sensitive files in it (keys, .env, credentials) still ask.'),
  },

  chainArrow: '→ ',
  chainMore: (n) => `… ${n} more`,
  // The "Agent says" row for opencode 2, which keeps no description of a command: the
  // command as the agent wrote it, where it differs from the chain's.
  agentCommand: (command) => `runs ${command}`,

  empty: {
    title: 'No requests waiting',
    summary: 'This window closes by itself.',
  },

  // The second confirmation of a session grant of a sensitive path.
  confirm: {
    title: (scope) => `Allow ${scope} for this session?`,
    text: (program, operation, scope, holder, count) =>
      `${program} could then ${operation} anything under ${scope} ` +
      `without asking again, for ${holder}` +
      (count > 1 ? ` (this request and ${count - 1} more waiting).` : '.'),
    check: (location, what) => `Yes, allow access to ${location} (${what}).`,
    button: 'Allow for session',
  },

  // The scope step of a project or global answer, by the button that opened it.
  scope: {
    titles: {
      project: 'Allow for this project — add to its sandbox.json:',
      global: 'Allow for all projects — add to your global sandbox.json:',
      never: 'Never in this project — add to its sandbox.json:',
      never_global: 'Never in any project — add to your global sandbox.json:',
    },
    buttons: {
      project: 'Add to project & allow',
      global: 'Add globally & allow',
      never: 'Add to project & deny',
      never_global: 'Add globally & deny',
    },
    check: (location, what, global) =>
      `Yes, allow access to ${location} (${what}) in every run${global ? ' of every project' : ''}.`,
    option: (number, label) => `${number}  ${label}`,
    listed: 'listed',
    listedTitle: 'The file already has this entry',
    secrets: 'covers secrets',
    secretsTitle: (covers) => `Also covers ${covers.join(', ')}`,
    covers: (first, more) => `Also covers ${first.join(', ')}${more > 0 ? ` and ${more} more` : ''}.`,
    // A folder entry applies to every file in it: landstrip lets keys through too.
    names: (names) => ` Files in it named ${names.join(', ')} are allowed too; a session answer would still ask for them.`,
  },

  // The preview of the file's change, one line each.
  diff: {
    cannotEdit: (error) => `Cannot edit this file: ${error}`,
    more: (n) => `    … ${n} more`,
    entry: (entry) => `    ${JSON.stringify(entry)}`,
    added: (entry) => `  + ${JSON.stringify(entry)}`,
    alreadyListed: '    (already listed: the file stays as it is)',
    label: (array, file, entry) => `${array} in ${file} gains ${entry}`,
  },

  // What the previewed entry does from then on.
  note: {
    who: { project: 'every run of this project', global: 'every run of every project' },
    what: { read: 'reads', write: 'writes' },
    never: (what, root, who) =>
      `Denies this request now and, from then on, ${what} of ${root} in ${who} ` +
      'without asking, until the entry is removed from the file.',
    allow: (what, root, who) =>
      `Allows this request now and, from then on, ${what} under ` +
      `${root} in ${who} without asking, until the entry is removed from the file.`,
  },

  startFailed: (error) => `The dialog could not start: ${error}`,
};
