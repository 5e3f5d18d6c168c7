//! Tauri commands: the thin layer the web front end calls (filled in by the dialog work).

use tauri::Wry;

/// Registers every command on the builder.
pub fn register(builder: tauri::Builder<Wry>) -> tauri::Builder<Wry> {
    builder
}
