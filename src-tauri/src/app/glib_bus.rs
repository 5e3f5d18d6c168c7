//! GLib's shared session-bus connection, which GTK, tao and libayatana-appindicator (the
//! tray icon) use, is made not to end the app when the bus goes away.
//!
//! GLib gives that connection "exit on close": when the session bus disappears it raises
//! SIGTERM in the process, and the app would quit (cleanly, denying every held request)
//! although nothing it serves needs the bus. Turned off here, the app carries on: requests
//! still reach the dialog and `ctl`, and notifications use the bus again once it is back
//! (docs/ARCHITECTURE.md, "The desktop"). The tray icon registered through the old
//! connection is not made again on a new bus; a new start of the app makes it.

use std::ffi::{c_int, c_void};

/// `G_BUS_TYPE_SESSION`.
const G_BUS_TYPE_SESSION: c_int = 2;

#[link(name = "gio-2.0")]
extern "C" {
    fn g_bus_get_sync(
        bus_type: c_int,
        cancellable: *mut c_void,
        error: *mut *mut c_void,
    ) -> *mut c_void;
    fn g_dbus_connection_set_exit_on_close(connection: *mut c_void, exit_on_close: c_int);
}

/// Turns "exit on close" off on GLib's shared session-bus connection (made now if nobody
/// made it yet). Its reference is kept for the app's life, so every later user gets this
/// same connection, not a new one with the default back. Without a session bus, nothing.
#[allow(unsafe_code)]
pub fn survive_the_bus_going_away() {
    // SAFETY: both are GIO's documented, thread-safe calls: a NULL cancellable and a NULL
    // error are allowed (the error is then dropped), and the connection returned is a
    // GDBusConnection owned by us (one reference, never released) or NULL.
    unsafe {
        let connection = g_bus_get_sync(
            G_BUS_TYPE_SESSION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        if connection.is_null() {
            tracing::debug!("GLib has no session bus connection");
            return;
        }
        g_dbus_connection_set_exit_on_close(connection, 0);
    }
}
