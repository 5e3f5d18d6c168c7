//! The control socket's server: binds the socket, checks each peer, and carries out
//! requests against the [`Service`] through the same core operations as the UI. A peer
//! inside a sandbox (see [`crate::surfaces::control::sandboxed`]) may only look: what would change anything is
//! refused.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinSet;

use super::messages::{
    AnswerReply, PendingItem, Persisted, Reply, Request, Response, ResumeReply, StatusReply,
};
use super::{ensure_private_dir, parent_of, ControlError, MAX_REQUEST, SOCKET_MODE};
use crate::activity::now_ms;
use crate::decision::broker::{Answered, PromptId};
use crate::serving::service::{ProjectStatus, Service};
use crate::surfaces::control::sandboxed::{self, Verdict};
use crate::surfaces::ops;

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

/// One client: the peer uid checked first and the peer judged (sandboxed or not) once,
/// then request lines answered in order.
async fn serve_client(stream: UnixStream, service: Service) {
    let ours = crate::uid();
    let peer = stream.peer_cred();
    let (read, mut write) = stream.into_split();
    let pid = match peer {
        Ok(cred) if cred.uid() == ours => cred.pid(),
        Ok(cred) => {
            let uid = cred.uid();
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
    };
    // Judged at once, while the process that connected is most surely the one at `pid`.
    let Ok(verdict) = off_runtime(move || sandboxed::judge(pid)).await else {
        return;
    };
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
            Ok(request) => match refusal(&verdict, &request) {
                Some(refused) => refused,
                None => match while_connected(handle(&service, request), &mut reader).await {
                    Some(response) => response,
                    None => return,
                },
            },
            Err(e) => Response::error(format!("bad request: {e}")),
        };
        if write_response(&mut write, &response).await.is_err() {
            return;
        }
    }
}

/// The answer to a request that changes anything from a sandboxed peer: a sandboxed program
/// must never approve its own requests (docs/ARCHITECTURE.md, the control socket). Nothing
/// is done, so a prompt it tried to answer stays pending.
fn refusal(verdict: &Verdict, request: &Request) -> Option<Response> {
    let inside = verdict.inside().filter(|_| request.changes_state())?;
    let pid = inside
        .pid
        .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
    tracing::warn!(
        "control socket: refused {request:?} from pid {pid}, inside a sandbox: {}",
        inside.sign
    );
    Some(Response::error(inside.refusal()))
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
        Request::Answer { id, answer } => {
            let broker = broker.clone();
            // A project or global grant writes a policy file.
            let answered = off_runtime(move || broker.answer(id, &answer))
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
        Request::Prefer { dir, prompts } => {
            let dir = absolute(dir)?;
            let info = service
                .set_prompts(&dir, prompts)
                .await
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
        Request::OpenSettings { show } => {
            if service.request_ui(show) {
                Ok(Reply::Shown)
            } else {
                Err("this instance has no settings window".to_owned())
            }
        }
        // The shared operations (ops.rs), as the settings view calls them; each reads or
        // writes files, so on the blocking pool.
        Request::Policy { dir } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            let view = off_runtime(move || ops::show_policy(&service, &dir))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Policy(Box::new(writable(view)?)))
        }
        Request::AppSettings => {
            let service = service.clone();
            let settings = off_runtime(move || ops::show_app_settings(&service))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::AppSettings(settings))
        }
        Request::ChangeAppSetting { change } => {
            let service = service.clone();
            let changed = off_runtime(move || ops::change_app_setting(&service, &change))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::AppSettingChanged(changed))
        }
        Request::ChangePolicy {
            file,
            change,
            allow_broad,
        } => {
            let service = service.clone();
            let changed =
                off_runtime(move || ops::change_policy(&service, &file, &change, allow_broad))
                    .await?
                    .map_err(|e| match e {
                        ops::OpError::Broad { .. } => {
                            format!("nothing was written: {e} (confirm with --broad)")
                        }
                        e => format!("nothing was written: {e}"),
                    })?;
            Ok(Reply::PolicyChanged(changed))
        }
        Request::UndoPolicy => {
            let service = service.clone();
            let undone = off_runtime(move || ops::undo_last_save(&service))
                .await?
                .map_err(|e| format!("nothing was undone: {e}"))?;
            Ok(Reply::PolicyUndone(undone))
        }
        Request::Learn { dir, learn, save } => {
            let dir = absolute(dir)?;
            let service = service.clone();
            let (review, saved) = off_runtime(move || {
                let review = ops::learn(&service, &dir, &learn).map_err(|e| e.to_string())?;
                let changes = review.changes();
                let saved = if save && !changes.is_empty() {
                    let file = review.policy_file(&dir);
                    let changed = ops::change_policy_all(&service, &file, &changes, false)
                        .map_err(|e| format!("nothing was written: {e}"))?;
                    Some(changed)
                } else {
                    None
                };
                Ok::<_, String>((review, saved))
            })
            .await??;
            Ok(Reply::Learned {
                review: writable(review)?,
                saved,
            })
        }
        Request::Grants => {
            let service = service.clone();
            let grants = off_runtime(move || ops::grants(&service)).await?;
            Ok(Reply::Grants(writable(grants)?))
        }
        Request::Revoke { id } => {
            let service = service.clone();
            off_runtime(move || ops::revoke(&service, id))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Revoked(id))
        }
        Request::Activity { filter } => {
            if let Some(dir) = &filter.project {
                absolute(dir.clone())?;
            }
            let service = service.clone();
            let entries = off_runtime(move || ops::activity(&service, &filter))
                .await?
                .map_err(|e| e.to_string())?;
            Ok(Reply::Activity(entries))
        }
    }
}

/// `value` if it can be written as JSON: a view holding a path that is not UTF-8 is an
/// error reply here rather than a connection dropped when the reply is written. (The
/// activity holds only text; it always can.)
fn writable<T: serde::Serialize>(value: T) -> Result<T, String> {
    serde_json::to_writer(io::sink(), &value)
        .map(|()| value)
        .map_err(|e| format!("internal error: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
