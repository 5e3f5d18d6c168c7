//! The control socket: `landstrip-tray ctl` (and a second start of the app) talks to the
//! running instance over a Unix socket in the runtime directory, one JSON [`Request`] per
//! line and one JSON [`Response`] per line. Everything the dialog can decide can be decided
//! here, for SSH sessions, scripts and tests.
//!
//! Only our own uid is served: the directory is private (0700, ours), the socket 0600,
//! and every connection's peer uid is checked (SO_PEERCRED) before anything is read.

mod client;
mod messages;
pub mod sandboxed;
mod server;

use std::io;
use std::path::{Path, PathBuf};

use crate::safe_fs::{self, PrivateDirError};

pub use client::Client;
pub use messages::{
    AnswerReply, PendingItem, Persisted, Reply, Request, Response, ResumeReply, StatusReply,
};
pub use server::{handle, ControlServer, SocketFile};

/// Longest request line the server reads, in bytes; a longer one is answered with an
/// error and the connection closed.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Longest reply line the client reads (a long pending list is a few hundred KiB).
pub const MAX_REPLY: u64 = 64 << 20;

/// Mode of the socket file.
pub(crate) const SOCKET_MODE: u32 = 0o600;

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
    /// The directory is not private to us (a symlink, not a directory, someone else's,
    /// open to group or others).
    #[error(transparent)]
    Untrusted(PrivateDirError),
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
/// directory, ours, closed to group and others ([`crate::safe_fs::ensure_private_dir`]).
pub fn ensure_private_dir(dir: &Path) -> Result<(), ControlError> {
    safe_fs::ensure_private_dir(dir).map_err(ControlError::from)
}

/// Checks that `dir` is a real directory (not a symlink), ours, closed to group and others.
pub fn check_private_dir(dir: &Path) -> Result<(), ControlError> {
    safe_fs::check_private_dir(dir).map_err(ControlError::from)
}

impl From<PrivateDirError> for ControlError {
    fn from(error: PrivateDirError) -> Self {
        match error {
            // The client tells "not running" from a missing directory by this variant.
            PrivateDirError::Io { dir, source } => Self::Dir { dir, source },
            untrusted => Self::Untrusted(untrusted),
        }
    }
}

pub(crate) fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

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
            Err(ControlError::Untrusted(PrivateDirError::Symlink { .. }))
        ));
        // A missing directory stays an I/O error: the client reads it as "not running".
        assert!(matches!(
            check_private_dir(&root.path().join("missing")),
            Err(ControlError::Dir { source, .. }) if source.kind() == io::ErrorKind::NotFound
        ));
    }
}
