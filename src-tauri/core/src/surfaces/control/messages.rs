//! The wire form of the control socket: one JSON [`Request`] per line in, one JSON
//! [`Response`] per line out.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::activity::{ActivityEntry, ActivityFilter};
use crate::app_settings::remote::RemoteConfig;
use crate::decision::after_secret::SecretRead;
use crate::decision::answer::AnswerRequest;
use crate::decision::broker::{ConnId, LeftWaiting, PauseState, PendingPrompt, PromptId};
use crate::decision::canary::{Incident, IncidentAction};
use crate::decision::grants::Grant;
use crate::decision::scope::PolicyTarget;
use crate::journal::{JournalItem, UndoOutcome, UndoTarget};
use crate::origin::Origin;
use crate::policy::change::ListField;
use crate::policy::change::PolicyChange;
use crate::policy::view::PolicyView;
use crate::serving::remote::RemoteView;
use crate::serving::service::{ProjectInfo, PromptsGo, UiRequest};
use crate::serving::web::DeviceInfo;
use crate::surfaces::activity_rows::ActivityPage;
use crate::surfaces::ops::{
    AnsweringEntry, AppSettingChange, AppSettingChanged, AppSettingsView, CanaryAdded, CanaryItem,
    Changed, EntryCheck, LearnRequest, LearnReview, PluginWarning, PolicyFile, SessionSummary,
    Undone,
};
use crate::surfaces::preview::GrantPreview;
use crate::surfaces::web::{WebPairing, WebStatus};
use crate::wire::protocol::{Action, QueryKind};

/// One request line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// The instance: pid, version, counts, pause state.
    Status,
    /// Every served project.
    Projects,
    /// Every pending prompt, oldest first.
    Pending {
        /// Wait until at least one prompt is pending before replying.
        #[serde(default)]
        wait: bool,
    },
    /// Answers a pending prompt as the dialog would.
    Answer {
        /// The prompt.
        id: PromptId,
        /// The answer: `"choice":"once"|"session"|"project"|"global"|"deny"|"never"`; for
        /// project, global and never an optional `"scope"` or `"entry"` (with `"wider"`,
        /// not for never), `"global":true` for a global never; for session (and deny with
        /// `"session":true`) `"for":"15m"|"run"` and `"program":true`; `"confirmed"` for
        /// a sensitive location. The same rules as every surface.
        #[serde(flatten)]
        answer: AnswerRequest,
    },
    /// Serves a project directory (absolute).
    AddProject {
        /// The directory.
        dir: PathBuf,
        /// Also add it to the settings file (as the UI does); false: for this run only.
        #[serde(default = "yes")]
        persist: bool,
    },
    /// Stops serving a project directory (absolute).
    RemoveProject {
        /// The directory.
        dir: PathBuf,
        /// Also drop it from the settings file (as the UI does).
        #[serde(default = "yes")]
        persist: bool,
    },
    /// Publishes our discovery file although another live presenter owns it.
    TakeOver {
        /// The project directory (absolute).
        dir: PathBuf,
    },
    /// Sets where a served project's prompts go while another presenter (opencode's
    /// terminal UI) wants them: `"prompts":"here"|"terminal"`.
    Prefer {
        /// The project directory (absolute).
        dir: PathBuf,
        /// Here, or the terminal while it runs.
        prompts: PromptsGo,
    },
    /// Pauses prompts (what would ask is denied) for `secs`, or until resumed.
    Pause {
        /// How long; absent: until resumed.
        #[serde(default)]
        secs: Option<u64>,
    },
    /// Ends a pause.
    Resume,
    /// Shows the settings window of the running app.
    OpenSettings {
        /// What to show.
        #[serde(flatten)]
        show: UiRequest,
    },
    /// The policy in force for a project (absolute): both files and the effective result,
    /// each entry with its source.
    Policy {
        /// The project directory.
        dir: PathBuf,
    },
    /// Changes one policy file: `{"request":"change_policy","file":"project","dir":…,
    /// "op":"add","list":"allowWrite","entry":"out"}`.
    ChangePolicy {
        /// Which file.
        #[serde(flatten)]
        file: PolicyFile,
        /// The change.
        #[serde(flatten)]
        change: PolicyChange,
        /// The user confirmed an entry that gives very broad access (`ctl … --broad`);
        /// without it such an entry is refused.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        allow_broad: bool,
    },
    /// Several changes to one policy file in one write; nothing is written if one fails
    /// (the settings view's "save all").
    ChangePolicyAll {
        /// Which file.
        #[serde(flatten)]
        file: PolicyFile,
        /// The changes, in order.
        changes: Vec<PolicyChange>,
        /// As for [`Request::ChangePolicy`].
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        allow_broad: bool,
    },
    /// An entry being typed, checked as it would be saved; nothing is written.
    CheckEntry {
        /// Which file it would go into.
        #[serde(flatten)]
        file: PolicyFile,
        /// The project (absolute) a relative entry is read against.
        #[serde(default)]
        project: Option<PathBuf>,
        /// Its list.
        list: ListField,
        /// The entry as typed.
        entry: String,
        /// The entry it would replace, when editing one.
        #[serde(default)]
        replacing: Option<String>,
    },
    /// Undoes the last policy save made through the shared operations, if the file
    /// still holds what it wrote.
    UndoPolicy,
    /// Proposes entries from the prompts answered in a project (a session, a time range),
    /// as `ops::learn` does: `{"request":"learn","dir":…,"session":…,"target":"project"}`;
    /// with `"save":true` they are written into the target file in one step.
    Learn {
        /// The project directory (absolute).
        dir: PathBuf,
        /// Which activity, which file.
        #[serde(flatten)]
        learn: LearnRequest,
        /// Also write every proposal (`ops::change_policy_all`).
        #[serde(default)]
        save: bool,
    },
    /// The sessions seen in a project's activity, newest first.
    Sessions {
        /// The project directory (absolute).
        dir: PathBuf,
    },
    /// The served projects' and the global policy files that hold fields the user's
    /// opencode-landstrip rejects (or, its version unknown, may reject).
    PluginWarnings,
    /// The live session grants.
    Grants,
    /// Revokes a session grant.
    Revoke {
        /// The grant's id (see [`Request::Grants`]).
        id: u64,
    },
    /// The activity, filtered, newest last.
    Activity {
        /// Which entries.
        #[serde(flatten)]
        filter: ActivityFilter,
    },
    /// The activity as the settings view pages it: the newest rows (at most the filter's
    /// limit), newest first, and how many matched.
    ActivityPage {
        /// Which entries.
        #[serde(flatten)]
        filter: ActivityFilter,
    },
    /// The policy entry that answered a logged request, if one still does.
    ExplainActivity {
        /// The logged request.
        entry: ActivityEntry,
    },
    /// The entry "make this a grant" would write for a logged request.
    ActivityPreview {
        /// The logged request.
        entry: ActivityEntry,
        /// Into which file.
        target: PolicyTarget,
    },
    /// The app's own settings (prompt timeout, summaries, sound).
    AppSettings,
    /// Changes one app setting: `{"request":"change_app_setting","change":{"key":
    /// "promptTimeout","value":30}}`.
    ChangeAppSetting {
        /// The change.
        change: AppSettingChange,
    },
    /// The journaled writes, oldest first (`ctl journal`).
    Journal {
        /// Only this session's (or run's).
        #[serde(default)]
        session: Option<String>,
    },
    /// Undoes journaled writes, newest first: `{"request":"journal_undo","target":
    /// {"ids":[3,4]}}` or `{"target":{"session":"ses_…"}}`.
    JournalUndo {
        /// Which writes.
        target: UndoTarget,
        /// List the outcomes, change nothing.
        #[serde(default)]
        dry_run: bool,
        /// Restore a path that changed since its run ended too.
        #[serde(default)]
        force: bool,
    },
    /// The canaries (`ctl canary list`).
    Canaries,
    /// Adds a canary, writing a decoy unless the path exists (`ctl canary add PATH`).
    CanaryAdd {
        /// The decoy's path (absolute).
        path: PathBuf,
    },
    /// Drops a canary; its file stays (`ctl canary remove PATH`).
    CanaryRemove {
        /// The canary's path (absolute).
        path: PathBuf,
    },
    /// The incidents of this app run (`ctl incidents`).
    Incidents,
    /// Resumes or kills an incident's processes (`ctl incident resume|kill ID`).
    IncidentAct {
        /// The incident.
        id: u64,
        /// What to do.
        action: IncidentAction,
    },
    /// This machine's own pending prompts (never a remote's), replied as soon as their ids
    /// differ from `known` (at once without it): what `ctl bridge` streams to a desktop.
    Watch {
        /// The ids the caller has.
        #[serde(default)]
        known: Option<Vec<PromptId>>,
    },
    /// What a project or global answer (with `never`, a "never" answer) to this machine's
    /// pending prompt `id` would write, as the dialog previews it; nothing is written. A
    /// desktop's dialog asks it over `ctl bridge` for a remote request.
    PromptPreview {
        /// The prompt.
        id: PromptId,
        /// Which file.
        target: PolicyTarget,
        /// The deny entry of a "never" answer instead.
        #[serde(default)]
        never: bool,
    },
    /// The remote machines and their states (`ctl remote list`).
    Remotes,
    /// Adds a remote machine and connects to it (`ctl remote add`).
    RemoteAdd {
        /// Its name, how ssh reaches it.
        #[serde(flatten)]
        remote: RemoteConfig,
    },
    /// Removes a remote machine (`ctl remote remove NAME`).
    RemoteRemove {
        /// Its name.
        name: String,
    },
    /// The phone page: on or off, its URL and fingerprint (`ctl web`).
    Web,
    /// Turns the phone page on (`ctl web on [--bind ADDR:PORT]`), kept on across restarts.
    WebOn {
        /// The address to listen on; absent: the saved one, or loopback on a port chosen
        /// once and kept.
        #[serde(default)]
        bind: Option<String>,
    },
    /// Turns the phone page off, kept off (`ctl web off`).
    WebOff,
    /// Mints a single-use pairing token valid 10 minutes (`ctl web pair`).
    WebPair,
    /// The paired devices (`ctl web devices`).
    WebDevices,
    /// Ends a paired device at once (`ctl web revoke DEVICE`: its id or name).
    WebRevoke {
        /// The device's id or name.
        device: String,
    },
}

impl Request {
    /// Whether carrying it out changes anything (a prompt, a project, the pause, a policy
    /// file), or shows a sandboxed program what it must not see (the canaries). Such
    /// requests are refused from inside a sandbox; only the others are served
    /// there (docs/ARCHITECTURE.md, the control socket). Every variant is listed here, with
    /// no catch-all, so a new request has to be classed when it is added.
    pub fn changes_state(&self) -> bool {
        match self {
            Request::Status
            | Request::Projects
            | Request::Pending { .. }
            | Request::Policy { .. }
            | Request::Grants
            | Request::Activity { .. }
            | Request::AppSettings
            | Request::CheckEntry { .. }
            | Request::Sessions { .. }
            | Request::PluginWarnings
            | Request::ActivityPage { .. }
            | Request::ExplainActivity { .. }
            | Request::ActivityPreview { .. }
            | Request::Journal { .. }
            | Request::JournalUndo { dry_run: true, .. }
            | Request::Learn { save: false, .. }
            | Request::Remotes
            | Request::PromptPreview { .. } => false,
            Request::Web | Request::WebDevices => false,
            Request::Answer { .. }
            | Request::AddProject { .. }
            | Request::RemoveProject { .. }
            | Request::TakeOver { .. }
            | Request::Prefer { .. }
            | Request::Pause { .. }
            | Request::Resume
            | Request::ChangePolicy { .. }
            | Request::ChangePolicyAll { .. }
            | Request::UndoPolicy
            | Request::Revoke { .. }
            | Request::ChangeAppSetting { .. }
            | Request::JournalUndo { dry_run: false, .. }
            | Request::CanaryAdd { .. }
            | Request::CanaryRemove { .. }
            | Request::IncidentAct { .. }
            | Request::Learn { save: true, .. }
            | Request::RemoteAdd { .. }
            | Request::RemoteRemove { .. } => true,
            // Nothing changes, but it is the bridge's, which carries answers: no
            // sandboxed program may serve as one.
            Request::Watch { .. } => true,
            Request::WebOn { .. } | Request::WebOff | Request::WebRevoke { .. } => true,
            // Nothing changes here, but the token would let a sandboxed program pair
            // itself and answer its own requests.
            Request::WebPair => true,
            // Nothing changes, but a sandboxed program must not raise the window that
            // edits its own policy in front of the user.
            Request::OpenSettings { .. } => true,
            // Nothing changes, but the list would tell a sandboxed program which files
            // are decoys (and the incidents, which of its reads tripped one).
            Request::Canaries | Request::Incidents => true,
        }
    }
}

fn yes() -> bool {
    true
}

/// One response line: `{"result":"ok","kind":…,"data":…}` or
/// `{"result":"error","message":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Response {
    /// Done; what it returned.
    Ok(Reply),
    /// Not done, and why.
    Error {
        /// A sentence for a person.
        message: String,
    },
}

impl Response {
    /// An error response.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error {
            message: message.into(),
        }
    }
}

/// What a successful request returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Reply {
    /// For [`Request::Status`].
    Status(StatusReply),
    /// For [`Request::Projects`].
    Projects(Vec<ProjectInfo>),
    /// For [`Request::Pending`].
    Pending(Vec<PendingItem>),
    /// For [`Request::Answer`].
    Answered(AnswerReply),
    /// For [`Request::AddProject`], [`Request::TakeOver`] and [`Request::Prefer`]: the
    /// project now.
    Project(ProjectInfo),
    /// For [`Request::RemoveProject`]: the directory no longer served.
    Removed(PathBuf),
    /// For [`Request::Pause`]: the pause now.
    Paused(PauseState),
    /// For [`Request::Resume`].
    Resumed(ResumeReply),
    /// For [`Request::OpenSettings`]: the window was asked to show.
    Shown,
    /// For [`Request::Policy`]: the core's policy view (`ops::show_policy`); boxed, being
    /// many times the size of any other reply.
    Policy(Box<PolicyView>),
    /// For [`Request::ChangePolicy`] and [`Request::ChangePolicyAll`].
    PolicyChanged(Changed),
    /// For [`Request::CheckEntry`].
    EntryChecked(EntryCheck),
    /// For [`Request::UndoPolicy`].
    PolicyUndone(Undone),
    /// For [`Request::Learn`]: the review (`ops::learn`), and what saving it did.
    Learned {
        /// The proposals, what was left out, the target file and its lists now.
        review: LearnReview,
        /// For `save`: the write (None when there was nothing to save); boxed, as a
        /// `Response` is moved whole and this is its largest part.
        saved: Option<Box<Changed>>,
    },
    /// For [`Request::Sessions`].
    Sessions(Vec<SessionSummary>),
    /// For [`Request::PluginWarnings`].
    PluginWarnings(Vec<PluginWarning>),
    /// For [`Request::Grants`]: the live grants (`ops::grants`).
    Grants(Vec<Grant>),
    /// For [`Request::Revoke`]: the grant revoked.
    Revoked(u64),
    /// For [`Request::Activity`]: the entries (`ops::activity`), newest last.
    Activity(Vec<ActivityEntry>),
    /// For [`Request::ActivityPage`].
    ActivityPage(ActivityPage),
    /// For [`Request::ExplainActivity`].
    ActivityExplained(Option<AnsweringEntry>),
    /// For [`Request::ActivityPreview`].
    ActivityPreview(GrantPreview),
    /// For [`Request::AppSettings`].
    AppSettings(AppSettingsView),
    /// For [`Request::ChangeAppSetting`].
    AppSettingChanged(AppSettingChanged),
    /// For [`Request::Journal`]: the journaled writes, oldest first.
    Journal(Vec<JournalItem>),
    /// For [`Request::JournalUndo`]: each write's outcome, in the order undone.
    JournalUndone(Vec<UndoOutcome>),
    /// For [`Request::Canaries`]: the canaries, sorted.
    Canaries(Vec<CanaryItem>),
    /// For [`Request::CanaryAdd`].
    CanaryAdded(CanaryAdded),
    /// For [`Request::CanaryRemove`]: the path dropped.
    CanaryRemoved(PathBuf),
    /// For [`Request::Incidents`]: the incidents, oldest first.
    Incidents(Vec<Incident>),
    /// For [`Request::IncidentAct`]: the incident as it is after.
    IncidentActed(Incident),
    /// For [`Request::PromptPreview`].
    PromptPreview(GrantPreview),
    /// For [`Request::Remotes`]: every remote machine, by name.
    Remotes(Vec<RemoteView>),
    /// For [`Request::RemoteAdd`]: the remote as it starts.
    RemoteAdded(RemoteView),
    /// For [`Request::RemoteRemove`]: the name removed.
    RemoteRemoved(String),
    /// For [`Request::Web`], [`Request::WebOn`] and [`Request::WebOff`]: the phone page now.
    Web(WebStatus),
    /// For [`Request::WebPair`].
    WebPairing(WebPairing),
    /// For [`Request::WebDevices`]: the paired devices, oldest first.
    WebDevices(Vec<DeviceInfo>),
    /// For [`Request::WebRevoke`]: the device ended.
    WebRevoked(DeviceInfo),
}

/// The running instance at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReply {
    /// Its pid.
    pub pid: u32,
    /// Its version.
    pub version: String,
    /// Projects served.
    pub projects: usize,
    /// Of those, how many another presenter holds (launchers do not reach us).
    pub conflicts: usize,
    /// Prompts waiting for an answer.
    pub pending: usize,
    /// Whether prompts are paused.
    pub pause: PauseState,
}

/// A pending prompt, flattened for scripts and tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingItem {
    /// The id to answer it by.
    pub id: PromptId,
    /// The run (connection) it came from.
    pub connection: ConnId,
    /// The project directory.
    pub project: PathBuf,
    /// The opencode session, when the launcher named one.
    pub session: Option<String>,
    /// `filesystem` or `network`.
    pub kind: String,
    /// `read`, `write`, `connect`, `bind`, …
    pub operation: String,
    /// The resolved path (filesystem).
    pub path: Option<String>,
    /// The path as the program passed it (filesystem).
    pub requested_path: Option<String>,
    /// The address (network), e.g. `127.0.0.1:9`.
    pub target: Option<String>,
    /// Why the policy did not allow it (`allow_miss`, `deny_match`).
    pub reason: Option<String>,
    /// The held syscall.
    pub syscall: Option<String>,
    /// The process's pid.
    pub pid: Option<u32>,
    /// The process's executable.
    pub exe: Option<String>,
    /// The process's working directory.
    pub cwd: Option<String>,
    /// What "allow for session" would cover (filesystem).
    pub session_scope: Option<PathBuf>,
    /// When it arrived (ms since the epoch).
    pub received_ms: u64,
    /// How long it has been waiting, in ms, when the reply was made.
    pub age_ms: u64,
    /// The command behind the request (secrets masked): the asking process's command and
    /// the chain from the command landstrip started, and what opencode knows about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Arc<Origin>>,
    /// The secret its run read earlier (`path`, `what`, `at_ms`), on a network request or
    /// a write outside the project of a run after a secret (docs/ARCHITECTURE.md, "After a
    /// secret").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_secret: Option<SecretRead>,
    /// Why allowing it could not be undone (`cannot be undone: too large`, a rename…),
    /// from the write journal; absent when it could be, or nothing is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// The remote machine it waits on (its name here); absent for this machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl PendingItem {
    /// The item for a prompt, its age taken at `now_ms`.
    pub fn from_prompt(prompt: &PendingPrompt, now_ms: u64) -> Self {
        let query = &prompt.query;
        let (kind, operation, path, requested_path, target, reason) = match &query.kind {
            QueryKind::Filesystem(fs) => (
                "filesystem",
                fs.operation.as_str().to_owned(),
                Some(fs.path.clone()),
                fs.requested_path.clone(),
                None,
                fs.reason.as_ref().map(|r| r.as_str().to_owned()),
            ),
            QueryKind::Network(net) => (
                "network",
                net.operation.as_str().to_owned(),
                None,
                None,
                Some(net.target.clone()),
                None,
            ),
        };
        let process = query.process.clone().unwrap_or_default();
        Self {
            id: prompt.id,
            connection: prompt.connection,
            project: prompt.project.clone(),
            session: prompt.session.clone(),
            kind: kind.to_owned(),
            operation,
            path,
            requested_path,
            target,
            reason,
            syscall: query.syscall.clone(),
            pid: process.pid,
            exe: process.exe,
            cwd: process.cwd,
            session_scope: prompt.session_scope.clone(),
            received_ms: prompt.received_ms,
            age_ms: now_ms.saturating_sub(prompt.received_ms),
            origin: prompt.origin.clone(),
            after_secret: prompt.after_secret.clone(),
            undo: None,
            host: prompt.host_name().map(str::to_owned),
        }
    }

    /// For a request of a run after a secret, the line that names the read: "3: after a
    /// secret: its run read PATH (WHAT) 4s before", the time as `age` writes it.
    pub fn after_secret_line(&self, age: &dyn Fn(u64) -> String) -> Option<String> {
        let read = self.after_secret.as_ref()?;
        let before = age(self.received_ms.saturating_sub(read.at_ms));
        Some(format!(
            "{}: after a secret: its run read {} ({}) {before} before\n",
            self.id, read.path, read.what
        ))
    }
}

/// What answering a prompt did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerReply {
    /// The prompt answered.
    pub id: PromptId,
    /// The action sent to landstrip.
    pub action: Action,
    /// The session grant added, if any.
    pub grant: Option<u64>,
    /// The policy file changed, if any.
    pub persisted: Option<Persisted>,
    /// Other pending prompts the new grant answered too.
    pub also_answered: Vec<PromptId>,
    /// Pending prompts the new session grant's scope holds but left waiting, and why.
    #[serde(default)]
    pub left_waiting: Vec<LeftWaiting>,
}

/// An entry added to a policy file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persisted {
    /// The sandbox.json changed.
    pub file: PathBuf,
    /// The entry added.
    pub entry: String,
}

/// What resuming did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeReply {
    /// Whether prompts were paused.
    pub was_paused: bool,
    /// Queries denied during the pause that just ended.
    pub denied: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::answer::ChoiceKey;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
        value: &T,
    ) -> serde_json::Value {
        let text = serde_json::to_string(value).unwrap();
        assert_eq!(&serde_json::from_str::<T>(&text).unwrap(), value, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn requests_have_a_flat_wire_form() {
        assert_eq!(round_trip(&Request::Status), json!({"request": "status"}));
        assert_eq!(
            round_trip(&Request::Answer {
                id: 7,
                answer: AnswerRequest {
                    entry: Some("out".into()),
                    wider: true,
                    ..AnswerRequest::new(ChoiceKey::Project)
                }
            }),
            json!({"request": "answer", "id": 7, "choice": "project", "entry": "out", "wider": true})
        );
        assert_eq!(
            round_trip(&Request::Answer {
                id: 7,
                answer: AnswerRequest::once()
            }),
            json!({"request": "answer", "id": 7, "choice": "once"})
        );
        // The limits and never keep it flat, as the dialog sends them.
        let limited = AnswerRequest {
            lifetime: crate::decision::grants::Lifetime::parse("15m"),
            program: true,
            ..AnswerRequest::session()
        };
        assert_eq!(
            round_trip(&Request::Answer {
                id: 8,
                answer: limited
            }),
            json!({"request": "answer", "id": 8, "choice": "session", "for": "15m", "program": true})
        );
        let never = AnswerRequest {
            global: true,
            scope: Some(crate::decision::scope::ScopeKind::Parent),
            ..AnswerRequest::never()
        };
        assert_eq!(
            round_trip(&Request::Answer {
                id: 9,
                answer: never
            }),
            json!({"request": "answer", "id": 9, "choice": "never", "scope": "parent", "global": true})
        );
        let parse = |v: serde_json::Value| serde_json::from_value::<Request>(v).unwrap();
        assert_eq!(
            parse(json!({"request": "add_project", "dir": "/p"})),
            Request::AddProject {
                dir: "/p".into(),
                persist: true
            }
        );
        assert_eq!(
            parse(json!({"request": "pending"})),
            Request::Pending { wait: false }
        );
        assert_eq!(
            parse(json!({"request": "pause"})),
            Request::Pause { secs: None }
        );
        assert!(serde_json::from_value::<Request>(json!({"request": "frob"})).is_err());
        assert!(
            serde_json::from_value::<Request>(json!({"request": "answer", "id": 1})).is_err(),
            "an answer needs a choice"
        );
    }

    #[test]
    fn policy_grants_and_activity_requests_have_a_flat_wire_form() {
        use crate::policy::change::{BoolField, ListField};
        let parse = |v: serde_json::Value| serde_json::from_value::<Request>(v);
        let add = Request::ChangePolicy {
            file: PolicyFile::Project("/p".into()),
            change: PolicyChange::Add {
                list: "allowWrite".parse::<ListField>().unwrap(),
                entry: "out".into(),
            },
            allow_broad: false,
        };
        let wire = round_trip(&add);
        assert_eq!(wire["request"], "change_policy");
        assert_eq!(wire["file"], "project");
        assert_eq!(wire["dir"], "/p");
        assert_eq!(wire["op"], "add");
        assert_eq!(wire["entry"], "out");
        let set = Request::ChangePolicy {
            file: PolicyFile::Global,
            change: PolicyChange::Set {
                field: BoolField::AllowNetwork,
                value: true,
            },
            allow_broad: false,
        };
        assert_eq!(round_trip(&set)["file"], "global");
        assert!(
            round_trip(&set).get("allow_broad").is_none(),
            "false is left out"
        );
        let replace = parse(
            json!({"request": "change_policy", "file": "global", "op": "replace",
            "list": "allowRead", "old": "~/a", "new": "~", "allow_broad": true}),
        )
        .unwrap();
        assert_eq!(
            replace,
            Request::ChangePolicy {
                file: PolicyFile::Global,
                change: PolicyChange::Replace {
                    list: "allowRead".parse().unwrap(),
                    old: "~/a".into(),
                    new: "~".into(),
                },
                allow_broad: true,
            }
        );
        assert_eq!(
            round_trip(&Request::UndoPolicy),
            json!({"request": "undo_policy"})
        );
        assert!(
            parse(
                json!({"request": "change_policy", "file": "global", "op": "add",
                "list": "allowEverything", "entry": "x"})
            )
            .is_err(),
            "an unknown list is refused on the wire"
        );
        assert_eq!(
            round_trip(&Request::Policy { dir: "/p".into() }),
            json!({"request": "policy", "dir": "/p"})
        );
        assert_eq!(round_trip(&Request::Grants), json!({"request": "grants"}));
        assert_eq!(
            round_trip(&Request::Revoke { id: 3 }),
            json!({"request": "revoke", "id": 3})
        );
        assert_eq!(
            parse(json!({"request": "activity", "decision": "deny", "limit": 5})).unwrap(),
            Request::Activity {
                filter: ActivityFilter {
                    decision: Some(crate::activity::Decision::Deny),
                    limit: Some(5),
                    ..ActivityFilter::default()
                }
            }
        );
    }

    fn learn_request(save: bool) -> Request {
        Request::Learn {
            dir: "/p".into(),
            learn: LearnRequest {
                session: Some("ses_1".into()),
                since_ms: None,
                until_ms: Some(9),
                target: crate::decision::scope::PolicyTarget::Project,
            },
            save,
        }
    }

    #[test]
    fn learn_has_a_flat_wire_form_and_only_saving_changes_anything() {
        assert_eq!(
            round_trip(&learn_request(true)),
            json!({"request": "learn", "dir": "/p", "session": "ses_1", "until_ms": 9,
                "target": "project", "save": true})
        );
        let looking: Request = serde_json::from_value(
            json!({"request": "learn", "dir": "/p", "target": "global", "since_ms": 5}),
        )
        .unwrap();
        assert!(!looking.changes_state());
        let Request::Learn { learn, save, .. } = looking else {
            panic!("not a learn request")
        };
        assert!(!save);
        assert_eq!(learn.since_ms, Some(5));
        assert_eq!(learn.target, crate::decision::scope::PolicyTarget::Global);
    }

    #[test]
    fn only_looking_requests_leave_everything_as_it_was() {
        let every = [
            (Request::Status, false),
            (Request::Policy { dir: "/p".into() }, false),
            (Request::Grants, false),
            (
                Request::Activity {
                    filter: ActivityFilter::default(),
                },
                false,
            ),
            (
                Request::ChangePolicy {
                    file: PolicyFile::Global,
                    change: PolicyChange::Set {
                        field: crate::policy::change::BoolField::Enabled,
                        value: false,
                    },
                    allow_broad: false,
                },
                true,
            ),
            (
                Request::ChangePolicy {
                    file: PolicyFile::Project("/p".into()),
                    change: PolicyChange::Remove {
                        list: "allowRead".parse().unwrap(),
                        entry: "x".into(),
                    },
                    allow_broad: false,
                },
                true,
            ),
            (Request::Revoke { id: 1 }, true),
            (Request::UndoPolicy, true),
            (Request::AppSettings, false),
            (
                Request::ChangeAppSetting {
                    change: AppSettingChange::NotificationSound(false),
                },
                true,
            ),
            (learn_request(false), false),
            (learn_request(true), true),
            (Request::Projects, false),
            (Request::Pending { wait: false }, false),
            (Request::Pending { wait: true }, false),
            (
                Request::Answer {
                    id: 1,
                    answer: AnswerRequest::once(),
                },
                true,
            ),
            (
                Request::Answer {
                    id: 1,
                    answer: AnswerRequest::new(ChoiceKey::Deny),
                },
                true,
            ),
            (
                Request::AddProject {
                    dir: "/p".into(),
                    persist: false,
                },
                true,
            ),
            (
                Request::RemoveProject {
                    dir: "/p".into(),
                    persist: false,
                },
                true,
            ),
            (Request::TakeOver { dir: "/p".into() }, true),
            (
                Request::Prefer {
                    dir: "/p".into(),
                    prompts: PromptsGo::Here,
                },
                true,
            ),
            (Request::Pause { secs: None }, true),
            (Request::Resume, true),
            (
                Request::OpenSettings {
                    show: UiRequest::Settings {
                        view: None,
                        project: None,
                    },
                },
                true,
            ),
        ];
        for (request, changes) in every {
            assert_eq!(request.changes_state(), changes, "{request:?}");
        }
    }

    #[test]
    fn app_setting_requests_have_a_typed_wire_form() {
        assert_eq!(
            round_trip(&Request::ChangeAppSetting {
                change: AppSettingChange::PromptTimeout(Some(30))
            }),
            json!({"request": "change_app_setting", "change": {"key": "promptTimeout", "value": 30}})
        );
        assert_eq!(
            round_trip(&Request::ChangeAppSetting {
                change: AppSettingChange::PromptTimeout(None)
            }),
            json!({"request": "change_app_setting", "change": {"key": "promptTimeout", "value": null}})
        );
        assert_eq!(
            round_trip(&Request::AppSettings),
            json!({"request": "app_settings"})
        );
        let parse = |v: serde_json::Value| serde_json::from_value::<Request>(v);
        assert!(
            parse(json!({"request": "change_app_setting", "change": {"key": "frob", "value": 1}}))
                .is_err(),
            "an unknown key is refused on the wire"
        );
        assert!(
            parse(json!({"request": "change_app_setting",
                "change": {"key": "notificationSound", "value": "yes"}}))
            .is_err(),
            "a wrongly typed value is refused on the wire"
        );
    }

    #[test]
    fn responses_have_a_flat_wire_form() {
        let ok = Response::Ok(Reply::Removed("/p".into()));
        assert_eq!(
            round_trip(&ok),
            json!({"result": "ok", "kind": "removed", "data": "/p"})
        );
        assert_eq!(
            round_trip(&Response::Ok(Reply::Pending(Vec::new()))),
            json!({"result": "ok", "kind": "pending", "data": []})
        );
        assert_eq!(
            round_trip(&Response::error("no")),
            json!({"result": "error", "message": "no"})
        );
    }

    /// Every typed view a reply carries reads back into the same value and writes the
    /// same bytes again: what `ctl --json` prints is what the instance sent.
    #[test]
    fn typed_replies_read_back_byte_for_byte() {
        use crate::activity::{Decider, Outcome};
        use crate::decision::grants::{Effect, GrantKey, GrantScope, Lifetime};
        use crate::decision::scope::PolicyTarget;
        use crate::policy::view::policy_view;
        use crate::policy::FsList;
        use crate::surfaces::insights::{Learned, LeftOut, Proposal};
        use crate::surfaces::ops::CurrentList;
        use crate::wire::protocol::{FsOperation, NetOperation};

        let same_bytes = |reply: Reply| {
            let text = serde_json::to_string(&Response::Ok(reply.clone())).unwrap();
            let back: Response = serde_json::from_str(&text).unwrap();
            assert_eq!(back, Response::Ok(reply), "{text}");
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
            // And the same bytes as before the replies were typed, when the view went out
            // as a JSON value.
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        };

        let root = tempfile::tempdir().unwrap();
        let (home, project) = (root.path().join("home"), root.path().join("p"));
        let global = home.join(".config/opencode/sandbox.json");
        std::fs::create_dir_all(global.parent().unwrap()).unwrap();
        std::fs::write(
            &global,
            r#"{"windows": {"allowLoopback": true}, "enabled": true,
                "network": {"allowNetwork": true, "allowedDomains": ["a.example"]},
                "filesystem": {"allowWrite": ["~", "~/out"]}, "shell": {"readAccess": "policy"}}"#,
        )
        .unwrap();
        let mut view = policy_view(&project, &home, &[]);
        let effective = view.effective.as_mut().expect("both files usable");
        let entry = &mut effective.lists[2].entries[0];
        (entry.hits, entry.last_hit_ms) = (Some(3), Some(1_764_588_605_000));
        assert!(effective.platform.iter().any(|p| p.value.is_some()));
        same_bytes(Reply::Policy(Box::new(view)));
        std::fs::create_dir_all(project.join(".opencode")).unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            "{\n  \"enabled\": tru",
        )
        .unwrap();
        let view = policy_view(&project, &home, &[]);
        assert!(view.effective.is_none());
        same_bytes(Reply::Policy(Box::new(view)));

        let key = GrantKey {
            project: "/p".into(),
            session: Some("ses_1".into()),
        };
        same_bytes(Reply::Grants(vec![
            Grant {
                id: 4,
                key: key.clone(),
                scope: GrantScope::Filesystem {
                    operation: FsOperation::Write,
                    root: "/p/out".into(),
                },
                effect: Effect::Allow,
                lifetime: None,
                run: None,
                program: None,
                confirmed_for: Some("/p/out/id_rsa".into()),
                after_secret: false,
                deadline: None,
                remaining_ms: None,
            },
            Grant {
                id: 5,
                key: GrantKey {
                    session: None,
                    ..key
                },
                scope: GrantScope::Network {
                    operation: NetOperation::Other("sendto".into()),
                    target: "127.0.0.1:9".into(),
                },
                effect: Effect::Deny,
                lifetime: Some(Lifetime::For(std::time::Duration::from_secs(5400))),
                run: Some(2),
                program: Some("/usr/bin/python3".into()),
                confirmed_for: None,
                after_secret: true,
                deadline: None,
                remaining_ms: Some(61_500),
            },
        ]));

        let logged = ActivityEntry {
            ts: 1_764_588_605_000,
            project: "/p".into(),
            session: None,
            kind: "filesystem".into(),
            operation: "write".into(),
            subject: "/p/x".into(),
            exe: Some("/bin/sh".into()),
            pid: Some(7),
            outcome: Outcome::Deny,
            by: Decider::SessionGrant,
            detail: None,
            command: Some("sh -c x".into()),
            chain: vec!["sh -c x".into()],
        };
        same_bytes(Reply::Activity(vec![
            logged.clone(),
            ActivityEntry {
                session: Some("ses_1".into()),
                exe: None,
                pid: None,
                detail: Some("scope /p".into()),
                command: None,
                chain: Vec::new(),
                ..logged
            },
        ]));

        let review = LearnReview {
            file: "/p/.opencode/sandbox.json".into(),
            shown: "/p/.opencode/sandbox.json".into(),
            target: PolicyTarget::Project,
            current: vec![CurrentList {
                list: FsList::AllowWrite,
                entries: vec!["out".into()],
            }],
            considered: 5,
            learned: Learned {
                proposals: vec![Proposal {
                    list: FsList::AllowWrite,
                    entry: "/var/tmp/build".into(),
                    root: "/var/tmp/build".into(),
                    covers: 2,
                    examples: vec!["/var/tmp/build/a".into()],
                }],
                left_out: vec![LeftOut {
                    path: "/h/.ssh/config".into(),
                    reason: "sensitive".into(),
                }],
            },
        };
        same_bytes(Reply::Learned {
            review: review.clone(),
            saved: None,
        });
        same_bytes(Reply::Learned {
            review,
            saved: Some(Box::new(Changed {
                file: "/p/.opencode/sandbox.json".into(),
                written: true,
                description: "add".into(),
                also_answered: vec![3],
                plugin_conflicts: vec![],
            })),
        });
    }
}
