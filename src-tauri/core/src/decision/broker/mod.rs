//! The broker: decides what it can by itself, keeps everything else as pending prompts
//! the UI answers by id, and makes sure every held query is answered exactly once or
//! withdrawn with its connection.

mod after_secret;
mod answering;
mod canary;
mod connection;
mod decide;
mod journaling;
mod pause;
mod recent_ids;
mod remote;
mod timeouts;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, watch};

pub use connection::Connection;
pub use decide::{decide, Verdict};
use pause::Pause;
pub use pause::PauseState;
pub use recent_ids::{RecentIds, REMEMBERED_IDS};
pub use remote::{RemoteLink, RemotePrompt};
// Below the broker, so the answer rules (which the broker calls) can read a prompt.
pub use crate::decision::prompt::{ConnId, PendingPrompt, PromptId, RemoteHost};

use crate::activity::{now_ms, ActivityEntry, ActivityLog, Decider, Outcome};
use crate::app_settings::AfterSecretMode;
use crate::decision::after_secret::{AfterSecrets, SecretRead};
use crate::decision::answer::{self, AnswerRequest, Decision, RuleError};
use crate::decision::grants::{
    Asker, Confirmed, Effect, Grant, GrantKey, GrantScope, SessionGrants,
};
use crate::decision::own_state::OwnState;
use crate::decision::scope::{session_scope, PolicyTarget};
use crate::origin::{OpencodeStore, Origin};
use crate::policy::project::Project;
use crate::policy::{self, PolicyError};
use crate::wire::protocol::{Action, Query, QueryId, QueryKind, TerminalTrap};

/// How many prompts one connection may hold open at once; past that its new queries are
/// denied at once, so a flood cannot bury the user.
pub const MAX_PENDING_PER_CONNECTION: usize = 1024;

/// What travels from the broker to a connection's task.
#[derive(Debug)]
pub enum Outbound {
    /// Write this answer.
    Answer(QueryId, Action),
}

/// What a change to the pending set was.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BrokerEvent {
    /// A new prompt is waiting.
    Added(PendingPrompt),
    /// A prompt is gone: answered, timed out, or withdrawn.
    Resolved {
        /// Which prompt.
        id: PromptId,
        /// What happened to it.
        outcome: Outcome,
        /// Who settled it.
        by: Decider,
    },
    /// A terminal trap (a completed denial, a launch failure, …) was recorded. It is
    /// never answered; the UI may summarise it.
    Reported {
        /// The connection (run) it came from.
        connection: ConnId,
        /// The project directory.
        project: PathBuf,
        /// The opencode session, when the launcher named one.
        session: Option<String>,
        /// The trap itself.
        trap: Arc<TerminalTrap>,
        /// How many terminal traps this run has reported so far, this one included.
        count: u64,
    },
    /// A sandboxed program read a canary, or a person resumed or killed the run it
    /// stopped: the incident as it is now.
    Incident(crate::decision::canary::Incident),
}

/// Why an answer could not be given.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The prompt was already answered or withdrawn.
    #[error("prompt {0} is no longer pending")]
    NotPending(PromptId),
    /// Another surface is answering the prompt right now (writing its policy entry).
    #[error("prompt {0} is being answered elsewhere")]
    Busy(PromptId),
    /// The answer breaks a rule ([`crate::decision::answer::resolve`]); the prompt stays pending.
    #[error(transparent)]
    Rules(#[from] RuleError),
    /// The policy file could not be changed; the prompt stays pending.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The remote machine's app refused the answer (its rules); the prompt stays pending.
    #[error("the remote refused: {0}")]
    RemoteRefused(String),
    /// The answer did not reach the remote machine, or its reply did not come back.
    #[error("not delivered: {0}")]
    NotDelivered(String),
    /// The phone page may not allow a sensitive or after-a-secret request (the
    /// `webSensitive` setting is `deny`); the prompt stays pending.
    #[error("prompt {0} is sensitive or follows a secret: answer it at the desktop")]
    AtTheDesktop(PromptId),
}

/// Who answers a prompt, as the activity records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answerer {
    /// A person at the desktop: the dialog, a notification, `ctl`.
    User,
    /// A person on the phone page, from a paired device.
    Web {
        /// The device's name (recorded in the activity's detail).
        device: String,
        /// The `webSensitive` setting allows allowing a sensitive or after-a-secret
        /// request from the phone (with the page's confirmation step).
        marked_allowed: bool,
    },
}

impl Answerer {
    /// The activity's `by`.
    pub fn decider(&self) -> Decider {
        match self {
            Answerer::User => Decider::User,
            Answerer::Web { .. } => Decider::Web,
        }
    }
}

/// What answering did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answered {
    /// The action sent to landstrip.
    pub action: Action,
    /// The session grant added, if any.
    pub grant: Option<u64>,
    /// The policy file changed and the entry added, if any.
    pub persisted: Option<(PathBuf, String)>,
    /// Other pending prompts the new grant answered too.
    pub also_answered: Vec<PromptId>,
    /// Pending prompts an allow-for-session grant's scope holds that it did not answer.
    pub left_waiting: Vec<LeftWaiting>,
}

/// A prompt a session grant's scope holds but left waiting, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftWaiting {
    /// The prompt still waiting.
    pub id: PromptId,
    /// Why the grant did not answer it, in words.
    pub reason: String,
}

struct Pending {
    prompt: PendingPrompt,
    project: Arc<Project>,
    key: GrantKey,
    query_id: QueryId,
    /// An answer owns the prompt while it applies its side effect: no other path may
    /// settle it until that answer settles or releases it.
    claimed: bool,
    /// The prompt timeout's task, cancelled when the prompt goes.
    timeout: Option<tokio::task::AbortHandle>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(timeout) = self.timeout.take() {
            timeout.abort();
        }
    }
}

struct ConnState {
    tx: mpsc::UnboundedSender<Outbound>,
    open_prompts: usize,
}

#[derive(Default)]
struct Table {
    prompts: BTreeMap<PromptId, Pending>,
    conns: HashMap<ConnId, ConnState>,
    next_prompt: PromptId,
}

struct Inner {
    grants: SessionGrants,
    activity: Arc<ActivityLog>,
    table: Mutex<Table>,
    events: broadcast::Sender<BrokerEvent>,
    timeout: Mutex<Option<Duration>>,
    closed: AtomicBool,
    next_conn: AtomicU64,
    pause: Mutex<Option<Pause>>,
    pause_changes: watch::Sender<PauseState>,
    /// How many runs (connections) are open now.
    runs: watch::Sender<usize>,
    /// The policy texts the app last wrote (answers here, the shared operations too).
    writer: policy::PolicyWriter,
    /// Held through a change that can settle prompts and the sweep after it.
    sweeping: Mutex<()>,
    /// Where a prompt's origin is read: the process table and opencode's store.
    origins: Mutex<OriginSources>,
    /// The app's own state, hard-denied to sandboxed programs (set once at start).
    own_state: std::sync::OnceLock<OwnState>,
    /// Which runs and sessions read a secret, and what.
    secrets: AfterSecrets,
    /// What becomes of their network requests: asked (false) or denied (true).
    after_secret_deny: AtomicBool,
    /// The write journal (set once at start; none: nothing is journaled).
    journal: std::sync::OnceLock<Arc<crate::journal::Journal>>,
    /// The canaries and incidents (set once at start; an empty list until then).
    canaries: std::sync::OnceLock<crate::decision::canary::Canaries>,
    /// The remote machines' prompts (`remote.rs`), apart from the local table.
    remote: Mutex<remote::RemoteTable>,
    /// When this broker began, in ms since the epoch: a run's key is `<this>.<conn>`
    /// (the journal's own start when there is a journal).
    started_ms: u64,
}

/// Where the command behind a prompt is read.
#[derive(Debug, Clone)]
struct OriginSources {
    proc: PathBuf,
    opencode: Option<Arc<OpencodeStore>>,
}

/// The turn to change what the automatic rules say and sweep after it: held by an answer
/// from before its grant or policy write until after its sweep, by the shared operations
/// around a policy write and its sweep, and by the file watch around its check and
/// sweep. So no other sweep settles a prompt between a change and the sweep of the one
/// that made it, and that one's reply lists everything its change answered.
pub struct SweepTurn<'a> {
    _held: std::sync::MutexGuard<'a, ()>,
}

/// The broker. Cheap to clone; every clone is the same broker.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<Inner>,
}

impl Broker {
    /// A broker recording its decisions in `activity`.
    pub fn new(activity: Arc<ActivityLog>) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                grants: SessionGrants::default(),
                activity,
                table: Mutex::new(Table::default()),
                events,
                timeout: Mutex::new(None),
                closed: AtomicBool::new(false),
                next_conn: AtomicU64::new(1),
                pause: Mutex::new(None),
                pause_changes: watch::channel(PauseState {
                    paused: false,
                    remaining_secs: None,
                    denied: 0,
                })
                .0,
                runs: watch::channel(0).0,
                writer: policy::PolicyWriter::default(),
                sweeping: Mutex::new(()),
                origins: Mutex::new(OriginSources {
                    proc: PathBuf::from("/proc"),
                    opencode: None,
                }),
                own_state: std::sync::OnceLock::new(),
                secrets: AfterSecrets::default(),
                after_secret_deny: AtomicBool::new(false),
                journal: std::sync::OnceLock::new(),
                canaries: std::sync::OnceLock::new(),
                remote: Mutex::new(remote::RemoteTable::default()),
                started_ms: now_ms(),
            }),
        }
    }

    /// Guards the app's own state from sandboxed programs from now on; the first call
    /// wins (it is the app's, set once at start). False when it was already set.
    pub fn set_own_state(&self, state: OwnState) -> bool {
        self.inner.own_state.set(state).is_ok()
    }

    /// The app's own state the rules guard ([`OwnState::NONE`] until set).
    pub fn own_state(&self) -> &OwnState {
        static NONE: OwnState = OwnState::NONE;
        self.inner.own_state.get().unwrap_or(&NONE)
    }

    /// Reads what opencode knows about a prompt's call from `store` (none until set: a
    /// broker of a test reads no real user's store).
    pub fn set_opencode_store(&self, store: Option<OpencodeStore>) {
        self.inner
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .opencode = store.map(Arc::new);
    }

    /// Where processes are read (`/proc`).
    fn origin_proc(&self) -> PathBuf {
        self.inner
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .proc
            .clone()
    }

    /// A run's key, `<start ms>.<connection id>`, as `ctl journal` and `ctl incidents`
    /// name runs.
    pub fn run_key(&self, conn: ConnId) -> String {
        match self.journal() {
            Some(journal) => journal.run_key(conn),
            None => format!("{}.{conn}", self.inner.started_ms),
        }
    }

    /// The command behind a query about to become a prompt: read from `/proc` and
    /// opencode's store, on the caller's (the connection's reader) thread.
    fn read_origin(&self, query: &Query, session: Option<&str>) -> Option<Arc<Origin>> {
        let sources = self
            .inner
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Origin::read(
            &sources.proc,
            query.process.as_ref(),
            session,
            sources.opencode.as_deref(),
        )
        .map(Arc::new)
    }

    /// The policy texts this app last wrote, for the file watch to tell its own writes.
    pub fn own_writes(&self) -> &policy::OwnWrites {
        self.inner.writer.own_writes()
    }

    /// The one owner of the app's policy writes (answers, the shared operations, undo).
    pub fn writer(&self) -> &policy::PolicyWriter {
        &self.inner.writer
    }

    /// Waits for the turn to change the rules and sweep (see [`SweepTurn`]). It is not
    /// reentrant: a thread holding it must not take it again, nor call `answer` (which
    /// takes it itself).
    pub fn sweep_turn(&self) -> SweepTurn<'_> {
        SweepTurn {
            _held: self
                .inner
                .sweeping
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new run's connection; answers for it arrive on `tx`.
    pub fn connect(
        &self,
        project: Arc<Project>,
        tx: mpsc::UnboundedSender<Outbound>,
    ) -> Connection {
        let id = self.inner.next_conn.fetch_add(1, Ordering::Relaxed);
        {
            let mut table = self.table();
            table.conns.insert(
                id,
                ConnState {
                    tx,
                    open_prompts: 0,
                },
            );
            // Under the table's lock, so counts are announced in the order they happened.
            self.inner.runs.send_replace(table.conns.len());
        }
        Connection::new(self.clone(), id, project)
    }

    /// Follows how many runs (connections to any served project) are open: the dialog
    /// keeps its window ready while there is one.
    pub fn subscribe_runs(&self) -> watch::Receiver<usize> {
        self.inner.runs.subscribe()
    }

    /// Changes to the pending set. A receiver that lags should re-read [`Broker::pending`].
    pub fn subscribe(&self) -> broadcast::Receiver<BrokerEvent> {
        self.inner.events.subscribe()
    }

    /// Every pending prompt, this machine's and the remote machines', oldest first.
    pub fn pending(&self) -> Vec<PendingPrompt> {
        let mut all: Vec<PendingPrompt> = self
            .table()
            .prompts
            .values()
            .map(|p| p.prompt.clone())
            .collect();
        let remote = self.remote_pending();
        if !remote.is_empty() {
            all.extend(remote);
            all.sort_by_key(|p| p.id);
        }
        all
    }

    /// The live session grants.
    pub fn grants(&self) -> Vec<Grant> {
        self.inner.grants.list()
    }

    /// Revokes a session grant; false if it was not live.
    pub fn revoke_grant(&self, id: u64) -> bool {
        self.inner.grants.revoke(id)
    }

    /// The activity log.
    pub fn activity(&self) -> &ActivityLog {
        &self.inner.activity
    }

    /// Whether the broker has shut down (every new query is denied).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Called by [`Connection`]: a query the rules could not settle becomes a prompt.
    /// The command behind it is read first, outside the table's lock, unless the run
    /// already has too many prompts open (then it is denied at once, unread).
    fn open_prompt(
        &self,
        conn: ConnId,
        project: &Arc<Project>,
        key: &GrantKey,
        query: Arc<Query>,
    ) -> Option<Action> {
        let flooded = {
            let table = self.table();
            table.conns.get(&conn)?.open_prompts >= MAX_PENDING_PER_CONNECTION
        };
        if flooded {
            self.inner.activity.record(activity_entry(
                project.dir(),
                key.session.as_deref(),
                &query,
                Outcome::Deny,
                Decider::Flood,
                None,
            ));
            return Some(Action::Deny);
        }
        let origin = self.read_origin(&query, key.session.as_deref());
        let prompt = {
            let mut table = self.table();
            // Only this connection's reader opens its prompts, so the count checked above
            // can only have gone down meanwhile.
            let state = table.conns.get_mut(&conn)?;
            state.open_prompts += 1;
            table.next_prompt += 1;
            let id = table.next_prompt;
            let after_secret = self.marking(conn, project, key, &query);
            let session_scope = match &query.kind {
                QueryKind::Filesystem(fs) => Some(session_scope(
                    Path::new(&fs.path),
                    project.dir(),
                    project.home(),
                )),
                QueryKind::Network(_) => None,
            };
            let prompt = PendingPrompt {
                id,
                connection: conn,
                project: project.dir().to_path_buf(),
                session: key.session.clone(),
                query: query.clone(),
                received_ms: now_ms(),
                session_scope,
                origin,
                after_secret,
                host: None,
            };
            table.prompts.insert(
                id,
                Pending {
                    prompt: prompt.clone(),
                    project: project.clone(),
                    key: key.clone(),
                    query_id: query.id.clone(),
                    claimed: false,
                    timeout: None,
                },
            );
            prompt
        };
        let id = prompt.id;
        let _ = self.inner.events.send(BrokerEvent::Added(prompt));
        self.arm_timeout(id);
        None
    }

    /// Called when a connection ends: its prompts are withdrawn (landstrip denies them)
    /// and the grants limited to its run end.
    fn disconnect(&self, conn: ConnId) {
        self.inner.grants.end_run(conn);
        self.inner.secrets.end_run(conn);
        let withdrawn: Vec<Pending> = {
            let mut table = self.table();
            table.conns.remove(&conn);
            self.inner.runs.send_replace(table.conns.len());
            // A claimed prompt is left to the answer applying its side effect: it sees
            // the connection gone when it settles.
            let ids: Vec<PromptId> = table
                .prompts
                .values()
                .filter(|p| p.prompt.connection == conn && !p.claimed)
                .map(|p| p.prompt.id)
                .collect();
            ids.iter()
                .filter_map(|id| table.prompts.remove(id))
                .collect()
        };
        for pending in &withdrawn {
            self.announce_withdrawn(pending);
        }
        self.journal_run_ended(conn);
    }
}

/// What the sweep needs of a pending prompt to apply the rules to it again: its id, its
/// project, its grant key, its query and its run.
type SweepCandidate = (PromptId, Arc<Project>, GrantKey, Arc<Query>, ConnId);

/// The activity record of a query's outcome.
fn activity_entry(
    project: &Path,
    session: Option<&str>,
    query: &Query,
    outcome: Outcome,
    by: Decider,
    detail: Option<String>,
) -> ActivityEntry {
    let (kind, operation, subject) = match &query.kind {
        QueryKind::Filesystem(fs) => ("filesystem", fs.operation.as_str(), fs.path.clone()),
        QueryKind::Network(net) => ("network", net.operation.as_str(), net.target.clone()),
    };
    let process = query.process.as_ref();
    ActivityEntry {
        ts: now_ms(),
        project: project.to_string_lossy().into_owned(),
        session: session.map(str::to_owned),
        kind: kind.to_owned(),
        operation: operation.to_owned(),
        subject,
        exe: process.and_then(|p| p.exe.clone()),
        pid: process.and_then(|p| p.pid),
        outcome,
        by,
        detail,
        command: None,
        chain: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u32, path: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"{id}","operation":"write","path":"{path}","reason":"allow_miss"}}"#
        )
        .into_bytes()
    }

    fn answer_to(conn: &mut Connection, line: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        conn.on_line(line, &mut out);
        out
    }

    fn setup() -> (
        tempfile::TempDir,
        Broker,
        Connection,
        mpsc::UnboundedReceiver<Outbound>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = broker.connect(Arc::new(Project::new(project, dir.path().join("home"))), tx);
        (dir, broker, conn, rx)
    }

    #[test]
    fn a_pause_denies_what_would_ask_and_counts_it() {
        let (_dir, broker, mut conn, _rx) = setup();
        broker.pause(None);
        let answer = answer_to(&mut conn, &query(1, "/elsewhere/a"));
        assert_eq!(answer, b"{\"query_id\":\"1\",\"action\":\"deny\"}\n");
        assert!(broker.pending().is_empty());
        let state = broker.pause_state();
        assert!(state.paused && state.denied == 1 && state.remaining_secs.is_none());
        broker.resume();
        assert!(
            answer_to(&mut conn, &query(2, "/elsewhere/a")).is_empty(),
            "asks again after resume"
        );
        assert_eq!(broker.pending().len(), 1);
        assert!(!broker.pause_state().paused);
    }

    #[test]
    fn a_timed_pause_ends_by_itself() {
        let (_dir, broker, mut conn, _rx) = setup();
        broker.pause(Some(Duration::ZERO));
        assert!(!broker.pause_state().paused);
        assert!(answer_to(&mut conn, &query(1, "/elsewhere/a")).is_empty());
        assert_eq!(broker.pending().len(), 1);
    }

    #[test]
    fn terminal_traps_are_announced_with_a_count_per_run() {
        let (_dir, broker, mut conn, _rx) = setup();
        let mut events = broker.subscribe();
        let info = br#"{"kind":"filesystem","state":"info","query_id":"0","operation":"write","path":"/x"}"#;
        let launch =
            br#"{"kind":"launch","code":"LAUNCH_FAILED","program":"/nope","errno":"ENOENT"}"#;
        assert!(
            answer_to(&mut conn, info).is_empty(),
            "a terminal trap is never answered"
        );
        assert!(answer_to(&mut conn, launch).is_empty());
        for (want_count, want_kind) in [(1, "filesystem"), (2, "launch")] {
            match events.try_recv().unwrap() {
                BrokerEvent::Reported {
                    connection,
                    count,
                    trap,
                    ..
                } => {
                    assert_eq!((connection, count), (conn.id(), want_count));
                    assert_eq!(trap.summary().0, want_kind);
                }
                other => panic!("expected a report, got {other:?}"),
            }
        }
        assert!(broker.pending().is_empty());
    }

    #[test]
    fn a_session_answer_never_settles_a_sensitive_request_beside_it() {
        let (_dir, broker, mut conn, mut rx) = setup();
        for (id, path) in [
            (1, "/x/keys/notes.txt"),
            (2, "/x/keys/id_rsa"),
            (3, "/x/keys/other.txt"),
        ] {
            assert!(answer_to(&mut conn, &query(id, path)).is_empty());
        }
        let pending = broker.pending();
        let (notes, key, other) = (pending[0].id, pending[1].id, pending[2].id);
        // The dialog's bulk count: only what the grant will really allow.
        assert_eq!(broker.covered_by_session_answer(notes), vec![other]);
        let answered = broker
            .answer(notes, &AnswerRequest::session())
            .expect("answered");
        assert_eq!(answered.also_answered, vec![other]);
        assert_eq!(
            answered.left_waiting.len(),
            1,
            "{:?}",
            answered.left_waiting
        );
        assert_eq!(answered.left_waiting[0].id, key);
        assert!(
            answered.left_waiting[0]
                .reason
                .contains("an SSH private key"),
            "{}",
            answered.left_waiting[0].reason
        );
        assert_eq!(
            broker.pending().iter().map(|p| p.id).collect::<Vec<_>>(),
            [key]
        );
        assert_eq!(
            answers(&mut rx),
            [
                ("\"1\"".to_owned(), Action::Allow),
                ("\"3\"".to_owned(), Action::Allow)
            ]
        );
        // A later key in the same scope asks too; a later plain file does not.
        assert!(answer_to(&mut conn, &query(4, "/x/keys/server.key")).is_empty());
        assert_eq!(
            answer_to(&mut conn, &query(5, "/x/keys/more.txt")),
            b"{\"query_id\":\"5\",\"action\":\"allow\"}\n"
        );
        assert_eq!(broker.pending().len(), 2);
    }

    #[test]
    fn a_confirmed_session_answer_to_a_key_allows_that_key_again_and_no_other() {
        let (_dir, broker, mut conn, mut rx) = setup();
        for (id, path) in [
            (1, "/x/keys/id_rsa"),
            (2, "/x/keys/id_rsa"),
            (3, "/x/keys/b.key"),
        ] {
            assert!(answer_to(&mut conn, &query(id, path)).is_empty());
        }
        let pending = broker.pending();
        assert_eq!(
            broker.covered_by_session_answer(pending[0].id),
            vec![pending[1].id]
        );
        // Unconfirmed, refused; confirmed, it answers the same key waiting beside it.
        assert!(broker
            .answer(pending[0].id, &AnswerRequest::session())
            .is_err());
        let confirmed = AnswerRequest {
            confirmed: true,
            ..AnswerRequest::session()
        };
        let answered = broker.answer(pending[0].id, &confirmed).expect("answered");
        assert_eq!(answered.also_answered, vec![pending[1].id]);
        assert_eq!(answered.left_waiting[0].id, pending[2].id);
        assert_eq!(answers(&mut rx).len(), 2);
        assert_eq!(
            answer_to(&mut conn, &query(4, "/x/keys/id_rsa")),
            b"{\"query_id\":\"4\",\"action\":\"allow\"}\n"
        );
        assert!(answer_to(&mut conn, &query(5, "/x/keys/c.pem")).is_empty());
    }

    #[test]
    fn covered_by_session_answer_lists_the_same_scope_only() {
        let (_dir, broker, mut conn, _rx) = setup();
        for (id, path) in [
            (1, "/x/cache/a"),
            (2, "/x/cache/b"),
            (3, "/x/other/c"),
            (4, "/x/cache/sub/d"),
        ] {
            assert!(answer_to(&mut conn, &query(id, path)).is_empty());
        }
        let pending = broker.pending();
        let first = pending[0].id;
        let covered = broker.covered_by_session_answer(first);
        assert_eq!(covered, vec![pending[1].id, pending[3].id]);
        let answered = broker
            .answer(first, &AnswerRequest::new(answer::ChoiceKey::Session))
            .unwrap();
        assert_eq!(answered.also_answered, covered);
    }

    #[test]
    fn a_persisted_answer_is_known_as_the_apps_own_write() {
        let (dir, broker, mut conn, _rx) = setup();
        let file = dir.path().join("p/.opencode/sandbox.json");
        assert!(answer_to(&mut conn, &query(1, "/x/cache/a")).is_empty());
        let id = broker.pending()[0].id;
        let answered = broker
            .answer(id, &AnswerRequest::new(answer::ChoiceKey::Project))
            .unwrap();
        assert_eq!(answered.persisted.map(|(f, _)| f), Some(file.clone()));
        // So the file watch leaves the sweep to the answer, which reports it.
        assert_eq!(
            broker.own_writes().writer_of(&file),
            Some(policy::Writer::Answer)
        );
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(
            broker.own_writes().writer_of(&file),
            None,
            "an edit by somebody else"
        );
    }

    #[test]
    fn a_failed_policy_write_gives_the_prompt_back_untouched() {
        let (dir, broker, mut conn, mut rx) = setup();
        let file = dir.path().join("p/.opencode/sandbox.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{ broken").unwrap();
        assert!(answer_to(&mut conn, &query(1, "/elsewhere/a")).is_empty());
        let id = broker.pending()[0].id;
        let project = AnswerRequest::new(answer::ChoiceKey::Project);
        assert!(matches!(
            broker.answer(id, &project),
            Err(BrokerError::Policy(_))
        ));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ broken");
        assert!(rx.try_recv().is_err(), "nothing was answered on the wire");
        assert_eq!(broker.pending().len(), 1, "still pending");
        // Released, not stuck claimed: another answer (or the sweep, a timeout) can settle it.
        broker.answer(id, &AnswerRequest::deny()).unwrap();
        assert!(matches!(
            rx.try_recv(),
            Ok(Outbound::Answer(_, Action::Deny))
        ));
        assert!(broker.pending().is_empty());
    }

    #[test]
    fn a_refused_answer_changes_nothing() {
        let (_dir, broker, mut conn, mut rx) = setup();
        assert!(answer_to(&mut conn, &query(1, "/elsewhere/a")).is_empty());
        let id = broker.pending()[0].id;
        let wrong = AnswerRequest {
            entry: Some("/somewhere/else".into()),
            wider: true,
            ..AnswerRequest::new(answer::ChoiceKey::Global)
        };
        assert!(matches!(
            broker.answer(id, &wrong),
            Err(BrokerError::Rules(RuleError::DoesNotCover { .. }))
        ));
        assert!(rx.try_recv().is_err());
        assert_eq!(broker.pending().len(), 1);
        assert!(broker.grants().is_empty());
    }

    #[tokio::test]
    async fn an_answered_prompt_cancels_its_timeout() {
        let (_dir, broker, mut conn, _rx) = setup();
        broker.set_prompt_timeout(Some(Duration::from_secs(3600)));
        assert!(answer_to(&mut conn, &query(1, "/elsewhere/a")).is_empty());
        let id = broker.pending()[0].id;
        let metrics = tokio::runtime::Handle::current().metrics();
        assert_eq!(metrics.num_alive_tasks(), 1, "the timeout task is armed");
        broker.answer(id, &AnswerRequest::once()).unwrap();
        // Aborted tasks are reaped on the next poll of the runtime.
        for _ in 0..100 {
            if metrics.num_alive_tasks() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(metrics.num_alive_tasks(), 0, "the timeout task is gone");
    }

    fn query_by(id: u32, path: &str, exe: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"{id}","operation":"write","path":"{path}","reason":"allow_miss","process":{{"pid":9,"exe":"{exe}"}}}}"#
        )
        .into_bytes()
    }

    /// Every answer the connection's channel holds now, as (query id text, action).
    fn answers(rx: &mut mpsc::UnboundedReceiver<Outbound>) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        while let Ok(Outbound::Answer(id, action)) = rx.try_recv() {
            out.push((id.to_string(), action));
        }
        out
    }

    #[test]
    fn a_program_limited_grant_answers_the_queued_prompts_of_that_program_only() {
        let (_dir, broker, mut conn, mut rx) = setup();
        for (id, exe) in [
            (1, "/usr/bin/python3"),
            (2, "/usr/bin/dash"),
            (3, "/usr/bin/python3"),
        ] {
            assert!(answer_to(&mut conn, &query_by(id, &format!("/x/cache/{id}"), exe)).is_empty());
        }
        let pending = broker.pending();
        let limited = AnswerRequest {
            program: true,
            ..AnswerRequest::session()
        };
        let answered = broker.answer(pending[0].id, &limited).unwrap();
        assert_eq!(answered.also_answered, vec![pending[2].id]);
        assert_eq!(
            answers(&mut rx),
            vec![
                ("\"1\"".into(), Action::Allow),
                ("\"3\"".into(), Action::Allow)
            ]
        );
        assert_eq!(broker.pending().len(), 1, "the other program still asks");
        assert_eq!(
            broker.grants()[0].program.as_deref(),
            Some("/usr/bin/python3")
        );
        // Later requests: that program at once, another one asks.
        assert_eq!(
            answer_to(&mut conn, &query_by(4, "/x/cache/4", "/usr/bin/python3")),
            b"{\"query_id\":\"4\",\"action\":\"allow\"}\n"
        );
        assert!(answer_to(&mut conn, &query_by(5, "/x/cache/5", "/usr/bin/perl")).is_empty());
    }

    #[test]
    fn a_run_limited_grant_covers_its_run_and_ends_with_it() {
        let (dir, broker, mut conn, mut rx) = setup();
        assert!(answer_to(&mut conn, &query(1, "/x/cache/a")).is_empty());
        assert!(answer_to(&mut conn, &query(2, "/x/cache/b")).is_empty());
        let for_run = AnswerRequest {
            lifetime: Some(crate::decision::grants::Lifetime::Run),
            ..AnswerRequest::session()
        };
        let first = broker.pending()[0].id;
        let answered = broker.answer(first, &for_run).unwrap();
        assert_eq!(
            answered.also_answered.len(),
            1,
            "the queued one of the same run"
        );
        assert_eq!(answers(&mut rx).len(), 2);
        assert_eq!(broker.grants()[0].run, Some(conn.id()));
        assert_eq!(
            answer_to(&mut conn, &query(3, "/x/cache/c")),
            b"{\"query_id\":\"3\",\"action\":\"allow\"}\n"
        );
        // Another run of the same project (no session: the same key) is not covered.
        let (tx2, _rx2) = mpsc::unbounded_channel();
        let project = Arc::new(Project::new(dir.path().join("p"), dir.path().join("home")));
        let mut next = broker.connect(project, tx2);
        assert!(answer_to(&mut next, &query(1, "/x/cache/a")).is_empty());
        drop(conn);
        assert!(broker.grants().is_empty(), "the grant ended with its run");
    }

    #[test]
    fn never_denies_the_request_the_queued_ones_it_covers_and_later_ones_without_asking() {
        let (dir, broker, mut conn, mut rx) = setup();
        for (id, path) in [(1, "/x/cache/a"), (2, "/x/cache/a"), (3, "/x/cache/b")] {
            assert!(answer_to(&mut conn, &query(id, path)).is_empty());
        }
        let pending = broker.pending();
        let answered = broker
            .answer(pending[0].id, &AnswerRequest::never())
            .unwrap();
        assert_eq!(answered.action, Action::Deny);
        assert_eq!(answered.also_answered, vec![pending[1].id]);
        let file = dir.path().join("p/.opencode/sandbox.json");
        assert_eq!(
            answered.persisted,
            Some((file.clone(), "/x/cache/a".into()))
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json["filesystem"]["denyWrite"],
            serde_json::json!(["/x/cache/a"])
        );
        assert_eq!(
            answers(&mut rx),
            vec![
                ("\"1\"".into(), Action::Deny),
                ("\"2\"".into(), Action::Deny)
            ]
        );
        assert_eq!(
            broker.pending().len(),
            1,
            "outside the exact scope: still asks"
        );
        assert_eq!(
            answer_to(&mut conn, &query(4, "/x/cache/a")),
            b"{\"query_id\":\"4\",\"action\":\"deny\"}\n"
        );
        // A second answer to a prompt never answers twice.
        assert!(matches!(
            broker.answer(pending[1].id, &AnswerRequest::once()),
            Err(BrokerError::NotPending(_))
        ));
    }

    #[test]
    fn deny_for_the_session_denies_its_scope_without_touching_a_file() {
        let (dir, broker, mut conn, mut rx) = setup();
        assert!(answer_to(&mut conn, &query(1, "/x/cache/a")).is_empty());
        assert!(answer_to(&mut conn, &query(2, "/x/cache/b")).is_empty());
        let first = broker.pending()[0].id;
        let deny_session = AnswerRequest {
            session: true,
            ..AnswerRequest::deny()
        };
        let answered = broker.answer(first, &deny_session).unwrap();
        assert_eq!(answered.action, Action::Deny);
        assert_eq!(answered.also_answered.len(), 1);
        assert_eq!(
            answers(&mut rx),
            vec![
                ("\"1\"".into(), Action::Deny),
                ("\"2\"".into(), Action::Deny)
            ]
        );
        let grants = broker.grants();
        assert_eq!(grants[0].effect, Effect::Deny);
        assert_eq!(
            answer_to(&mut conn, &query(3, "/x/cache/c")),
            b"{\"query_id\":\"3\",\"action\":\"deny\"}\n"
        );
        assert!(!dir.path().join("p/.opencode").exists(), "no file written");
        assert!(broker.revoke_grant(grants[0].id));
        assert!(
            answer_to(&mut conn, &query(4, "/x/cache/c")).is_empty(),
            "asks again"
        );
    }
}
