//! The welcome window's commands: which directories to offer and the doctor check are the
//! core's (`first_run`, `landstrip`); these only call them. capabilities/welcome.json grants
//! these to the `welcome` window only.

use std::path::PathBuf;

use landstrip_tray_core::landstrip::{self, Doctor};
use landstrip_tray_core::lexical::AbsolutePath;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::first_run::{self, Offered};
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime, State};

use super::super::welcome::{Welcome, LABEL};

/// What the page shows first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeView {
    /// The directories offered, the current one first.
    offered: Vec<Offered>,
    /// The user's home, so the page can write `~/…`.
    home: String,
    /// Policy files holding fields the user's opencode-landstrip rejects (`ops::plugin_warnings`).
    plugin_warnings: Vec<landstrip_tray_core::surfaces::ops::PluginWarning>,
}

/// The directories to offer.
#[tauri::command]
pub async fn welcome_offered(
    welcome: State<'_, Welcome>,
    service: State<'_, Service>,
) -> Result<WelcomeView, String> {
    let sources = welcome.sources.clone();
    let served: Vec<PathBuf> = service.list().into_iter().map(|p| p.dir).collect();
    let home = service.home().display().to_string();
    let offered = super::super::blocking::on_blocking_pool(move || {
        Ok::<_, std::convert::Infallible>(first_run::offered(&sources, &served))
    })
    .await?;
    let plugin_warnings = {
        let service = (*service).clone();
        super::super::blocking::on_blocking_pool(move || {
            Ok::<_, std::convert::Infallible>(landstrip_tray_core::surfaces::ops::plugin_warnings(
                &service,
            ))
        })
        .await?
    };
    Ok(WelcomeView {
        offered,
        home,
        plugin_warnings,
    })
}

/// `landstrip doctor` with the landstrip the launcher would use.
#[tauri::command]
pub async fn welcome_doctor() -> Result<Doctor, String> {
    Ok(landstrip::doctor_from_env().await)
}

/// One directory's outcome.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The directory as asked.
    dir: String,
    /// Why it could not be served, if it could not.
    error: Option<String>,
}

/// Serves each directory from now on and at every start (`ctl add-project`'s operation).
#[tauri::command]
pub async fn welcome_add(
    service: State<'_, Service>,
    dirs: Vec<String>,
) -> Result<Vec<Added>, String> {
    let mut out = Vec::new();
    for dir in dirs {
        let error = match AbsolutePath::new(&dir) {
            Ok(path) => service
                .add_project(path.as_path(), true)
                .await
                .err()
                .map(|e| e.to_string()),
            Err(_) => Some(format!("{dir}: not a full path")),
        };
        out.push(Added { dir, error });
    }
    Ok(out)
}

/// "Done": closes the window (which writes the settings file, see [`remember`]).
#[tauri::command]
pub async fn welcome_done<R: Runtime>(app: AppHandle<R>) -> Result<(), String> {
    match app.get_webview_window(LABEL) {
        Some(window) => window.close().map_err(|e| e.to_string()),
        None => Ok(()),
    }
}
