//! The settings window (label `settings`): the visual policy editor, plus projects,
//! session grants and the activity. Created on demand (tray menu, `ctl settings`, a second
//! start, or the first start when no tray host exists) and destroyed when closed, so an
//! idle app holds no web process for it (docs/ARCHITECTURE.md, "Layout"). Its commands
//! (in `super::commands`) call only the core's `ops` and `Service`.
//!
//! A policy file changing on disk (whoever wrote it) is pushed to the page as
//! [`POLICY_EVENT`], so it reloads at once; the page keeps what is typed but not saved.

use landstrip_tray_core::service::{Service, UiRequest};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};
use tokio::sync::broadcast::error::RecvError;

/// The window's label.
pub const LABEL: &str = "settings";

/// The event telling the page a policy file changed on disk.
pub const POLICY_EVENT: &str = "settings:policy-changed";

/// The event telling the page the served projects or their state changed (another
/// presenter came or went, a preference was set from `ctl`).
pub const PROJECTS_EVENT: &str = "settings:projects-changed";

/// The event telling an open page which view to show (a second `ctl settings`).
pub const SHOW_EVENT: &str = "settings:show";

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
            if !switch {
                return;
            }
            if let Err(e) = app.emit_to(LABEL, SHOW_EVENT, &show) {
                tracing::warn!("settings window: {e}");
            }
            let _ = window.unminimize();
            let _ = window.show();
            let _ = window.set_focus();
            return;
        }
        let url = format!("settings.html{}", query(&show));
        let built = WebviewWindowBuilder::new(&app, LABEL, WebviewUrl::App(url.into()))
            .title("landstrip-tray settings")
            .inner_size(980.0, 680.0)
            .min_inner_size(640.0, 420.0)
            .build();
        match built {
            Ok(window) => window.on_window_event(|event| {
                if let tauri::WindowEvent::Destroyed = event {
                    release_after_close();
                }
            }),
            Err(e) => tracing::error!("cannot open the settings window: {e}"),
        }
    });
    if let Err(e) = queued {
        tracing::error!("cannot open the settings window: {e}");
    }
}

/// How long after the window is destroyed its memory is handed back: WebKit lets go of
/// its side of the page a moment after the window itself.
const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Hands what the closed window freed back to the system, so idle memory comes back down
/// (docs/ARCHITECTURE.md, "The settings window").
fn release_after_close() {
    tauri::async_runtime::spawn(async {
        tokio::time::sleep(RELEASE_AFTER).await;
        let released =
            tauri::async_runtime::spawn_blocking(landstrip_tray_core::release_free_memory).await;
        tracing::debug!(
            ok = released.is_ok(),
            "settings window closed: memory released"
        );
    });
}

/// Opens the window on a view from the tray menu.
pub fn open_view<R: Runtime>(app: &AppHandle<R>, view: &str) {
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
