fn main() {
    // Declaring the app's commands makes Tauri check each call against the capabilities:
    // a window may only call what capabilities/*.json grant it (the dialog commands are
    // granted to the `prompt` window only, the settings commands to `settings`). Keep in step with app/commands/mod.rs.
    let commands = tauri_build::AppManifest::new().commands(&[
        "dialog_ready",
        "dialog_rendered",
        "dialog_answer",
        "dialog_preview",
        "dialog_edit_policy",
        "settings_projects",
        "settings_add_project",
        "settings_remove_project",
        "settings_take_over",
        "settings_prefer",
        "settings_policy",
        "settings_change",
        "settings_check_entry",
        "settings_undo",
        "settings_change_all",
        "settings_sessions",
        "settings_learn",
        "settings_grants",
        "settings_revoke",
        "settings_activity",
        "settings_home",
        "settings_take_show",
        "settings_app_settings",
        "settings_change_app_setting",
        "settings_open_in_editor",
        "settings_explain_activity",
        "settings_activity_preview",
        "settings_journal",
        "settings_journal_undo",
        "settings_canaries",
        "settings_canary_add",
        "settings_canary_remove",
        "settings_incidents",
        "settings_incident_act",
        "welcome_offered",
        "welcome_doctor",
        "welcome_connect",
        "welcome_add",
        "welcome_done",
    ]);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(commands))
        .expect("tauri-build");
}
