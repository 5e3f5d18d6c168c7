//! Tauri commands: the thin layer the web front end calls. Each one hands over to the
//! dialog state (which hands over to the core) and turns errors into the sentence the
//! page shows. All are async so that none runs on (and blocks) the main thread.

use std::sync::Arc;

use landstrip_tray_core::answer::AnswerRequest;
use landstrip_tray_core::broker::PromptId;
use landstrip_tray_core::prompt_view::GrantPreview;
use landstrip_tray_core::scope::PolicyTarget;
use serde::Serialize;
use tauri::{AppHandle, State, Wry};

use super::dialog::{Dialog, Update};

/// Registers every command on the builder. Keep build.rs's list in step: it makes a
/// permission per command, and capabilities/prompt.json grants them to the dialog only.
pub fn register(builder: tauri::Builder<Wry>) -> tauri::Builder<Wry> {
    builder.invoke_handler(tauri::generate_handler![
        dialog_ready,
        dialog_rendered,
        dialog_answer,
        dialog_preview
    ])
}

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
async fn dialog_ready(dialog: State<'_, Arc<Dialog>>) -> Result<Update, String> {
    Ok(dialog.ready())
}

/// The page shows update `seq`: the window is shown (a prompt) or hidden (none) now.
#[tauri::command]
async fn dialog_rendered(
    app: AppHandle,
    dialog: State<'_, Arc<Dialog>>,
    seq: u64,
) -> Result<(), String> {
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
async fn dialog_answer(
    dialog: State<'_, Arc<Dialog>>,
    request: PageAnswer,
) -> Result<AnswerSummary, String> {
    let dialog = Arc::clone(&dialog);
    let answered =
        tauri::async_runtime::spawn_blocking(move || dialog.answer(request.id, &request.answer))
            .await
            .map_err(|e| format!("internal error: {e}"))?
            .map_err(|e| e.to_string())?;
    Ok(AnswerSummary {
        action: answered.action.as_str().to_owned(),
        also_answered: answered.also_answered.len(),
        persisted_to: answered
            .persisted
            .map(|(file, entry)| format!("{entry} → {}", file.display())),
    })
}

/// The exact sandbox.json change a project or global grant of prompt `id` would make.
#[tauri::command]
async fn dialog_preview(
    dialog: State<'_, Arc<Dialog>>,
    id: PromptId,
    target: PolicyTarget,
) -> Result<GrantPreview, String> {
    dialog.preview(id, target).map_err(|e| e.to_string())
}
