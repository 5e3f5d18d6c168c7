//! The control socket: `landstrip-tray ctl` (and a second start of the app) talks to the
//! running instance over a Unix socket in the runtime directory, one JSON [`Request`] per
//! line and one JSON [`Response`] per line. Everything the dialog can decide can be decided
//! here, for SSH sessions, scripts and tests.
//!
//! Only our own uid is served: the directory is private (0700, ours), the socket 0600,
//! and every connection's peer uid is checked (SO_PEERCRED) before anything is read.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinSet;

use crate::activity::now_ms;
use crate::broker::{Answered, Choice, ConnId, PauseState, PendingPrompt, PromptId};
use crate::protocol::{Action, QueryKind};
use crate::service::{ProjectInfo, ProjectStatus, Service};

/// Longest request line the server reads, in bytes; a longer one is answered with an
/// error and the connection closed.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Longest reply line the client reads (a long pending list is a few hundred KiB).
pub const MAX_REPLY: u64 = 64 << 20;

/// Mode of the socket's directory.
const DIR_MODE: u32 = 0o700;

/// Mode of the socket file.
const SOCKET_MODE: u32 = 0o600;

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
        /// The decision: `"choice":"once"|"session"|"project"|"global"|"deny"`, with an
        /// optional `"entry"` for project and global.
        #[serde(flatten)]
        choice: Choice,
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
    /// Pauses prompts (what would ask is denied) for `secs`, or until resumed.
    Pause {
        /// How long; absent: until resumed.
        #[serde(default)]
        secs: Option<u64>,
    },
    /// Ends a pause.
    Resume,
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
    /// For [`Request::AddProject`] and [`Request::TakeOver`]: the project now.
    Project(ProjectInfo),
    /// For [`Request::RemoveProject`]: the directory no longer served.
    Removed(PathBuf),
    /// For [`Request::Pause`]: the pause now.
    Paused(PauseState),
    /// For [`Request::Resume`].
    Resumed(ResumeReply),
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
        }
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

/// Why the control socket cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The directory could not be created or inspected.
    #[error("{}: {source}", dir.display())]
    Dir {
        /// The socket's directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The directory is a symlink or not a directory.
    #[error("refusing to use {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Someone else owns the directory: they could swap the socket.
    #[error("refusing to use {}: it belongs to uid {owner}, not to us (uid {ours})", dir.display())]
    NotOwned {
        /// The socket's directory.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our uid.
        ours: u32,
    },
    /// Group or others may enter the directory.
    #[error("refusing to use {}: its mode {mode:04o} lets other users in (it must be 0700)", dir.display())]
    TooOpen {
        /// The socket's directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A live instance already answers on the socket.
    #[error("another landstrip-tray already answers at {}", .0.display())]
    AlreadyRunning(PathBuf),
    /// Something other than a socket sits where the socket goes.
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    /// Binding or connecting failed.
    #[error("control socket {}: {source}", path.display())]
    Socket {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Nothing answers: no socket, or a stale one.
    #[error("landstrip-tray is not running (nothing answers at {})", .0.display())]
    NotRunning(PathBuf),
    /// The socket is served by another uid.
    #[error("refusing to talk to {}: it is served by uid {theirs}, not by us (uid {ours})", path.display())]
    WrongServer {
        /// The socket.
        path: PathBuf,
        /// The server's uid.
        theirs: u32,
        /// Our uid.
        ours: u32,
    },
    /// The instance closed the connection without a reply.
    #[error("the running instance closed the connection without answering")]
    NoReply,
    /// The reply is not JSON we understand.
    #[error("the running instance sent a reply that is not understood: {0}")]
    BadReply(String),
    /// Reading or writing the connection failed.
    #[error("talking to the running instance: {0}")]
    Io(#[from] io::Error),
}

/// Creates the socket's directory (0700) if missing and checks that it is a real
/// directory, ours, closed to group and others.
pub fn ensure_private_dir(dir: &Path) -> Result<(), ControlError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|source| ControlError::Dir {
            dir: dir.to_path_buf(),
            source,
        })?;
    check_private_dir(dir)
}

/// Checks that `dir` is a real directory (not a symlink), ours, closed to group and others.
pub fn check_private_dir(dir: &Path) -> Result<(), ControlError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| ControlError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(ControlError::NotADirectory(dir.to_path_buf()));
    }
    let ours = crate::uid();
    if meta.uid() != ours {
        return Err(ControlError::NotOwned {
            dir: dir.to_path_buf(),
            owner: meta.uid(),
            ours,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(ControlError::TooOpen {
            dir: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The socket file this server put in place; removed at exit only while it is still ours
/// (a newer instance may have replaced it).
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file if it is still the one we bound; true if removed.
    pub fn remove(&self) -> bool {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.dev() == self.dev && m.ino() == self.ino);
        ours && std::fs::remove_file(&self.path).is_ok()
    }
}

/// Looks at what sits at `path`: Ok(false) nothing, Ok(true) a stale socket (nothing
/// answers; it may be replaced), an error for a live socket or anything else.
fn existing_socket(path: &Path) -> Result<bool, ControlError> {
    let socket_err = |source| ControlError::Socket {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => Err(ControlError::AlreadyRunning(path.to_path_buf())),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(true),
                Err(e) => Err(socket_err(e)),
            }
        }
        Ok(_) => Err(ControlError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(socket_err(e)),
    }
}

/// A bound control socket, not yet serving.
pub struct ControlServer {
    listener: UnixListener,
    socket: Arc<SocketFile>,
}

impl ControlServer {
    /// Binds the socket at `path`: its directory made (0700) and checked, a stale socket
    /// (nothing answers) replaced, a live one left alone. The socket is bound under a
    /// temporary name and renamed into place, so whoever finds `path` finds a listening
    /// socket. Must be called inside a tokio runtime.
    pub fn bind(path: &Path) -> Result<Self, ControlError> {
        let dir = parent_of(path);
        ensure_private_dir(dir)?;
        let socket_err = |source| ControlError::Socket {
            path: path.to_path_buf(),
            source,
        };
        if existing_socket(path)? {
            tracing::info!("replacing the stale control socket {}", path.display());
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let listener = UnixListener::bind(&temp).map_err(socket_err)?;
        // Looked at again just before the rename: another instance starting at the same
        // moment may have put its socket in place meanwhile.
        let placed = std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(SOCKET_MODE))
            .map_err(socket_err)
            .and_then(|()| existing_socket(path))
            .and_then(|_| std::fs::rename(&temp, path).map_err(socket_err));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        let meta = std::fs::symlink_metadata(path).map_err(socket_err)?;
        Ok(Self {
            listener,
            socket: Arc::new(SocketFile {
                path: path.to_path_buf(),
                dev: meta.dev(),
                ino: meta.ino(),
            }),
        })
    }

    /// The socket file, to remove at exit.
    pub fn socket_file(&self) -> Arc<SocketFile> {
        self.socket.clone()
    }

    /// Serves clients until the task is dropped; each client is its own task, so a slow
    /// or idle one holds up nobody.
    pub async fn serve(self, service: Service) {
        let mut clients = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        clients.spawn(serve_client(stream, service.clone()));
                    }
                    Err(e) => {
                        // EMFILE and friends: back off briefly instead of spinning.
                        tracing::warn!("control socket: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = clients.join_next(), if !clients.is_empty() => {}
            }
        }
    }
}

/// One client: the peer uid checked first, then request lines answered in order.
async fn serve_client(stream: UnixStream, service: Service) {
    let ours = crate::uid();
    let peer = stream.peer_cred().map(|c| c.uid());
    let (read, mut write) = stream.into_split();
    match peer {
        Ok(uid) if uid == ours => {}
        Ok(uid) => {
            tracing::warn!("refused a control connection from uid {uid}");
            let refusal = Response::error(format!(
                "refused: this landstrip-tray belongs to uid {ours}, not to uid {uid}"
            ));
            let _ = write_response(&mut write, &refusal).await;
            let _ = write.shutdown().await;
            return;
        }
        Err(e) => {
            tracing::warn!("refused a control connection whose uid cannot be told: {e}");
            return;
        }
    }
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_request(&mut reader, &mut line).await {
            Ok(true) => {}
            Ok(false) | Err(ReadError::Io) => return,
            Err(ReadError::TooLong) => {
                let message = format!("request line longer than {MAX_REQUEST} bytes");
                let _ = write_response(&mut write, &Response::error(message)).await;
                return;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let response = match serde_json::from_slice::<Request>(&line) {
            Ok(request) => match while_connected(handle(&service, request), &mut reader).await {
                Some(response) => response,
                None => return,
            },
            Err(e) => Response::error(format!("bad request: {e}")),
        };
        if write_response(&mut write, &response).await.is_err() {
            return;
        }
    }
}

/// Runs `work` unless the client hangs up first (a `pending --wait` could otherwise
/// outlive its client until the next prompt).
async fn while_connected<T>(
    work: impl std::future::Future<Output = T>,
    reader: &mut BufReader<OwnedReadHalf>,
) -> Option<T> {
    tokio::pin!(work);
    let mut watching = true;
    loop {
        tokio::select! {
            done = &mut work => return Some(done),
            more = reader.fill_buf(), if watching => match more {
                Ok([]) | Err(_) => return None,
                // A pipelined request: leave it buffered for the next round.
                Ok(_) => watching = false,
            },
        }
    }
}

enum ReadError {
    TooLong,
    /// The connection failed; nothing more can be said on it.
    Io,
}

/// Reads one line (without its newline) into `line`, at most [`MAX_REQUEST`] bytes.
/// False at end of input; an unterminated last line still counts as a line.
async fn read_request(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> Result<bool, ReadError> {
    loop {
        let available = reader.fill_buf().await.map_err(|_| ReadError::Io)?;
        if available.is_empty() {
            return Ok(!line.is_empty());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (end, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_REQUEST {
            return Err(ReadError::TooLong);
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(true);
        }
    }
}

async fn write_response(write: &mut OwnedWriteHalf, response: &Response) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(response).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await
}

/// Carries out one request against the service, as the UI would.
pub async fn handle(service: &Service, request: Request) -> Response {
    match dispatch(service, request).await {
        Ok(reply) => Response::Ok(reply),
        Err(message) => Response::Error { message },
    }
}

async fn dispatch(service: &Service, request: Request) -> Result<Reply, String> {
    let broker = service.broker();
    match request {
        Request::Status => {
            let list = service.list();
            let conflicts = list
                .iter()
                .filter(|p| matches!(p.status, ProjectStatus::Conflict { .. }))
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
                    let items = pending
                        .iter()
                        .map(|p| PendingItem::from_prompt(p, now))
                        .collect();
                    return Ok(Reply::Pending(items));
                }
                match events.recv().await {
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Err("shutting down".to_owned()),
                }
            }
        }
        Request::Answer { id, choice } => {
            let broker = broker.clone();
            // A project or global grant writes a policy file.
            let answered = off_runtime(move || broker.answer(id, choice))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Answered(answer_reply(id, answered)))
        }
        Request::AddProject { dir, persist } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            let runtime = tokio::runtime::Handle::current();
            // Serving publishes a discovery file (and may probe another presenter's port)
            // and may write the settings file: kept off the runtime's workers.
            let info = off_runtime(move || runtime.block_on(service.add_project(&dir, persist)))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Project(info))
        }
        Request::RemoveProject { dir, persist } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            let runtime = tokio::runtime::Handle::current();
            let removed = dir.clone();
            off_runtime(move || runtime.block_on(service.remove_project(&dir, persist)))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Removed(
                std::fs::canonicalize(&removed).unwrap_or(removed),
            ))
        }
        Request::TakeOver { dir } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            let info = off_runtime(move || service.take_over(&dir))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Project(info))
        }
        Request::Pause { secs } => {
            if secs == Some(0) {
                return Err("a pause must last at least a second".to_owned());
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
    }
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
    }
}

/// The server has no working directory of the client's: a relative path would mean
/// something else here.
fn absolute(dir: PathBuf) -> Result<PathBuf, String> {
    if dir.is_absolute() {
        Ok(dir)
    } else {
        Err(format!(
            "{}: the directory must be absolute (ctl resolves it against its own directory)",
            dir.display()
        ))
    }
}

async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("internal error: {e}"))
}

/// A connection to the running instance.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: Vec<u8>,
}

impl Client {
    /// Connects to the socket at `path` after checking its directory is private and ours;
    /// then checks the server runs as our uid. [`ControlError::NotRunning`] when there is
    /// no socket or nothing answers on it.
    pub async fn connect(path: &Path) -> Result<Self, ControlError> {
        match check_private_dir(parent_of(path)) {
            Err(ControlError::Dir { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(ControlError::NotRunning(path.to_path_buf()))
            }
            other => other?,
        }
        let stream = match UnixStream::connect(path).await {
            Ok(stream) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Err(ControlError::NotRunning(path.to_path_buf()))
            }
            Err(source) => {
                return Err(ControlError::Socket {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let ours = crate::uid();
        let theirs = stream.peer_cred()?.uid();
        if theirs != ours {
            return Err(ControlError::WrongServer {
                path: path.to_path_buf(),
                theirs,
                ours,
            });
        }
        let (read, writer) = stream.into_split();
        Ok(Self {
            reader: BufReader::new(read),
            writer,
            line: Vec::new(),
        })
    }

    /// Sends one request and reads its response.
    pub async fn request(&mut self, request: &Request) -> Result<Response, ControlError> {
        let mut bytes = serde_json::to_vec(request).map_err(io::Error::other)?;
        bytes.push(b'\n');
        self.writer.write_all(&bytes).await?;
        self.line.clear();
        let n = (&mut self.reader)
            .take(MAX_REPLY)
            .read_until(b'\n', &mut self.line)
            .await?;
        if n == 0 {
            return Err(ControlError::NoReply);
        }
        serde_json::from_slice(&self.line).map_err(|e| ControlError::BadReply(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                choice: Choice::Project {
                    entry: Some("out".into())
                }
            }),
            json!({"request": "answer", "id": 7, "choice": "project", "entry": "out"})
        );
        assert_eq!(
            round_trip(&Request::Answer {
                id: 7,
                choice: Choice::Once
            }),
            json!({"request": "answer", "id": 7, "choice": "once"})
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

    #[tokio::test]
    async fn request_lines_are_bounded_and_the_last_may_be_unterminated() {
        let input = format!("a\n\nb{}", "x".repeat(10));
        let mut reader = BufReader::new(input.as_bytes());
        let mut line = Vec::new();
        let mut lines = Vec::new();
        while matches!(read_request(&mut reader, &mut line).await, Ok(true)) {
            lines.push(String::from_utf8(std::mem::take(&mut line)).unwrap());
        }
        assert_eq!(lines, ["a", "", "bxxxxxxxxxx"]);

        let long = format!("{}\n", "y".repeat(MAX_REQUEST + 1));
        let mut reader = BufReader::new(long.as_bytes());
        assert!(matches!(
            read_request(&mut reader, &mut Vec::new()).await,
            Err(ReadError::TooLong)
        ));
        let exact = format!("{}\n", "z".repeat(MAX_REQUEST));
        let mut reader = BufReader::new(exact.as_bytes());
        assert!(matches!(
            read_request(&mut reader, &mut Vec::new()).await,
            Ok(true)
        ));
    }

    #[test]
    fn a_shared_or_foreign_directory_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sock");
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        let err = ensure_private_dir(&dir).unwrap_err();
        assert!(
            err.to_string().contains("0750") && err.to_string().contains("other users"),
            "{err}"
        );
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(
            check_private_dir(&link),
            Err(ControlError::NotADirectory(_))
        ));
    }
}
