//! The settings window (label `settings`): the visual policy editor, plus projects,
//! session grants and the activity. Created on demand (tray menu, `ctl settings`, a second
//! start, or the first start when no tray host exists). Closing it hides it, and it is
//! destroyed after [`LINGER`] hidden, so an idle app holds no web process for it
//! (docs/ARCHITECTURE.md, "The settings window"), while opening it again soon after is a
//! show and a reload of the view's data, not a new web process. Its commands (in
//! `super::commands`) call only the core's `ops` and `Service`.
//!
//! A policy file changing on disk (whoever wrote it) is pushed to the page as
//! [`POLICY_EVENT`], so it reloads at once; the page keeps what is typed but not saved.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use landstrip_tray_core::serving::service::{Service, UiRequest};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};
use tokio::sync::broadcast::error::RecvError;

use super::idle::Linger;

/// The window's label.
pub const LABEL: &str = "settings";

/// The event telling the page a policy file changed on disk.
pub const POLICY_EVENT: &str = "settings:policy-changed";

/// The event telling the page the served projects or their state changed (another
/// presenter came or went, a preference was set from `ctl`).
pub const PROJECTS_EVENT: &str = "settings:projects-changed";

/// The event telling the page a remote machine's state or its waiting count changed, or
/// one was added or removed: the Remote machines view redraws its list (no polling).
pub const REMOTES_EVENT: &str = "settings:remotes-changed";

/// The event telling an open page which view to show (a second `ctl settings`, or an
/// open of the hidden window): the page reloads that view's data.
pub const SHOW_EVENT: &str = "settings:show";

/// The event telling the page it was hidden (closed, kept for [`LINGER`]).
pub const HIDDEN_EVENT: &str = "settings:hidden";

/// How long a closed (hidden) window is kept before it is destroyed: 5 s, or
/// `LANDSTRIP_TRAY_SETTINGS_LINGER_MS` milliseconds (a test knob). Short: a hidden window
/// keeps its web process (~100+ MB), and the idle figure is taken 10 s after a close
/// (docs/BENCHMARKS.md); it is there for the open that follows a close at once.
static LINGER: Linger = Linger {
    label: LABEL,
    keep: Duration::from_secs(5),
    knob: "LANDSTRIP_TRAY_SETTINGS_LINGER_MS",
    destroying: "settings window hidden for a while: destroying its webview",
    name: "the settings window",
};

/// Counts the window's closes and opens: a hidden window is destroyed only if nothing
/// happened to it since it was hidden.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// What [`POLICY_EVENT`] carries.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyChangedEvent {
    /// The file that changed.
    file: String,
    /// Its project; `None` for the global file.
    project: Option<String>,
    /// The file holds what this app's own last save left there (the page's or `ctl`'s):
    /// the page reloads without calling it news.
    ours: bool,
}

/// Which view to open on, and for the policy view which project.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Show {
    /// `projects`, `policy`, `grants`, `activity` or `general`.
    view: Option<String>,
    /// A project directory.
    project: Option<String>,
    /// On the policy view, the list to focus (`filesystem.allowWrite`, …).
    list: Option<String>,
}

/// The last view asked of a window that already existed: its page may not have listened
/// for [`SHOW_EVENT`] yet (it was still loading), so it takes this once it listens
/// (`settings_take_show`). Cleared when a new window is made (its URL says the view).
static MISSED_SHOW: std::sync::Mutex<Option<Show>> = std::sync::Mutex::new(None);

/// The view last asked of the open window, once (see [`MISSED_SHOW`]).
pub fn take_missed_show() -> Option<Show> {
    MISSED_SHOW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

fn set_missed_show(show: Option<Show>) {
    *MISSED_SHOW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = show;
}

/// Follows the UI requests (`ctl settings`, a second start) and the policy files.
pub fn start<R: Runtime>(app: &AppHandle<R>, service: &Service) {
    let mut requests = service.subscribe_ui();
    let app_for_requests = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            match requests.recv().await {
                Ok(UiRequest::Settings { view, project }) => {
                    let show = Show {
                        view,
                        project: project.map(|p| p.display().to_string()),
                        list: None,
                    };
                    open(&app_for_requests, show);
                }
                Ok(UiRequest::EditPolicy { project, list }) => {
                    let show = Show {
                        view: Some("policy".into()),
                        project: Some(project.display().to_string()),
                        list: Some(list.to_string()),
                    };
                    open(&app_for_requests, show);
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });

    let mut projects = service.subscribe();
    let projects_app = app.clone();
    tauri::async_runtime::spawn(async move {
        while projects.changed().await.is_ok() {
            if projects_app.get_webview_window(LABEL).is_some() {
                if let Err(e) = projects_app.emit_to(LABEL, PROJECTS_EVENT, ()) {
                    tracing::warn!("settings window: {e}");
                }
            }
        }
    });

    let mut remotes = service.remotes().subscribe();
    let remotes_app = app.clone();
    tauri::async_runtime::spawn(async move {
        while remotes.changed().await.is_ok() {
            if remotes_app.get_webview_window(LABEL).is_some() {
                if let Err(e) = remotes_app.emit_to(LABEL, REMOTES_EVENT, ()) {
                    tracing::warn!("settings window: {e}");
                }
            }
        }
    });

    let mut changes = service.subscribe_policy();
    let app = app.clone();
    let service = service.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let event = match changes.recv().await {
                Ok(changed) => {
                    let checking = service.clone();
                    let file = changed.file.clone();
                    let ours =
                        tauri::async_runtime::spawn_blocking(move || checking.is_own_write(&file))
                            .await
                            .unwrap_or(false);
                    PolicyChangedEvent {
                        file: changed.file.display().to_string(),
                        project: changed.project.map(|p| p.display().to_string()),
                        ours,
                    }
                }
                // Some were missed: the page reloads everything anyway.
                Err(RecvError::Lagged(_)) => PolicyChangedEvent {
                    file: String::new(),
                    project: None,
                    ours: false,
                },
                Err(RecvError::Closed) => return,
            };
            // No window, nobody to tell: nothing is kept for a closed window.
            if app.get_webview_window(LABEL).is_some() {
                if let Err(e) = app.emit_to(LABEL, POLICY_EVENT, &event) {
                    tracing::warn!("settings window: {e}");
                }
            }
        }
    });
}

/// Brings the settings window up on `show`'s view, creating it if it is not open.
pub fn open<R: Runtime>(app: &AppHandle<R>, show: Show) {
    open_with(app, show, true);
}

/// Opens the window on the projects unless it is open already (then it is left on
/// whatever view it shows): the first start without a tray host.
pub fn open_unless_open<R: Runtime>(app: &AppHandle<R>) {
    let show = Show {
        view: Some("projects".into()),
        project: None,
        list: None,
    };
    open_with(app, show, false);
}

fn open_with<R: Runtime>(app: &AppHandle<R>, show: Show, switch: bool) {
    let app = app.clone();
    // Windows are made on the main thread.
    let queued = app.clone().run_on_main_thread(move || {
        if let Some(window) = app.get_webview_window(LABEL) {
            // "Unless open": a window there, shown or closed by the user and lingering
            // hidden, is left as it is (re-showing a closed one would undo the close).
            if !switch {
                return;
            }
            // A pending destroy of the hidden window is called off.
            GENERATION.fetch_add(1, Ordering::SeqCst);
            set_missed_show(Some(show.clone()));
            if let Err(e) = app.emit_to(LABEL, SHOW_EVENT, &show) {
                tracing::warn!("settings window: {e}");
            }
            let _ = window.unminimize();
            let _ = window.show();
            let _ = window.set_focus();
            return;
        }
        set_missed_show(None);
        let url = format!("settings.html{}", query(&show));
        let built = WebviewWindowBuilder::new(&app, LABEL, WebviewUrl::App(url.into()))
            .title("landstrip-tray settings")
            .inner_size(980.0, 680.0)
            .min_inner_size(640.0, 420.0)
            .build();
        match built {
            Ok(window) => {
                let app = app.clone();
                window.on_window_event(move |event| {
                    if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                        api.prevent_close();
                        hide(&app);
                    }
                });
            }
            Err(e) => tracing::error!("cannot open the settings window: {e}"),
        }
    });
    if let Err(e) = queued {
        tracing::error!("cannot open the settings window: {e}");
    }
}

/// Closing: hides the window and destroys it after [`LINGER`] unless it was opened again
/// meanwhile (its memory then goes back: `super::idle`).
fn hide<R: Runtime>(app: &AppHandle<R>) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    let generation = GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    if let Err(e) = window.hide() {
        tracing::warn!("cannot hide the settings window: {e}");
        let _ = window.destroy();
        return;
    }
    if let Err(e) = app.emit_to(LABEL, HIDDEN_EVENT, ()) {
        tracing::warn!("settings window: {e}");
    }
    // Checked where opens run (the main thread): an open cannot slip in between.
    LINGER.destroy_later(app, move || GENERATION.load(Ordering::SeqCst) == generation);
}

/// Opens the window on a view from the tray menu.
pub fn open_view<R: Runtime>(app: &AppHandle<R>, view: &str) {
    tracing::info!("settings: opening the {view} view");
    open(
        app,
        Show {
            view: Some(view.to_owned()),
            project: None,
            list: None,
        },
    );
}

/// `?view=…&project=…`, percent-encoded, for the page's first view.
fn query(show: &Show) -> String {
    let mut parts = Vec::new();
    if let Some(view) = &show.view {
        parts.push(format!("view={}", encode(view)));
    }
    if let Some(project) = &show.project {
        parts.push(format!("project={}", encode(project)));
    }
    if let Some(list) = &show.list {
        parts.push(format!("list={}", encode(list)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_view_goes_in_the_query_encoded() {
        assert_eq!(query(&Show::default()), "");
        let show = Show {
            view: Some("policy".into()),
            project: Some("/home/a b/p&q".into()),
            list: Some("filesystem.allowWrite".into()),
        };
        assert_eq!(
            query(&show),
            "?view=policy&project=/home/a%20b/p%26q&list=filesystem.allowWrite"
        );
    }
}
