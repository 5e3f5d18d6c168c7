//! The prompt dialog: one window (label `prompt`) that shows the pending prompts one at a
//! time, always on top, and answers them through the broker.
//!
//! The window is created hidden as soon as a run connects to any served project (or on a
//! prompt, if none is connected), so that the run's first prompt finds its web process
//! started and its page loaded; it is only hidden between prompts, and destroyed once no
//! run has been connected and nothing has been pending for a while (`window.rs`): a live WebKit web
//! process costs tens of MB, and the app spends most of its life idle. Under WebDriver automation (tauri-driver sets
//! `TAURI_WEBVIEW_AUTOMATION=true` in the environment the app inherits) the window is
//! created hidden at start and never destroyed: WebKitWebDriver attaches to the first
//! webview of the process when its session starts, so one must exist by then and stay.
//!
//! Every change is pushed to the page as a `dialog:update` event carrying a sequence
//! number (the page drops stale ones). The page acknowledges each update it has rendered
//! with `dialog_rendered(seq)`, and only then is the window shown (a prompt) or hidden
//! (nothing left): it never flashes old or empty content, and it never disappears while
//! the page is still handling the input that answered the last prompt. What the page shows
//! and accepts is built in the core (`landstrip_tray_core::surfaces::prompt_view`), tested without a
//! display.

mod window;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use landstrip_tray_core::decision::answer::grant_list;
use landstrip_tray_core::decision::answer::{AnswerRequest, RuleError};
use landstrip_tray_core::decision::broker::{
    Answered, BrokerError, BrokerEvent, PendingPrompt, PromptId,
};
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::policy::change::ListField;
use landstrip_tray_core::serving::service::{Service, UiRequest};
use landstrip_tray_core::surfaces::dialog_queue::DialogQueue;
use landstrip_tray_core::surfaces::prompt_view::{
    build_view, preview_grant, preview_never, DialogUpdate, GrantPreview,
};
use landstrip_tray_core::wire::protocol::QueryKind;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use window::{ensure_window, follow_runs, settle_window, Window};

/// The window's label.
pub const LABEL: &str = "prompt";

/// The event that carries an [`Update`] to the page.
pub const UPDATE_EVENT: &str = "dialog:update";

/// How long the window waits for the page to acknowledge an update before it is shown or
/// hidden anyway (a page that cannot render must not hide pending prompts).
const ACK_FALLBACK: Duration = Duration::from_secs(2);

/// What the page receives: the core's update plus ordering.
#[derive(Debug, Clone, Serialize)]
pub struct Update {
    /// Increases with every update; the page ignores anything older than it has.
    pub seq: u64,
    /// The prompt and notice.
    #[serde(flatten)]
    pub update: DialogUpdate,
}

/// Something to do once no prompt is on screen ([`when_no_prompt`]).
struct Deferred(Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deferred")
    }
}

#[derive(Debug)]
struct State {
    queue: DialogQueue,
    last: Update,
    window: Window,
    visible: bool,
    /// Raise and focus the window at the next acknowledged update (Review, a notification
    /// click).
    raise: bool,
    /// The latest update the page (or the fallback) settled the window for.
    settled: u64,
    /// Runs connected now (to any served project): the window is kept while there is one.
    runs: usize,
    /// Bumped whenever the window is wanted again: a pending release that sees another
    /// value is cancelled.
    release: u64,
    /// The duration last chosen beside "Session" in each project (the settings file's
    /// `sessionDurations`, read at start and kept up to date by the dialog's answers).
    durations: BTreeMap<PathBuf, String>,
    /// Run when the dialog next hides.
    deferred: Vec<Deferred>,
}

/// The dialog's shared state, managed by Tauri for the commands.
pub struct Dialog {
    service: Service,
    home: PathBuf,
    automation: bool,
    state: Mutex<State>,
}

/// A refused or failed answer, in words for the dialog.
#[derive(Debug, thiserror::Error)]
pub enum DialogError {
    /// The prompt is gone (answered elsewhere, withdrawn).
    #[error("This request is no longer waiting.")]
    Gone,
    /// The answer rules refused the answer.
    #[error("{0}")]
    Refused(#[from] RuleError),
    /// The broker could not carry it out (a policy file that cannot be written, say).
    #[error("{0}. The request is still waiting.")]
    Failed(BrokerError),
    /// A policy edit of another machine's request (its file is that machine's, which this
    /// desktop never reads), or a preview from it that could not be read.
    #[error("That request's policy is its own machine's sandbox.json: it is not edited here. The request is still waiting.")]
    RemotePolicy,
    /// Nothing shows the settings window (no desktop surface listens).
    #[error("The settings window cannot be opened here. The request is still waiting.")]
    NoSettings,
}

impl Dialog {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending_prompt(&self, id: PromptId) -> Result<PendingPrompt, DialogError> {
        self.service
            .broker()
            .pending()
            .into_iter()
            .find(|p| p.id == id)
            .ok_or(DialogError::Gone)
    }

    /// The page has loaded and listens: it gets the latest update.
    pub fn ready(&self) -> Update {
        tracing::debug!("dialog page ready");
        let mut state = self.lock();
        state.window = Window::Ready;
        state.last.clone()
    }

    /// The page has rendered update `seq`: the window is shown or hidden to match.
    pub fn rendered<R: Runtime>(&self, app: &AppHandle<R>, seq: u64) {
        tracing::debug!(seq, "dialog rendered");
        settle_window(app, self, seq);
    }

    /// Answers a prompt from the page, through the same broker call and rules as every
    /// other surface.
    pub fn answer(&self, id: PromptId, request: &AnswerRequest) -> Result<Answered, DialogError> {
        let project = self.pending_prompt(id).ok().map(|p| p.project);
        self.lock().queue.answering(id);
        let answered = self
            .service
            .broker()
            .answer(id, request)
            .map_err(|e| match e {
                BrokerError::NotPending(_) => DialogError::Gone,
                BrokerError::Rules(rule) => DialogError::Refused(rule),
                other => DialogError::Failed(other),
            })?;
        if let (Some(project), Some(_)) = (project, answered.grant) {
            self.remember_duration(project, request);
        }
        Ok(answered)
    }

    /// Keeps the duration a session grant was given for as the project's next default,
    /// in memory and in the settings file (only when it changed).
    fn remember_duration(&self, project: PathBuf, request: &AnswerRequest) {
        let value = request
            .lifetime
            .map(|lifetime| lifetime.as_text())
            .unwrap_or_default();
        {
            let mut state = self.lock();
            if state.durations.get(&project) == Some(&value) {
                return;
            }
            state.durations.insert(project.clone(), value.clone());
        }
        if let Some(file) = self.service.settings_file() {
            if let Err(e) = file.update(|s| {
                s.session_durations.insert(project, value);
            }) {
                tracing::warn!("remembering the session duration: {e}");
            }
        }
    }

    /// What a project or global grant of prompt `id` would write, or with `never` the
    /// deny entry a "never" answer would write.
    pub fn preview(
        &self,
        id: PromptId,
        target: PolicyTarget,
        never: bool,
    ) -> Result<GrantPreview, DialogError> {
        let prompt = self.pending_prompt(id)?;
        if prompt.host.is_some() {
            // That machine's own preview of its own file, asked over its link.
            return match self.service.broker().remote_preview(id, target, never) {
                Some(Ok(value)) => {
                    GrantPreview::from_remote(value).ok_or(DialogError::RemotePolicy)
                }
                Some(Err(e)) => Err(DialogError::Failed(e)),
                None => Err(DialogError::Gone),
            };
        }
        if never {
            return Ok(preview_never(&prompt, &self.home, target)?);
        }
        Ok(preview_grant(&prompt, &self.home, target)?)
    }

    /// What "Edit the policy…" asks for: the settings window on the policy of prompt
    /// `id`'s project, the list its grant would change focused (the command hands it to
    /// the operations table's `OpenSettings`, as `ctl settings` does). The prompt is not
    /// answered: it stays pending.
    pub fn edit_policy_request(&self, id: PromptId) -> Result<UiRequest, DialogError> {
        let prompt = self.pending_prompt(id)?;
        if prompt.host.is_some() {
            return Err(DialogError::RemotePolicy);
        }
        let list = match &prompt.query.kind {
            QueryKind::Filesystem(fs) => ListField::Filesystem(grant_list(fs.operation)),
            QueryKind::Network(_) => ListField::AllowedDomains,
        };
        Ok(UiRequest::EditPolicy {
            project: prompt.project.clone(),
            list,
        })
    }

    /// Denies the prompt on screen (the window was closed).
    fn deny_shown(&self) {
        let shown = {
            let mut state = self.lock();
            let shown = state.queue.shown();
            if let Some(id) = shown {
                state.queue.answering(id);
            }
            shown
        };
        if let Some(id) = shown {
            if let Err(e) = self.service.broker().answer(id, &AnswerRequest::deny()) {
                tracing::debug!(prompt = id, "deny on close: {e}");
            }
        }
    }
}

impl Dialog {
    /// The dialog's state before any window exists.
    pub fn new(service: &Service) -> Arc<Self> {
        Arc::new(Dialog {
            service: service.clone(),
            home: service.home().to_path_buf(),
            automation: std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true"),
            state: Mutex::new(State {
                queue: DialogQueue::new(),
                last: Update {
                    seq: 0,
                    update: DialogUpdate {
                        view: None,
                        notice: None,
                    },
                },
                window: Window::Absent,
                visible: false,
                raise: false,
                settled: 0,
                runs: 0,
                release: 0,
                durations: service
                    .settings_file()
                    .and_then(|file| file.load().ok())
                    .map(|settings| settings.session_durations)
                    .unwrap_or_default(),
                deferred: Vec::new(),
            }),
        })
    }
}

/// Starts showing the dialog whenever prompts are pending.
pub fn start<R: Runtime>(app: &AppHandle<R>, service: &Service) {
    let dialog = Dialog::new(service);
    let automation = dialog.automation;
    app.manage(dialog.clone());
    if automation {
        tracing::info!("WebDriver automation: the dialog window is created at start");
        let app = app.clone();
        tauri::async_runtime::spawn(async move { ensure_window(&app) });
    }
    follow_runs(app, service.broker().subscribe_runs());
    let mut events = service.broker().subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        refresh(&app, None);
        loop {
            let mut notice = None;
            let mut next = Some(events.recv().await);
            // Take everything already queued before refreshing once: a burst of prompts
            // becomes one update, not one per prompt.
            while let Some(event) = next.take() {
                match event {
                    Ok(BrokerEvent::Resolved { id, by, .. }) => {
                        if let Some(text) = dialog.lock().queue.resolved(id, by) {
                            notice = Some(text);
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
                next = match events.try_recv() {
                    Ok(event) => Some(Ok(event)),
                    Err(TryRecvError::Lagged(n)) => Some(Err(RecvError::Lagged(n))),
                    Err(TryRecvError::Closed) => Some(Err(RecvError::Closed)),
                    Err(TryRecvError::Empty) => None,
                };
            }
            refresh(&app, notice);
        }
    });
}

/// Brings the dialog to the front, on `focus` if given (else the prompt on screen or the
/// oldest pending one).
pub fn open<R: Runtime>(app: &AppHandle<R>, focus: Option<PromptId>) {
    let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
        return;
    };
    {
        let mut state = dialog.lock();
        if let Some(id) = focus {
            state.queue.focus(id);
        }
        state.raise = true;
    }
    refresh(app, None);
}

/// Recomputes what the dialog shows and pushes it to the page; creates the window when a
/// prompt needs it. Showing and hiding follow the page's acknowledgement.
fn refresh<R: Runtime>(app: &AppHandle<R>, notice: Option<String>) {
    let Some(dialog) = app.try_state::<Arc<Dialog>>() else {
        return;
    };
    let dialog = dialog.inner().clone();
    let broker = dialog.service.broker();
    let pending = broker.pending();
    let (update, window) = {
        let mut state = dialog.lock();
        let view = state.queue.pick(&pending).map(|i| {
            let prompt = &pending[i];
            let covered = broker.covered_by_session_answer(prompt.id).len();
            let mut view = build_view(prompt, &dialog.home, i + 1, pending.len(), covered);
            // Said before the person answers: allowing this write could not be undone.
            // This machine's journal knows nothing of another machine's writes.
            view.undo = broker
                .journal()
                .filter(|_| prompt.host.is_none())
                .and_then(|j| j.undo_note(&prompt.query));
            // The duration last chosen in the project, else the view's default.
            if let Some(chosen) = state.durations.get(&prompt.project) {
                view.session_limits.chosen = Some(chosen.clone());
            }
            view
        });
        if view.is_none() {
            state.raise = false;
        }
        let update = DialogUpdate { view, notice };
        if update.view.is_some() {
            state.release += 1;
        }
        let needs_window = state.window == Window::Absent && update.view.is_some();
        // Nothing the page shows changed (an unrelated prompt of another count…).
        if update == state.last.update && !state.raise && !needs_window {
            return;
        }
        state.last = Update {
            seq: state.last.seq + 1,
            update,
        };
        (state.last.clone(), state.window)
    };
    let has_view = update.update.view.is_some();
    match window {
        Window::Absent if has_view => ensure_window(app),
        Window::Absent => return,
        Window::Ready => {
            if let Err(e) = app.emit_to(LABEL, UPDATE_EVENT, &update) {
                tracing::warn!("dialog update: {e}");
            }
        }
        Window::Loading => {}
    }
    // Normally the page acknowledges well before this.
    let app = app.clone();
    let seq = update.seq;
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(ACK_FALLBACK).await;
        if let Some(dialog) = app.try_state::<Arc<Dialog>>() {
            let late = {
                let state = dialog.lock();
                state.last.seq == seq && state.settled < seq && state.window != Window::Absent
            };
            if late {
                tracing::warn!(seq, "the dialog page did not render in time");
                settle_window(&app, &dialog, seq);
            }
        }
    });
}

/// Runs `then` now if no prompt is on screen or coming, else once the dialog hides: for a
/// window opened unasked (the settings window at start without a tray host), which must
/// neither cover a waiting prompt nor take its keys (on Wayland a newly mapped window gets
/// the focus, and the prompt could not take it back without an activation token).
pub fn when_no_prompt<R: Runtime>(app: &AppHandle<R>, then: impl FnOnce() + Send + 'static) {
    if let Some(dialog) = app.try_state::<Arc<Dialog>>() {
        let mut state = dialog.lock();
        if state.visible || state.last.update.view.is_some() {
            tracing::debug!("a prompt is on screen: the settings window opens once it hides");
            state.deferred.push(Deferred(Box::new(then)));
            return;
        }
    }
    then();
}
