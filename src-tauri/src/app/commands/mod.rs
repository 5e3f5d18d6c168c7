//! Tauri commands: the thin layer the web front ends call, one module per window (each
//! window's capability grants it only its own). Each command hands over to the core (or
//! the window's state) and turns errors into the sentence the page shows. All are async so
//! that none runs on (and blocks) the main thread.

mod dialog;
pub mod settings;
mod welcome;

use tauri::Runtime;

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
        welcome::welcome_offered,
        welcome::welcome_doctor,
        welcome::welcome_connect,
        welcome::welcome_add,
        welcome::welcome_done
    ])
}

#[cfg(test)]
mod tests;
