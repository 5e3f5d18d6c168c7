// Every string the welcome window shows.

export const TEXT = {
  title: 'Welcome to landstrip-tray',
  lead: [
    'landstrip runs commands in a sandbox. When a sandboxed command tries to write or connect somewhere its policy does not allow, landstrip holds it and asks; landstrip-tray is who it asks.',
    'You get a notification and a small dialog: allow once, for the session, or for good (written into the project’s or the global sandbox.json), or deny. What the policy already allows is answered without asking.',
  ],
  projectsTitle: 'Projects to serve',
  projectsHint: 'Each project you choose gets its own question socket, from now on and at every start. You can change the list later in Settings → Projects, or with landstrip-tray ctl add-project DIR.',
  projectsLoading: 'Looking for projects…',
  projectsNone: 'No project found here or among recently used ones. Add one later in Settings → Projects.',
  projectsFailed: (message) => `Could not look for projects: ${message}`,
  source: {
    given: 'given with --project',
    currentDir: 'started here',
    presenter: 'open in opencode now',
    activity: 'used before',
    opencode: 'an opencode project',
  },
  alreadyServed: 'already served',
  projectsList: 'Project directories',
  doctorTitle: 'Is landstrip working?',
  doctorChecking: 'Running landstrip doctor…',
  doctorOk: (version, implementation) =>
    `landstrip ${version || ''} works here`.replace('  ', ' ') +
    (implementation ? ` (${implementation}).` : '.'),
  doctorFailed: 'landstrip is installed, but its check failed:',
  doctorMissing: 'landstrip was not found.',
  doctorInstall: 'Install it from npm:',
  installCommand: 'npm install -g @landstrip/landstrip-linux-x64',
  installAfter: 'then set LANDSTRIP to $(npm root -g)/@landstrip/landstrip-linux-x64/bin/landstrip, or link that file into a directory on your PATH, and check again.',
  doctorBinary: (path) => `Checked ${path}`,
  doctorAgain: 'Check again',
  pluginTitle: 'Connect opencode',
  pluginIntro: 'opencode runs its commands through landstrip with the opencode-landstrip plugin. Add it once; opencode 1.x and opencode 2 add it differently.',
  connectChecking: 'Looking for opencode…',
  connectFound: (version) => `opencode ${version} is installed here.`,
  connectUnknown: (message) => `opencode is installed, but its version could not be read (${message}).`,
  connectMissing: 'opencode was not found on PATH.',
  connectFor: (label) => `For ${label}:`,
  connectYours: (version) => `For your opencode ${version}:`,
  connectConfig: (config) => `or add ${config} to opencode.json`,
  // Until the app says which opencode is installed (and if it cannot): both, 1.x first,
  // the one the npm registry serves today. The same words as the core's opencode_cli.rs.
  connectDefault: [
    { generation: 'v1', label: 'opencode 1.x', command: 'opencode plugin opencode-landstrip@0.19.1', config: '"plugin": ["opencode-landstrip@0.19.1"]' },
    { generation: 'v2', label: 'opencode 2', command: 'opencode plugin install opencode-landstrip', config: '"plugins": ["opencode-landstrip"]' },
  ],
  pluginAfter: 'Then start opencode in a project you serve here: its questions come to this app.',
  tuiTitle: 'When opencode’s own terminal prompts hold a project',
  tuiText: 'The plugin can ask in opencode’s terminal instead. Choose where a project’s prompts appear in Settings → Projects (“Prompts appear: here / terminal”), or from a shell:',
  tuiCommand: 'landstrip-tray ctl prefer DIR here',
  done: 'Done',
  adding: 'Adding…',
  added: (n) => (n === 1 ? 'Serving 1 project.' : `Serving ${n} projects.`),
  addFailed: 'Some projects could not be added; uncheck them or try again.',
  failed: (message) => `Failed: ${message}`,
  pluginWarnings: {
    title: 'A policy file your opencode-landstrip rejects',
    rejects: (field, version) =>
      `This file uses ${field}, which your opencode-landstrip (${version}) rejects: every sandboxed command will fail until you remove it or update the plugin. To remove it:`,
    mayReject: (field) =>
      `This file uses ${field}: if your opencode-landstrip is older than 0.19.9 it rejects ${field}, and every sandboxed command fails until you remove it or update the plugin. To remove it:`,
  },
};
