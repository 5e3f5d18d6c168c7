//! A query waiting for a person, and the ids that name prompts and runs: below the broker,
//! which holds them, and the answer rules, which read them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::decision::after_secret::SecretRead;
use crate::origin::Origin;
use crate::wire::protocol::Query;

/// Identifies one pending prompt for as long as the app runs.
pub type PromptId = u64;

/// Identifies one connection (one landstrip run).
pub type ConnId = u64;

/// A query waiting for a person, as the UI sees it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingPrompt {
    /// Its id, to answer it by.
    pub id: PromptId,
    /// The connection (run) it came from.
    pub connection: ConnId,
    /// The project directory.
    pub project: PathBuf,
    /// The opencode session, when the launcher named one.
    pub session: Option<String>,
    /// The query itself.
    pub query: Arc<Query>,
    /// When it arrived (ms since the epoch).
    pub received_ms: u64,
    /// The scope "allow for session" would grant (filesystem only).
    pub session_scope: Option<PathBuf>,
    /// The command behind the request, read as the prompt opened; None when nothing is
    /// known beyond the query (docs/ARCHITECTURE.md, "The command behind a request").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Arc<Origin>>,
    /// The secret its run read earlier, for a network request or a write outside the
    /// project of a run after a secret (docs/ARCHITECTURE.md, "After a secret").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_secret: Option<SecretRead>,
    /// The remote machine it waits on, None for a request of this machine
    /// (docs/ARCHITECTURE.md, "Remote machines"); serialized as its name.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_host_name"
    )]
    pub host: Option<RemoteHost>,
}

/// A remote machine as its requests are shown: its name in the settings and its user's
/// home, by which its paths are judged (sensitive locations, `~`): this machine's home
/// says nothing of another machine's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHost {
    /// Its name in the settings.
    pub name: String,
    /// Its user's home, as its bridge said.
    pub home: PathBuf,
}

fn serialize_host_name<S: serde::Serializer>(
    host: &Option<RemoteHost>,
    out: S,
) -> Result<S::Ok, S::Error> {
    out.serialize_some(&host.as_ref().map(|h| h.name.as_str()))
}

impl PendingPrompt {
    /// The remote machine's name, None for this machine's request.
    pub fn host_name(&self) -> Option<&str> {
        self.host.as_ref().map(|h| h.name.as_str())
    }

    /// The home its paths are judged by: the remote user's for another machine's
    /// request, `local` (this user's) for this machine's.
    pub fn home<'a>(&'a self, local: &'a Path) -> &'a Path {
        self.host.as_ref().map_or(local, |h| h.home.as_path())
    }
}
