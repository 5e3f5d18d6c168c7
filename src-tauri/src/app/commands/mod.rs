//! Tauri commands: the thin layer the web front ends call, one module per window (each
//! window's capability grants it only its own). Each operation is the core's operations
//! table's (`surfaces::operations`, which `ctl`'s server dispatches through too): a command
//! builds its request, runs it with [`operation!`] and returns the reply, or the window's
//! own state (the dialog's shown prompt, a window to raise). Errors are an [`IpcError`].
//! All are async so that none runs on (and blocks) the main thread.

/// Runs a request through the core's operations table and takes the value out of the
/// reply it names: `operation!(service, Request::Projects, Reply::Projects(p) => p)`.
macro_rules! operation {
    ($service:expr, $request:expr, $reply:pat => $value:expr) => {
        match landstrip_tray_core::surfaces::operations::run(&$service, $request).await? {
            $reply => Ok($value),
            other => Err($crate::app::commands::IpcError::unexpected(&other)),
        }
    };
}

mod canary;
mod dialog;
mod remote;
pub mod settings;
mod web;
mod welcome;

use landstrip_tray_core::surfaces::control::Reply;
use landstrip_tray_core::surfaces::operations::Failure;
use tauri::Runtime;

/// Why a command did nothing, as the page receives it: the sentence it shows (serialised
/// as that string, the shape the pages read), worded here from a typed reason.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    /// An operation of the table failed.
    #[error("{}", page_words(.0))]
    Failed(#[from] Failure),
    /// What the page sent cannot be used (a typed directory that is not a full path).
    #[error("{0}")]
    Input(String),
    /// The window's own state or the desktop refused (the prompt is no longer pending, a
    /// window is gone, `xdg-open` is missing).
    #[error("{0}")]
    Refused(String),
    /// The table answered with another operation's reply: a bug.
    #[error("internal error: unexpected {0} reply")]
    Unexpected(String),
}

impl IpcError {
    /// For a reply the command did not ask for.
    pub fn unexpected(reply: &Reply) -> Self {
        let kind = serde_json::to_value(reply)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned));
        Self::Unexpected(kind.unwrap_or_else(|| "unknown".to_owned()))
    }
}

impl serde::Serialize for IpcError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A failure as a page shows it: a refused policy change is said without `ctl`'s
/// "nothing was written:" (the page keeps the edit on screen, unsaved).
fn page_words(failure: &Failure) -> String {
    match failure {
        Failure::NotWritten(e) | Failure::NotUndone(e) => e.to_string(),
        other => other.to_string(),
    }
}

/// Registers every command on the builder. Keep build.rs's list in step: it makes a
/// permission per command; capabilities/prompt.json grants the dialog's to the `prompt`
/// window only, capabilities/settings.json the settings window's to `settings` only,
/// capabilities/welcome.json the welcome window's to `welcome` only.
pub fn register<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder.invoke_handler(tauri::generate_handler![
        dialog::dialog_ready,
        dialog::dialog_rendered,
        dialog::dialog_answer,
        dialog::dialog_preview,
        dialog::dialog_edit_policy,
        settings::settings_projects,
        settings::settings_add_project,
        settings::settings_remove_project,
        settings::settings_take_over,
        settings::settings_prefer,
        settings::settings_policy,
        settings::settings_change,
        settings::settings_check_entry,
        settings::settings_undo,
        settings::settings_change_all,
        settings::settings_sessions,
        settings::settings_learn,
        settings::settings_grants,
        settings::settings_revoke,
        settings::settings_activity,
        settings::settings_home,
        settings::settings_take_show,
        settings::settings_app_settings,
        settings::settings_change_app_setting,
        settings::settings_open_in_editor,
        settings::settings_explain_activity,
        settings::settings_activity_preview,
        settings::settings_journal,
        settings::settings_journal_undo,
        canary::settings_canaries,
        canary::settings_canary_add,
        canary::settings_canary_remove,
        canary::settings_incidents,
        canary::settings_incident_act,
        remote::settings_remotes,
        remote::settings_remote_add,
        remote::settings_remote_remove,
        web::settings_web,
        web::settings_web_on,
        web::settings_web_off,
        web::settings_web_pair,
        web::settings_web_devices,
        web::settings_web_revoke,
        welcome::welcome_offered,
        welcome::welcome_doctor,
        welcome::welcome_connect,
        welcome::welcome_add,
        welcome::welcome_done
    ])
}

#[cfg(test)]
mod tests;
