//! Giving memory back once the last window is gone (docs/ARCHITECTURE.md, "The settings
//! window"). A destroyed window's web process ends by itself, but WebKit keeps its network
//! process for the app's life once any webview existed (Tauri keeps the web context on
//! Linux, and WebKit does not end the process when the last webview goes): ~30 MB of an
//! idle tray app. With no webview left it is ended here; WebKit starts a new one with the
//! next webview.

use std::time::Duration;

use tauri::{AppHandle, Manager, Runtime};

/// How long after a window is destroyed the memory is handed back: WebKit lets go of its
/// side of the page (and the web process ends) a moment after the window itself.
const RELEASE_AFTER: Duration = Duration::from_secs(2);

/// WebKit's network process as /proc names it (`comm`: its first 15 bytes).
const NETWORK_PROCESS: &str = "WebKitNetworkPr";

/// A window was destroyed: after [`RELEASE_AFTER`], unless a webview exists again, ends
/// WebKit's network process and hands the C allocator's free memory back.
pub fn window_destroyed<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(RELEASE_AFTER).await;
        let found = tauri::async_runtime::spawn_blocking(|| {
            landstrip_tray_core::children_named(NETWORK_PROCESS)
        })
        .await;
        match found {
            Ok(Ok(children)) if !children.is_empty() => end_unless_webview(&app, children),
            Ok(Ok(_)) => tracing::debug!("no WebKit network process to end"),
            Ok(Err(e)) => tracing::warn!("cannot look for WebKit's network process: {e}"),
            Err(e) => tracing::warn!("cannot look for WebKit's network process: {e}"),
        }
        let released =
            tauri::async_runtime::spawn_blocking(landstrip_tray_core::release_free_memory).await;
        tracing::debug!(ok = released.is_ok(), "window closed: memory released");
    });
}

/// Signals `children` unless a webview exists: checked on the main thread, where windows
/// are made, so none can appear between the check and the signal.
fn end_unless_webview<R: Runtime>(app: &AppHandle<R>, children: Vec<std::os::fd::OwnedFd>) {
    let checking = app.clone();
    let queued = app.run_on_main_thread(move || {
        let open = checking.webview_windows();
        if !open.is_empty() {
            let labels: Vec<&String> = open.keys().collect();
            tracing::debug!(?labels, "a webview exists: WebKit's network process stays");
            return;
        }
        for child in &children {
            match landstrip_tray_core::pidfd_terminate(child) {
                Ok(()) => tracing::debug!("no webview left: WebKit's network process ended"),
                Err(e) => tracing::warn!("cannot end WebKit's network process: {e}"),
            }
        }
    });
    if let Err(e) = queued {
        tracing::warn!("cannot end WebKit's network process: {e}");
    }
}
