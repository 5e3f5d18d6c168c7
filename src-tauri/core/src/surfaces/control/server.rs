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
use tokio::task::JoinSet;

use super::messages::{Request, Response};
use super::{ensure_private_dir, parent_of, ControlError, MAX_REQUEST, SOCKET_MODE};
use crate::serving::service::Service;
use crate::surfaces::control::sandboxed::{self, Verdict};
use crate::surfaces::operations::{self, Failure};
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
    let Ok(verdict) = tokio::task::spawn_blocking(move || sandboxed::judge(pid)).await else {
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

/// Carries out one request against the service through the operations table, as every
/// front end does, and words a failure for a command line.
pub async fn handle(service: &Service, request: Request) -> Response {
    match operations::run(service, request).await {
        Ok(reply) => Response::Ok(reply),
        Err(failure) => Response::Error {
            message: ctl_words(&failure),
        },
    }
}

/// A failure as `ctl` prints it: a broad entry says how to confirm it there.
fn ctl_words(failure: &Failure) -> String {
    match failure {
        Failure::NotWritten(e @ ops::OpError::Broad { .. }) => {
            format!("nothing was written: {e} (confirm with --broad)")
        }
        other => other.to_string(),
    }
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
