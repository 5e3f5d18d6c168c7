//! The settings window's commands: thin, each calling only the core's `ops` or `Service`
//! and turning its error into the sentence the page shows. Whatever reads or writes files
//! runs on the blocking pool; `Service::add_project`/`remove_project` are async and do
//! their own file work there. capabilities/settings.json grants these to the `settings`
//! window only.

use std::path::PathBuf;

use landstrip_tray_core::activity::{ActivityEntry, ActivityFilter, ActivityPage};
use landstrip_tray_core::grants::Grant;
use landstrip_tray_core::ops::{self, AnsweringEntry, Changed, PolicyFile};
use landstrip_tray_core::policy::change::PolicyChange;
use landstrip_tray_core::policy::preview::GrantPreview;
use landstrip_tray_core::policy::view::PolicyView;
use landstrip_tray_core::scope::PolicyTarget;
use landstrip_tray_core::service::{ProjectInfo, Service};
use tauri::State;

/// Runs blocking core work on the blocking pool; its error becomes a sentence.
async fn blocking<T, E>(
    service: &State<'_, Service>,
    work: impl FnOnce(&Service) -> Result<T, E> + Send + 'static,
) -> Result<T, String>
where
    T: Send + 'static,
    E: std::fmt::Display,
{
    let service = service.inner().clone();
    tauri::async_runtime::spawn_blocking(move || work(&service).map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("internal error: {e}"))?
}

/// A directory typed by the user: absolute, or nothing is done.
fn typed_dir(dir: &str) -> Result<PathBuf, String> {
    let dir = PathBuf::from(dir.trim());
    if dir.as_os_str().is_empty() {
        return Err("Type a project directory first.".into());
    }
    if !dir.is_absolute() {
        return Err(format!(
            "{}: type the full path (starting with /).",
            dir.display()
        ));
    }
    Ok(dir)
}

/// The served projects and their state.
#[tauri::command]
pub async fn settings_projects(service: State<'_, Service>) -> Result<Vec<ProjectInfo>, String> {
    Ok(service.list())
}

/// Serves a project from now on, and at every start.
#[tauri::command]
pub async fn settings_add_project(
    service: State<'_, Service>,
    dir: String,
) -> Result<ProjectInfo, String> {
    let dir = typed_dir(&dir)?;
    service
        .add_project(&dir, true)
        .await
        .map_err(|e| e.to_string())
}

/// Stops serving a project, also at the next start.
#[tauri::command]
pub async fn settings_remove_project(
    service: State<'_, Service>,
    dir: String,
) -> Result<(), String> {
    let dir = typed_dir(&dir)?;
    service
        .remove_project(&dir, true)
        .await
        .map_err(|e| e.to_string())
}

/// Takes a project's discovery file over from another presenter.
#[tauri::command]
pub async fn settings_take_over(
    service: State<'_, Service>,
    dir: String,
) -> Result<ProjectInfo, String> {
    let dir = typed_dir(&dir)?;
    blocking(&service, move |s| s.take_over(&dir)).await
}

/// Both policy files of a project and the effective result.
#[tauri::command]
pub async fn settings_policy(
    service: State<'_, Service>,
    dir: String,
) -> Result<PolicyView, String> {
    let dir = typed_dir(&dir)?;
    blocking(&service, move |s| ops::show_policy(s, &dir)).await
}

/// One change to exactly one policy file.
#[tauri::command]
pub async fn settings_change(
    service: State<'_, Service>,
    file: PolicyFile,
    change: PolicyChange,
) -> Result<Changed, String> {
    blocking(&service, move |s| ops::change_policy(s, &file, &change)).await
}

/// The live session grants.
#[tauri::command]
pub async fn settings_grants(service: State<'_, Service>) -> Result<Vec<Grant>, String> {
    Ok(ops::grants(&service))
}

/// Revokes a session grant.
#[tauri::command]
pub async fn settings_revoke(service: State<'_, Service>, id: u64) -> Result<(), String> {
    ops::revoke(&service, id).map_err(|e| e.to_string())
}

/// The activity, filtered: the newest rows (at most the filter's limit), newest first,
/// and how many matched.
#[tauri::command]
pub async fn settings_activity(
    service: State<'_, Service>,
    filter: ActivityFilter,
) -> Result<ActivityPage, String> {
    blocking(&service, move |s| ops::activity_page(s, &filter)).await
}

/// The policy entry that answered a logged request, if one still does.
#[tauri::command]
pub async fn settings_explain_activity(
    service: State<'_, Service>,
    entry: ActivityEntry,
) -> Result<Option<AnsweringEntry>, String> {
    blocking(&service, move |s| ops::explain_activity(s, &entry)).await
}

/// The entry "make this a grant" would write for a logged request into `target`.
#[tauri::command]
pub async fn settings_activity_preview(
    service: State<'_, Service>,
    entry: ActivityEntry,
    target: PolicyTarget,
) -> Result<GrantPreview, String> {
    blocking(&service, move |s| {
        ops::activity_grant_preview(s, &entry, target)
    })
    .await
}
