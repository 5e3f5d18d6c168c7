// The Tauri IPC, without the global API object (withGlobalTauri is off).

const ipc = window.__TAURI_INTERNALS__;

/** Calls a command; rejects with the sentence the command returned. */
export const invoke = (cmd, args = {}) => ipc.invoke(cmd, args);

/** Listens for an app event sent to this window. */
export const listen = (event, handler) =>
  invoke('plugin:event|listen', {
    event,
    target: { kind: 'Any' },
    handler: ipc.transformCallback(handler),
  });
