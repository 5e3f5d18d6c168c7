//! The control socket's client: what `landstrip-tray ctl` and a second start use.

use std::io;
use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

use super::messages::{Request, Response};
use super::{check_private_dir, parent_of, ControlError, MAX_REPLY};

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
