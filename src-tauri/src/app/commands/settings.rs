//! The settings window's commands: each builds its request for the core's operations table
//! (`surfaces::operations`, the one `ctl` goes through too) and returns the reply; the
//! table does file work on the blocking pool. capabilities/settings.json grants these to
//! the `settings` window only.

use std::path::PathBuf;

use landstrip_tray_core::activity::{ActivityEntry, ActivityFilter};
use landstrip_tray_core::decision::grants::Grant;
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::journal::{JournalItem, UndoOutcome, UndoTarget};
use landstrip_tray_core::lexical::{AbsolutePath, RelativePath};
use landstrip_tray_core::policy::change::{ListField, PolicyChange};
use landstrip_tray_core::policy::view::PolicyView;
use landstrip_tray_core::serving::service::{ProjectInfo, PromptsGo, Service};
use landstrip_tray_core::surfaces::activity_rows::ActivityPage;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::ops::{
    self, AnsweringEntry, AppSettingChange, AppSettingChanged, AppSettingsView, Changed,
    EntryCheck, LearnRequest, LearnReview, PolicyFile, SessionSummary, Undone,
};
use landstrip_tray_core::surfaces::preview::GrantPreview;
use tauri::State;

use super::IpcError;

/// A directory typed by the user: absolute, or nothing is done.
fn typed_dir(dir: &str) -> Result<PathBuf, IpcError> {
    let dir = dir.trim();
    if dir.is_empty() {
        return Err(IpcError::Input("Type a project directory first.".into()));
    }
    AbsolutePath::new(dir)
        .map(AbsolutePath::into_path_buf)
        .map_err(|RelativePath(dir)| {
            IpcError::Input(format!(
                "{}: type the full path (starting with /).",
                dir.display()
            ))
        })
}

/// The served projects and their state.
#[tauri::command]
pub async fn settings_projects(service: State<'_, Service>) -> Result<Vec<ProjectInfo>, IpcError> {
    operation!(service, Request::Projects, Reply::Projects(projects) => projects)
}

/// Serves a project from now on, and at every start.
#[tauri::command]
pub async fn settings_add_project(
    service: State<'_, Service>,
    dir: String,
) -> Result<ProjectInfo, IpcError> {
    let dir = typed_dir(&dir)?;
    let request = Request::AddProject { dir, persist: true };
    operation!(service, request, Reply::Project(project) => project)
}

/// Stops serving a project, also at the next start.
#[tauri::command]
pub async fn settings_remove_project(
    service: State<'_, Service>,
    dir: String,
) -> Result<(), IpcError> {
    let dir = typed_dir(&dir)?;
    let request = Request::RemoveProject { dir, persist: true };
    operation!(service, request, Reply::Removed(_) => ())
}

/// Takes a project's discovery file over from another presenter.
#[tauri::command]
pub async fn settings_take_over(
    service: State<'_, Service>,
    dir: String,
) -> Result<ProjectInfo, IpcError> {
    let dir = typed_dir(&dir)?;
    operation!(service, Request::TakeOver { dir }, Reply::Project(project) => project)
}

/// Sets where a project's prompts go while opencode's terminal UI runs (here | terminal).
#[tauri::command]
pub async fn settings_prefer(
    service: State<'_, Service>,
    dir: String,
    prompts: PromptsGo,
) -> Result<ProjectInfo, IpcError> {
    let dir = typed_dir(&dir)?;
    let request = Request::Prefer { dir, prompts };
    operation!(service, request, Reply::Project(project) => project)
}

/// Both policy files of a project and the effective result.
#[tauri::command]
pub async fn settings_policy(
    service: State<'_, Service>,
    dir: String,
) -> Result<PolicyView, IpcError> {
    let dir = typed_dir(&dir)?;
    operation!(service, Request::Policy { dir }, Reply::Policy(view) => *view)
}

/// One change to exactly one policy file; an entry giving very broad access only with
/// `allowBroad` (the user pressed "Save anyway").
#[tauri::command]
pub async fn settings_change(
    service: State<'_, Service>,
    file: PolicyFile,
    change: PolicyChange,
    allow_broad: Option<bool>,
) -> Result<Changed, IpcError> {
    let request = Request::ChangePolicy {
        file,
        change,
        allow_broad: allow_broad.unwrap_or(false),
    };
    operation!(service, request, Reply::PolicyChanged(changed) => changed)
}

/// An entry being typed, checked as it would be saved (nothing is written): what it
/// means, whether it is broad, redundant or a duplicate, and why it is invalid.
#[tauri::command]
pub async fn settings_check_entry(
    service: State<'_, Service>,
    file: PolicyFile,
    project: Option<String>,
    list: ListField,
    entry: String,
    replacing: Option<String>,
) -> Result<EntryCheck, IpcError> {
    let project = project.map(|dir| typed_dir(&dir)).transpose()?;
    let request = Request::CheckEntry {
        file,
        project,
        list,
        entry,
        replacing,
    };
    operation!(service, request, Reply::EntryChecked(check) => check)
}

/// Undoes the last policy save, if the file still holds what it wrote.
#[tauri::command]
pub async fn settings_undo(service: State<'_, Service>) -> Result<Undone, IpcError> {
    operation!(service, Request::UndoPolicy, Reply::PolicyUndone(undone) => undone)
}

/// Several changes to one policy file, in one write (nothing written if one fails).
#[tauri::command]
pub async fn settings_change_all(
    service: State<'_, Service>,
    file: PolicyFile,
    changes: Vec<PolicyChange>,
) -> Result<Changed, IpcError> {
    let request = Request::ChangePolicyAll {
        file,
        changes,
        allow_broad: false,
    };
    operation!(service, request, Reply::PolicyChanged(changed) => changed)
}

/// The sessions seen in a project's activity, newest first.
#[tauri::command]
pub async fn settings_sessions(
    service: State<'_, Service>,
    dir: String,
) -> Result<Vec<SessionSummary>, IpcError> {
    let dir = typed_dir(&dir)?;
    operation!(service, Request::Sessions { dir }, Reply::Sessions(sessions) => sessions)
}

/// The entries the answered prompts of a session or time range suggest for a file.
#[tauri::command]
pub async fn settings_learn(
    service: State<'_, Service>,
    dir: String,
    request: LearnRequest,
) -> Result<LearnReview, IpcError> {
    let dir = typed_dir(&dir)?;
    let request = Request::Learn {
        dir,
        learn: request,
        save: false,
    };
    operation!(service, request, Reply::Learned { review, .. } => review)
}

/// The live session grants.
#[tauri::command]
pub async fn settings_grants(service: State<'_, Service>) -> Result<Vec<Grant>, IpcError> {
    operation!(service, Request::Grants, Reply::Grants(grants) => grants)
}

/// Revokes a session grant.
#[tauri::command]
pub async fn settings_revoke(service: State<'_, Service>, id: u64) -> Result<(), IpcError> {
    operation!(service, Request::Revoke { id }, Reply::Revoked(_) => ())
}

/// The activity, filtered: the newest rows (at most the filter's limit), newest first,
/// and how many matched.
#[tauri::command]
pub async fn settings_activity(
    service: State<'_, Service>,
    filter: ActivityFilter,
) -> Result<ActivityPage, IpcError> {
    let request = Request::ActivityPage { filter };
    operation!(service, request, Reply::ActivityPage(page) => page)
}

/// The policy entry that answered a logged request, if one still does.
#[tauri::command]
pub async fn settings_explain_activity(
    service: State<'_, Service>,
    entry: ActivityEntry,
) -> Result<Option<AnsweringEntry>, IpcError> {
    let request = Request::ExplainActivity { entry };
    operation!(service, request, Reply::ActivityExplained(answering) => answering)
}

/// The entry "make this a grant" would write for a logged request into `target`.
#[tauri::command]
pub async fn settings_activity_preview(
    service: State<'_, Service>,
    entry: ActivityEntry,
    target: PolicyTarget,
) -> Result<GrantPreview, IpcError> {
    let request = Request::ActivityPreview { entry, target };
    operation!(service, request, Reply::ActivityPreview(preview) => preview)
}

/// The write journal: the writes a person (or a session grant) allowed, oldest first.
#[tauri::command]
pub async fn settings_journal(service: State<'_, Service>) -> Result<Vec<JournalItem>, IpcError> {
    operation!(service, Request::Journal { session: None }, Reply::Journal(items) => items)
}

/// Undoes journaled writes (one, or a session's), or with `dry_run` previews what that
/// would do; never forced: a path changed since its run ended is refused.
#[tauri::command]
pub async fn settings_journal_undo(
    service: State<'_, Service>,
    target: UndoTarget,
    dry_run: bool,
) -> Result<Vec<UndoOutcome>, IpcError> {
    let request = Request::JournalUndo {
        target,
        dry_run,
        force: false,
    };
    operation!(service, request, Reply::JournalUndone(outcomes) => outcomes)
}

/// The user's home directory, so the page can write paths as `~/…`. The page's first
/// command, so it is logged: the page is up (tests/tests/settings_memory.rs reads it).
#[tauri::command]
pub async fn settings_home(service: State<'_, Service>) -> Result<String, IpcError> {
    tracing::debug!("settings page started");
    Ok(service.home().display().to_string())
}

/// The view last asked of this window while its page may still have been loading (and
/// so missed the show event), once; None when there was none.
#[tauri::command]
pub async fn settings_take_show() -> Result<Option<super::super::settings::Show>, IpcError> {
    Ok(super::super::settings::take_missed_show())
}

/// The app's own settings (prompt timeout, summaries, sound).
#[tauri::command]
pub async fn settings_app_settings(
    service: State<'_, Service>,
) -> Result<AppSettingsView, IpcError> {
    operation!(service, Request::AppSettings, Reply::AppSettings(view) => view)
}

/// Changes one app setting; it applies to the next prompt or notification.
#[tauri::command]
pub async fn settings_change_app_setting(
    service: State<'_, Service>,
    change: AppSettingChange,
) -> Result<AppSettingChanged, IpcError> {
    let request = Request::ChangeAppSetting { change };
    operation!(service, request, Reply::AppSettingChanged(changed) => changed)
}

/// Opens a policy file (named by its target, never by a path from the page) in the
/// user's editor through `xdg-open`, detached; returns the path opened. Not an operation
/// of the table: it acts on this desktop, which only a window has.
#[tauri::command]
pub async fn settings_open_in_editor(
    service: State<'_, Service>,
    file: PolicyFile,
) -> Result<String, IpcError> {
    let service = service.inner().clone();
    super::super::blocking::on_blocking_pool(move || {
        let s = &service;
        let path = ops::policy_file_path(s, &file).map_err(|e| e.to_string())?;
        if !path.is_file() {
            return Err(format!("{} does not exist yet", path.display()));
        }
        open_detached(&path)?;
        Ok(path.display().to_string())
    })
    .await
}

/// Starts `xdg-open path` in its own process group (a signal to us does not reach the
/// editor) with no stdio of ours, and reaps it on a thread of its own.
pub(in crate::app) fn open_detached(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new("xdg-open")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run xdg-open to open {}: {e}", path.display()))?;
    let shown = path.display().to_string();
    std::thread::spawn(move || match child.wait() {
        Ok(status) if status.success() => {}
        Ok(status) => tracing::warn!("xdg-open {shown}: {status}"),
        Err(e) => tracing::warn!("xdg-open {shown}: {e}"),
    });
    Ok(())
}
