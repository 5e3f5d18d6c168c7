//! Giving memory back once the last window is gone (docs/ARCHITECTURE.md, "The settings
//! window"). A destroyed window's web process ends by itself, but WebKit keeps its network
//! process for the app's life once any webview existed (Tauri keeps the web context on
//! Linux, and WebKit does not end the process when the last webview goes): ~30 MB of an
//! idle tray app. With no webview left it is ended here; WebKit starts a new one with the
//! next webview.
//!
//! Before that, a window that was closed or went idle is kept hidden for a while
//! ([`Linger`]: the prompt dialog and the settings window), so that an open soon after is
//! a show rather than a new web process, and then destroyed.

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

/// A hidden window kept for a while, then destroyed (the prompt dialog's and the settings
/// window's "linger").
pub struct Linger {
    /// The window's label.
    pub label: &'static str,
    /// How long it is kept hidden…
    pub keep: Duration,
    /// …unless this variable says otherwise, in milliseconds (a test knob).
    pub knob: &'static str,
    /// What the log says as it is destroyed (tests read it).
    pub destroying: &'static str,
    /// The window in a warning: "cannot close {name}".
    pub name: &'static str,
}

impl Linger {
    /// How long the window is kept hidden: [`Linger::keep`] or the knob's milliseconds.
    pub fn duration(&self) -> Duration {
        std::env::var(self.knob)
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(self.keep, Duration::from_millis)
    }

    /// After [`Linger::duration`], destroys the window if `unwanted` says nothing wanted it
    /// meanwhile. Asked on the main thread, where windows are made and opened: none can be
    /// wanted again between the answer and the destroy.
    pub fn destroy_later<R: Runtime>(
        &'static self,
        app: &AppHandle<R>,
        unwanted: impl FnOnce() -> bool + Send + 'static,
    ) {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(self.duration()).await;
            let destroying = app.clone();
            let queued = app.run_on_main_thread(move || {
                if !unwanted() {
                    return;
                }
                if let Some(window) = destroying.get_webview_window(self.label) {
                    tracing::debug!("{}", self.destroying);
                    if let Err(e) = window.destroy() {
                        tracing::warn!("cannot close {}: {e}", self.name);
                    }
                }
            });
            if let Err(e) = queued {
                tracing::warn!("cannot close {}: {e}", self.name);
            }
        });
    }
}
