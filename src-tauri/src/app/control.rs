//! The control socket's server side: bound in the running app, served by the core. The
//! client (`ctl`) lives in `crate::cli::ctl`, outside the Tauri glue.

use std::path::Path;
use std::sync::Arc;

use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{ControlServer, SocketFile};
use tauri::{AppHandle, Manager, Runtime};

/// The bound socket file, kept in the app's state to remove it at exit.
struct ControlSocket(Arc<SocketFile>);

/// Serves the control socket for the running instance. Without it the app still serves
/// its projects, so a failure is logged rather than fatal.
pub fn serve<R: Runtime>(app: &AppHandle<R>, service: &Service, socket: &Path) {
    let bound = tauri::async_runtime::block_on(async { ControlServer::bind(socket) });
    match bound {
        Ok(server) => {
            app.manage(ControlSocket(server.socket_file()));
            tauri::async_runtime::spawn(server.serve(service.clone()));
            tracing::info!("control socket at {}", socket.display());
        }
        Err(e) => tracing::error!(
            "control socket disabled: {e} (`landstrip-tray ctl` and a second start will not reach this instance)"
        ),
    }
}

/// Removes the control socket at exit (if it is still ours).
pub fn remove_socket<R: Runtime>(app: &AppHandle<R>) {
    if let Some(socket) = app.try_state::<ControlSocket>() {
        socket.0.remove();
    }
}
