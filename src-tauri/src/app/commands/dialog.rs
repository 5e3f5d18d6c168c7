//! The prompt dialog's commands: each hands over to the dialog state (the prompt it shows),
//! which hands over to the core's broker, the one answer path every surface takes. capabilities/prompt.json grants these to the `prompt` window only.

use std::sync::Arc;

use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::decision::broker::PromptId;
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::operations::Failure;
use landstrip_tray_core::surfaces::prompt_view::GrantPreview;
use serde::Serialize;
use tauri::{AppHandle, Runtime, State};

use super::super::blocking::on_blocking_pool;
use super::super::dialog::{Dialog, DialogError, Update};
use super::IpcError;

/// What an answer did, for the page.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerSummary {
    /// `allow` or `deny`.
    action: String,
    /// Other pending prompts the grant settled too.
    also_answered: usize,
    /// The policy file changed, if any.
    persisted_to: Option<String>,
}

/// The page has loaded and listens for `dialog:update`; returns the current state.
#[tauri::command]
pub async fn dialog_ready(dialog: State<'_, Arc<Dialog>>) -> Result<Update, IpcError> {
    Ok(dialog.ready())
}

/// The page shows update `seq`: the window is shown (a prompt) or hidden (none) now.
#[tauri::command]
pub async fn dialog_rendered<R: Runtime>(
    app: AppHandle<R>,
    dialog: State<'_, Arc<Dialog>>,
    seq: u64,
) -> Result<(), IpcError> {
    dialog.rendered(&app, seq);
    Ok(())
}

/// An answer as the page sends it: `{id, choice, scope?, confirmed?}`.
#[derive(Debug, serde::Deserialize)]
pub struct PageAnswer {
    /// The prompt.
    id: PromptId,
    /// The answer, checked by the core's rules.
    #[serde(flatten)]
    answer: AnswerRequest,
}

/// Answers a prompt. A project or global answer writes a policy file, so it runs on the
/// blocking pool, never on an async worker.
#[tauri::command]
pub async fn dialog_answer(
    dialog: State<'_, Arc<Dialog>>,
    request: PageAnswer,
) -> Result<AnswerSummary, IpcError> {
    let dialog = Arc::clone(&dialog);
    let answered = on_blocking_pool(move || dialog.answer(request.id, &request.answer)).await?;
    Ok(AnswerSummary {
        action: answered.action.as_str().to_owned(),
        also_answered: answered.also_answered.len(),
        persisted_to: answered
            .persisted
            .map(|(file, entry)| format!("{entry} → {}", file.display())),
    })
}

/// The exact sandbox.json change a project or global grant of prompt `id` would make (with
/// `never`: a "never" answer's deny entry). It reads the policy file, so it runs on the
/// blocking pool.
#[tauri::command]
pub async fn dialog_preview(
    dialog: State<'_, Arc<Dialog>>,
    id: PromptId,
    target: PolicyTarget,
    never: Option<bool>,
) -> Result<GrantPreview, IpcError> {
    let dialog = Arc::clone(&dialog);
    let never = never.unwrap_or(false);
    on_blocking_pool(move || dialog.preview(id, target, never)).await
}

/// Opens the settings window on the policy of prompt `id`'s project; the prompt stays
/// pending.
#[tauri::command]
pub async fn dialog_edit_policy(
    dialog: State<'_, Arc<Dialog>>,
    service: State<'_, Service>,
    id: PromptId,
) -> Result<(), IpcError> {
    let show = dialog
        .edit_policy_request(id)
        .map_err(|e| IpcError::Refused(e.to_string()))?;
    let shown: Result<(), IpcError> =
        async { operation!(service, Request::OpenSettings { show }, Reply::Shown => ()) }.await;
    shown.map_err(|e| match e {
        IpcError::Failed(Failure::NoWindow) => {
            IpcError::Refused(DialogError::NoSettings.to_string())
        }
        other => other,
    })
}
