//! Every operation a front end offers, declared once: a [`Request`] carried out by [`run`].
//! The control server (`ctl`) and the Tauri commands of the settings and welcome windows
//! both dispatch through it, so they cannot drift apart (the same hops off the runtime,
//! the same checks, the same core operations). What fails is a typed [`Failure`]; each
//! front end words it for its reader (`ctl` says how to confirm a broad entry, a page
//! has a button for it).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;

use super::control::{
    AnswerReply, PendingItem, Persisted, Reply, Request, ResumeReply, StatusReply,
};
use super::ops::{self, OpError};
use super::prompt_view;
use crate::activity::now_ms;
use crate::decision::broker::{Answered, BrokerError, PendingPrompt, PromptId};
use crate::serving::service::{ProjectStatus, Service, ServiceError};

/// Why an operation was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A directory that is not absolute: the app does not share the caller's working
    /// directory, so it would mean something else here.
    #[error("{}: the directory must be absolute (ctl resolves it against its own directory)", .0.display())]
    NotAbsolute(PathBuf),
    /// A policy change refused or failed; nothing was written.
    #[error("nothing was written: {0}")]
    NotWritten(OpError),
    /// The last policy save could not be undone; nothing was changed.
    #[error("nothing was undone: {0}")]
    NotUndone(OpError),
    /// A shared operation failed.
    #[error(transparent)]
    Op(#[from] OpError),
    /// Serving a project failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The broker refused an answer.
    #[error(transparent)]
    Answer(#[from] BrokerError),
    /// A pause of no time.
    #[error("a pause must last at least a second")]
    ZeroPause,
    /// Asked to show a window the instance does not have (`--headless`).
    #[error("this instance has no settings window")]
    NoWindow,
    /// A phone page operation failed.
    #[error(transparent)]
    Web(#[from] super::web::WebError),
    /// The app is quitting.
    #[error("shutting down")]
    ShuttingDown,
    /// A reply that cannot be written as JSON, or a task that did not finish.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Carries out one request against the service, as every front end does.
pub async fn run(service: &Service, request: Request) -> Result<Reply, Failure> {
    let broker = service.broker();
    match request {
        Request::Status => {
            let list = service.list();
            let conflicts = list
                .iter()
                .filter(|p| {
                    matches!(
                        p.status,
                        ProjectStatus::Conflict { .. } | ProjectStatus::Contested { .. }
                    )
                })
                .count();
            Ok(Reply::Status(StatusReply {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                projects: list.len(),
                conflicts,
                pending: broker.pending().len(),
                pause: broker.pause_state(),
            }))
        }
        Request::Projects => Ok(Reply::Projects(service.list())),
        Request::Pending { wait } => {
            // Subscribed before looking, so a prompt added in between is not missed.
            let mut events = broker.subscribe();
            loop {
                let pending = broker.pending();
                if !wait || !pending.is_empty() {
                    let now = now_ms();
                    return Ok(Reply::Pending(items(service, &pending, now)));
                }
                match events.recv().await {
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Err(Failure::ShuttingDown),
                }
            }
        }
        Request::Watch { known } => {
            // Subscribed before looking, as for `pending`; only this machine's prompts
            // (a desktop never passes on another machine's).
            let mut events = broker.subscribe();
            loop {
                let local: Vec<_> = broker
                    .pending()
                    .into_iter()
                    .filter(|p| p.host.is_none())
                    .take(crate::serving::remote::wire::MAX_ITEMS)
                    .collect();
                let ids: Vec<PromptId> = local.iter().map(|p| p.id).collect();
                if known.as_ref() != Some(&ids) {
                    return Ok(Reply::Pending(items(service, &local, now_ms())));
                }
                match events.recv().await {
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Err(Failure::ShuttingDown),
                }
            }
        }
        Request::PromptPreview { id, target, never } => {
            let preview = on_pool(service, move |s| {
                // This machine's own prompts only: another's policy is not ours to read.
                let prompt = s
                    .broker()
                    .pending()
                    .into_iter()
                    .find(|p| p.id == id && p.host.is_none())
                    .ok_or(BrokerError::NotPending(id))?;
                let preview = if never {
                    prompt_view::preview_never(&prompt, s.home(), target)
                } else {
                    prompt_view::preview_grant(&prompt, s.home(), target)
                };
                preview.map_err(|e| Failure::Answer(BrokerError::Rules(e)))
            })
            .await??;
            Ok(Reply::PromptPreview(preview))
        }
        Request::Remotes => Ok(Reply::Remotes(service.remotes().list())),
        Request::RemoteAdd { remote } => {
            let added = on_pool(service, move |s| ops::remote_add(s, remote)).await??;
            Ok(Reply::RemoteAdded(added))
        }
        Request::RemoteRemove { name } => {
            let removed = name.clone();
            on_pool(service, move |s| ops::remote_remove(s, &name)).await??;
            Ok(Reply::RemoteRemoved(removed))
        }
        Request::Answer { id, answer } => {
            let broker = broker.clone();
            // A project or global grant writes a policy file.
            let answered = off_runtime(move || broker.answer(id, &answer)).await??;
            Ok(Reply::Answered(answer_reply(id, answered)))
        }
        // Serving publishes a discovery file (and may probe another presenter's port) and
        // may write the settings file; `Service` does that file work on the blocking pool.
        Request::AddProject { dir, persist } => {
            let dir = absolute(dir)?;
            Ok(Reply::Project(service.add_project(&dir, persist).await?))
        }
        Request::RemoveProject { dir, persist } => {
            let dir = absolute(dir)?;
            service.remove_project(&dir, persist).await?;
            let removed = off_runtime(move || std::fs::canonicalize(&dir).unwrap_or(dir)).await?;
            Ok(Reply::Removed(removed))
        }
        Request::TakeOver { dir } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            Ok(Reply::Project(
                off_runtime(move || service.take_over(&dir)).await??,
            ))
        }
        Request::Prefer { dir, prompts } => {
            let dir = absolute(dir)?;
            Ok(Reply::Project(service.set_prompts(&dir, prompts).await?))
        }
        Request::Pause { secs } => {
            if secs == Some(0) {
                return Err(Failure::ZeroPause);
            }
            broker.pause(secs.map(Duration::from_secs));
            Ok(Reply::Paused(broker.pause_state()))
        }
        Request::Resume => {
            let before = broker.pause_state();
            broker.resume();
            Ok(Reply::Resumed(ResumeReply {
                was_paused: before.paused,
                denied: before.denied,
            }))
        }
        Request::OpenSettings { show } => {
            if service.request_ui(show) {
                Ok(Reply::Shown)
            } else {
                Err(Failure::NoWindow)
            }
        }
        // The shared operations (ops/) read or write files, so on the blocking pool.
        Request::Policy { dir } => {
            let dir = absolute(dir)?;
            let view = on_pool(service, move |s| ops::show_policy(s, &dir)).await??;
            Ok(Reply::Policy(Box::new(writable(view)?)))
        }
        Request::AppSettings => {
            let settings = on_pool(service, ops::show_app_settings).await??;
            Ok(Reply::AppSettings(settings))
        }
        Request::Journal { session } => {
            let items =
                on_pool(service, move |s| ops::journal_list(s, session.as_deref())).await??;
            Ok(Reply::Journal(items))
        }
        Request::JournalUndo {
            target,
            dry_run,
            force,
        } => {
            let outcomes = on_pool(service, move |s| {
                ops::journal_undo(s, &target, dry_run, force)
            })
            .await??;
            Ok(Reply::JournalUndone(outcomes))
        }
        Request::Canaries => Ok(Reply::Canaries(on_pool(service, ops::canary_list).await?)),
        Request::CanaryAdd { path } => {
            let path = absolute(path)?;
            let added = on_pool(service, move |s| ops::canary_add(s, &path)).await??;
            Ok(Reply::CanaryAdded(added))
        }
        Request::CanaryRemove { path } => {
            let path = absolute(path)?;
            let removed = path.clone();
            on_pool(service, move |s| ops::canary_remove(s, &path)).await??;
            Ok(Reply::CanaryRemoved(removed))
        }
        Request::Incidents => Ok(Reply::Incidents(on_pool(service, ops::incidents).await?)),
        Request::IncidentAct { id, action } => {
            let incident = on_pool(service, move |s| ops::incident_act(s, id, action)).await??;
            Ok(Reply::IncidentActed(incident))
        }
        Request::Web => Ok(Reply::Web(super::web::status(service))),
        Request::WebOn { bind } => Ok(Reply::Web(super::web::turn_on(service, bind).await?)),
        Request::WebOff => Ok(Reply::Web(super::web::turn_off(service).await?)),
        Request::WebPair => Ok(Reply::WebPairing(super::web::pair(service).await?)),
        Request::WebDevices => Ok(Reply::WebDevices(super::web::devices(service).await?)),
        Request::WebRevoke { device } => Ok(Reply::WebRevoked(
            super::web::revoke(service, device).await?,
        )),
        Request::ChangeAppSetting { change } => {
            let changed = on_pool(service, move |s| ops::change_app_setting(s, &change)).await??;
            Ok(Reply::AppSettingChanged(changed))
        }
        Request::ChangePolicy {
            file,
            change,
            allow_broad,
        } => {
            let changed = on_pool(service, move |s| {
                ops::change_policy(s, &file, &change, allow_broad)
            })
            .await?
            .map_err(Failure::NotWritten)?;
            Ok(Reply::PolicyChanged(changed))
        }
        Request::ChangePolicyAll {
            file,
            changes,
            allow_broad,
        } => {
            let changed = on_pool(service, move |s| {
                ops::change_policy_all(s, &file, &changes, allow_broad)
            })
            .await?
            .map_err(Failure::NotWritten)?;
            Ok(Reply::PolicyChanged(changed))
        }
        Request::CheckEntry {
            file,
            project,
            list,
            entry,
            replacing,
        } => {
            let project = project.map(absolute).transpose()?;
            let check = on_pool(service, move |s| {
                ops::check_entry(
                    s,
                    &file,
                    project.as_deref(),
                    list,
                    &entry,
                    replacing.as_deref(),
                )
            })
            .await??;
            Ok(Reply::EntryChecked(check))
        }
        Request::UndoPolicy => {
            let undone = on_pool(service, ops::undo_last_save)
                .await?
                .map_err(Failure::NotUndone)?;
            Ok(Reply::PolicyUndone(undone))
        }
        Request::Learn { dir, learn, save } => {
            let dir = absolute(dir)?;
            let (review, saved) = on_pool(service, move |s| {
                let review = ops::learn(s, &dir, &learn)?;
                let changes = review.changes();
                let saved = if save && !changes.is_empty() {
                    let file = review.policy_file(&dir);
                    let changed = ops::change_policy_all(s, &file, &changes, false)
                        .map_err(Failure::NotWritten)?;
                    Some(changed)
                } else {
                    None
                };
                Ok::<_, Failure>((review, saved))
            })
            .await??;
            Ok(Reply::Learned {
                review: writable(review)?,
                saved: saved.map(Box::new),
            })
        }
        Request::Sessions { dir } => {
            let dir = absolute(dir)?;
            let sessions = on_pool(service, move |s| ops::sessions(s, &dir)).await??;
            Ok(Reply::Sessions(sessions))
        }
        Request::PluginWarnings => Ok(Reply::PluginWarnings(
            on_pool(service, ops::plugin_warnings).await?,
        )),
        Request::Grants => {
            let grants = on_pool(service, ops::grants).await?;
            Ok(Reply::Grants(writable(grants)?))
        }
        Request::Revoke { id } => {
            on_pool(service, move |s| ops::revoke(s, id)).await??;
            Ok(Reply::Revoked(id))
        }
        Request::Activity { filter } => {
            if let Some(dir) = &filter.project {
                absolute(dir.clone())?;
            }
            let entries = on_pool(service, move |s| ops::activity(s, &filter)).await??;
            Ok(Reply::Activity(entries))
        }
        Request::ActivityPage { filter } => {
            if let Some(dir) = &filter.project {
                absolute(dir.clone())?;
            }
            let page = on_pool(service, move |s| ops::activity_page(s, &filter)).await??;
            Ok(Reply::ActivityPage(page))
        }
        Request::ExplainActivity { entry } => {
            let answering = on_pool(service, move |s| ops::explain_activity(s, &entry)).await??;
            Ok(Reply::ActivityExplained(answering))
        }
        Request::ActivityPreview { entry, target } => {
            let preview = on_pool(service, move |s| {
                ops::activity_grant_preview(s, &entry, target)
            })
            .await??;
            Ok(Reply::ActivityPreview(preview))
        }
    }
}

/// `value` if it can be written as JSON: a view holding a path that is not UTF-8 is an
/// error reply here rather than a connection dropped when the reply is written. (The
/// activity holds only text; it always can.)
fn writable<T: serde::Serialize>(value: T) -> Result<T, Failure> {
    serde_json::to_writer(io::sink(), &value)
        .map(|()| value)
        .map_err(|e| Failure::Internal(e.to_string()))
}

/// The list items of `pending`; a local write's undo note from this machine's journal (a
/// remote's request is not this journal's).
fn items(service: &Service, pending: &[PendingPrompt], now: u64) -> Vec<PendingItem> {
    let journal = service.broker().journal();
    pending
        .iter()
        .map(|p| PendingItem {
            undo: journal
                .filter(|_| p.host.is_none())
                .and_then(|j| j.undo_note(&p.query)),
            ..PendingItem::from_prompt(p, now)
        })
        .collect()
}

fn answer_reply(id: PromptId, answered: Answered) -> AnswerReply {
    AnswerReply {
        id,
        action: answered.action,
        grant: answered.grant,
        persisted: answered
            .persisted
            .map(|(file, entry)| Persisted { file, entry }),
        also_answered: answered.also_answered,
        left_waiting: answered.left_waiting,
    }
}

fn absolute(dir: PathBuf) -> Result<PathBuf, Failure> {
    if dir.is_absolute() {
        Ok(dir)
    } else {
        Err(Failure::NotAbsolute(dir))
    }
}

/// Runs blocking work off the runtime's workers.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Failure::Internal(e.to_string()))
}

/// [`off_runtime`] with the service at hand.
async fn on_pool<T: Send + 'static>(
    service: &Service,
    work: impl FnOnce(&Service) -> T + Send + 'static,
) -> Result<T, Failure> {
    let service = service.clone();
    off_runtime(move || work(&service)).await
}
