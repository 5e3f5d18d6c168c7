//! The prompt dialog's window through its life: created hidden when a run connects (or a
//! prompt comes), shown and hidden as the page acknowledges updates, and destroyed once
//! nothing has wanted it for [`LINGER`] (the prompt itself, its queue and its answers are
//! in `mod.rs`).

use std::sync::Arc;
use std::time::Duration;

use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindow, WebviewWindowBuilder};

use super::{refresh, Deferred, Dialog, LABEL};
use crate::app::idle::Linger;

/// How long a hidden dialog keeps its webview before it is destroyed to free memory: 30 s,
/// or `LANDSTRIP_TRAY_DIALOG_LINGER_MS` milliseconds (a test knob: tests/tests/dialog.rs
/// watches the window's whole life with a short linger).
static LINGER: Linger = Linger {
    label: LABEL,
    keep: Duration::from_secs(30),
    knob: "LANDSTRIP_TRAY_DIALOG_LINGER_MS",
    destroying: "prompt dialog idle: destroying its webview",
    name: "the prompt dialog",
};

/// How long a note about a vanished prompt stays on screen when nothing else waits.
const NOTICE_TIME: Duration = Duration::from_millis(1600);

/// How long the window stays after the page showed that nothing is left, so the frame
/// that answered the last prompt is on screen before the window unmaps.
const HIDE_GRACE: Duration = Duration::from_millis(150);

/// The window's size in logical pixels.
const SIZE: (f64, f64) = (520.0, 620.0);

/// Where the window is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Window {
    /// No window (never created, or destroyed after lingering).
    Absent,
    /// Being built; the page has not said it is ready.
    Loading,
    /// The page listens for updates.
    Ready,
}

/// Keeps the window ready while runs are connected: created (hidden) when the first one
/// connects, released [`LINGER`] after the last one went if nothing is pending.
pub(super) fn follow_runs<R: Runtime>(
    app: &AppHandle<R>,
    mut runs: tokio::sync::watch::Receiver<usize>,
) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let now = *runs.borrow_and_update();
            let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
                return;
            };
            let dialog = dialog.inner().clone();
            let was = std::mem::replace(&mut dialog.lock().runs, now);
            if now > 0 && was == 0 {
                tracing::debug!("a run connected: the dialog's window is made ready");
                dialog.lock().release += 1;
                ensure_window(&app);
            } else if now == 0 && was > 0 && !dialog.lock().visible {
                // A window on screen is released once it hides (`hide_later`).
                release_later(&app, &dialog);
            }
            if runs.changed().await.is_err() {
                return;
            }
        }
    });
}

/// Shows or hides the window for update `seq`, once (if it is still the latest).
pub(super) fn settle_window<R: Runtime>(app: &AppHandle<R>, dialog: &Dialog, seq: u64) {
    let (show, hide_after) = {
        let mut state = dialog.lock();
        if state.last.seq != seq || state.settled >= seq {
            return;
        }
        state.settled = seq;
        if state.last.update.view.is_some() {
            let show = !state.visible || state.raise;
            state.visible = true;
            state.raise = false;
            (show, None)
        } else if state.last.update.notice.is_some() {
            (false, Some(NOTICE_TIME))
        } else {
            (false, Some(HIDE_GRACE))
        }
    };
    if show {
        reveal(app);
    }
    if let Some(delay) = hide_after {
        hide_later(app, seq, delay);
    }
}

/// Creates the window (hidden) unless it exists; the page asks for its content when ready.
pub(super) fn ensure_window<R: Runtime>(app: &AppHandle<R>) {
    let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
        return;
    };
    {
        let mut state = dialog.lock();
        if state.window != Window::Absent {
            return;
        }
        state.window = Window::Loading;
        state.visible = false;
    }
    // Made on the main thread, where GTK runs: asked from a task, the build would hold
    // one of the async runtime's two workers for the whole of it (WebKit's process start,
    // hundreds of ms here), and a prompt's notification waits behind it.
    let app_main = app.clone();
    if let Err(e) = app.run_on_main_thread(move || create_window(&app_main)) {
        tracing::error!("cannot open the prompt dialog: {e}");
        dialog.lock().window = Window::Absent;
    }
}

/// The main-thread half of [`ensure_window`].
fn create_window<R: Runtime>(app: &AppHandle<R>) {
    let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
        return;
    };
    match build_window(app) {
        Ok(window) => {
            let app = app.clone();
            window.on_window_event(move |event| match event {
                tauri::WindowEvent::CloseRequested { api, .. } => {
                    // Closing is an answer: deny what is on screen; the window stays for
                    // the next one (or hides when nothing is left).
                    api.prevent_close();
                    let app = app.clone();
                    tauri::async_runtime::spawn(async move {
                        if let Some(dialog) = app.try_state::<Arc<Dialog>>() {
                            let dialog = dialog.inner().clone();
                            if dialog.lock().queue.shown().is_none() {
                                hide_now(&app);
                            }
                            dialog.deny_shown();
                        }
                    });
                }
                tauri::WindowEvent::Destroyed => {
                    let (waiting, runs) =
                        app.try_state::<Arc<Dialog>>()
                            .map_or((false, false), |dialog| {
                                let mut state = dialog.lock();
                                state.window = Window::Absent;
                                state.visible = false;
                                (state.last.update.view.is_some(), state.runs > 0)
                            });
                    // A prompt (or a run) that came while the old window was going needs
                    // a new one.
                    if waiting || runs {
                        let app = app.clone();
                        tauri::async_runtime::spawn(async move {
                            if waiting {
                                refresh(&app, None);
                            } else {
                                ensure_window(&app);
                            }
                        });
                    }
                }
                _ => {}
            });
        }
        Err(e) => {
            tracing::error!("cannot open the prompt dialog: {e}");
            dialog.lock().window = Window::Absent;
        }
    }
}

fn build_window<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App("prompt.html".into()))
        .title("landstrip-tray — a sandboxed program is asking")
        .inner_size(SIZE.0, SIZE.1)
        .resizable(false)
        .maximizable(false)
        .minimizable(false)
        .center()
        .always_on_top(true)
        .visible_on_all_workspaces(true)
        .visible(false)
        .build()
}

/// Whether GTK draws on Wayland: it does whenever `WAYLAND_DISPLAY` is set, unless
/// `GDK_BACKEND` names another backend first.
fn on_wayland() -> bool {
    std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty())
        && std::env::var("GDK_BACKEND").map_or(true, |b| b.trim_start().starts_with("wayland"))
}

/// Shows, raises and focuses the window.
fn reveal<R: Runtime>(app: &AppHandle<R>) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    tracing::debug!("dialog shown");
    // Wayland compositors do not let a window that is already on screen take the focus
    // without an activation token (GNOME Shell 43 marks it as wanting attention, sway
    // ignores the request), and GNOME 43's notifications send none; both focus a window
    // as it is mapped. So a dialog on screen without the focus is mapped again
    // (tests/tests/desktop_gnome.rs and desktop_sway.rs measure both).
    let unfocused = window.is_visible().unwrap_or(false) && !window.is_focused().unwrap_or(true);
    if unfocused && on_wayland() {
        tracing::debug!("dialog on screen without the focus: mapping it again (Wayland)");
        if let Err(e) = window.hide() {
            tracing::warn!("cannot hide the prompt dialog: {e}");
        }
    }
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_always_on_top(true))
        .and_then(|()| window.set_focus());
    if let Err(e) = shown {
        tracing::warn!("cannot show the prompt dialog: {e}");
    }
}

/// Hides the window after `delay` if update `seq` is still the latest, then releases it
/// (see [`release_later`]).
fn hide_later<R: Runtime>(app: &AppHandle<R>, seq: u64, delay: Duration) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
            return;
        };
        let dialog = dialog.inner().clone();
        if dialog.lock().last.seq != seq {
            return;
        }
        hide_now(&app);
        release_later(&app, &dialog);
    });
}

/// Destroys the window after [`LINGER`] if by then it is still hidden, nothing is pending,
/// no run is connected and nothing wanted it meanwhile.
fn release_later<R: Runtime>(app: &AppHandle<R>, dialog: &Arc<Dialog>) {
    if dialog.automation {
        return;
    }
    let ticket = dialog.lock().release;
    let dialog = dialog.clone();
    LINGER.destroy_later(app, move || {
        let mut state = dialog.lock();
        let idle = state.release == ticket
            && !state.visible
            && state.runs == 0
            && state.last.update.view.is_none()
            && state.window != Window::Absent;
        if idle {
            state.window = Window::Absent;
        }
        idle
    });
}

fn hide_now<R: Runtime>(app: &AppHandle<R>) {
    let deferred = app
        .try_state::<Arc<Dialog>>()
        .map_or_else(Vec::new, |dialog| {
            let mut state = dialog.lock();
            state.visible = false;
            std::mem::take(&mut state.deferred)
        });
    if let Some(window) = app.get_webview_window(LABEL) {
        // The linger is counted from here (the tests read this line's time).
        tracing::debug!("prompt dialog hidden");
        if let Err(e) = window.hide() {
            tracing::warn!("cannot hide the prompt dialog: {e}");
        }
    }
    for Deferred(then) in deferred {
        then();
    }
}
