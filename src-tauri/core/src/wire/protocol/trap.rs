//! Owned, decoded forms of the lines landstrip (and its launcher) writes.

use std::fmt;

use serde::{Serialize, Serializer};

use super::QueryId;

/// Longest session id accepted in a hello line, in bytes after trimming.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// One decoded input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The launcher's optional first line naming the opencode session.
    Hello(SessionId),
    /// A held syscall waiting for an answer.
    Query(Query),
    /// A trap that is recorded but never answered.
    Terminal(TerminalTrap),
    /// A line that is not something we act on, and why.
    Ignored(IgnoreReason),
}

/// An opencode session id from a hello line (trimmed, non-empty, bounded).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SessionId(Box<str>);

impl SessionId {
    /// Validates and trims a session id; `None` if empty or too long.
    pub fn new(raw: &str) -> Option<Self> {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.len() > MAX_SESSION_ID_LEN {
            return None;
        }
        Some(Self(trimmed.into()))
    }

    /// The id text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A query trap: landstrip holds the syscall until we answer `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Query {
    /// The id to echo back in the response.
    pub id: QueryId,
    /// What was attempted.
    pub kind: QueryKind,
    /// Machine-readable code, e.g. `FILESYSTEM_DENIED`.
    pub code: Option<String>,
    /// The held syscall, e.g. `openat`.
    pub syscall: Option<String>,
    /// The errno a denial produces, e.g. `EACCES`.
    pub errno: Option<String>,
    /// How landstrip enforces it, e.g. `seccomp`.
    pub mechanism: Option<String>,
    /// The process that made the syscall.
    pub process: Option<ProcessInfo>,
}

/// What a query asks for, borrowed: all the decision rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access<'a> {
    /// A read or write of a path.
    Filesystem {
        /// Read or write.
        operation: FsOperation,
        /// The resolved path.
        path: &'a str,
        /// landstrip saw an explicit deny rule match (`reason: deny_match`).
        deny_match: bool,
    },
    /// A connect or bind.
    Network {
        /// Connect, bind, or something newer.
        operation: NetOperation,
        /// `address:port`.
        target: &'a str,
    },
}

impl Query {
    /// What this query asks for.
    pub fn access(&self) -> Access<'_> {
        match &self.kind {
            QueryKind::Filesystem(fs) => Access::Filesystem {
                operation: fs.operation,
                path: &fs.path,
                deny_match: fs.reason == Some(Reason::DenyMatch),
            },
            QueryKind::Network(net) => Access::Network {
                operation: net.operation.clone(),
                target: &net.target,
            },
        }
    }
}

/// The access a filesystem or network trap is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum QueryKind {
    /// A file open/create/etc.
    Filesystem(FsAccess),
    /// A socket connect or bind.
    Network(NetAccess),
}

/// A filesystem access landstrip stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsAccess {
    /// Read or write.
    pub operation: FsOperation,
    /// The resolved absolute path.
    pub path: String,
    /// The path as the program passed it (may be relative).
    pub requested_path: Option<String>,
    /// Open flags such as `O_WRONLY` (empty when not sent).
    pub flags: Vec<String>,
    /// Why the policy did not allow it.
    pub reason: Option<Reason>,
    /// The policy entry landstrip suggests to allow it.
    pub suggested_grant: Option<SuggestedGrant>,
}

/// A network access landstrip stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetAccess {
    /// Connect, bind or something newer.
    pub operation: NetOperation,
    /// The address, e.g. `127.0.0.1:9`.
    pub target: String,
}

/// The process behind a trap, as far as landstrip reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProcessInfo {
    /// Its pid (in landstrip's pid namespace view).
    pub pid: Option<u32>,
    /// Its executable path.
    pub exe: Option<String>,
    /// Its working directory.
    pub cwd: Option<String>,
}

/// Filesystem operations landstrip queries about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsOperation {
    /// Opening for reading.
    Read,
    /// Writing, creating, truncating.
    Write,
}

impl FsOperation {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// Network operations; unknown ones are kept so they can still be shown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NetOperation {
    /// An outgoing connect.
    Connect,
    /// A bind (listening).
    Bind,
    /// Anything newer.
    Other(String),
}

impl NetOperation {
    /// The operation named on the wire.
    pub fn from_wire(name: &str) -> Self {
        match name {
            "connect" => NetOperation::Connect,
            "bind" => NetOperation::Bind,
            other => NetOperation::Other(other.to_owned()),
        }
    }
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Connect => "connect",
            Self::Bind => "bind",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for NetOperation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why the policy did not allow an access.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reason {
    /// No allow rule covered it.
    AllowMiss,
    /// An explicit deny rule matched (a hard denial for writes).
    DenyMatch,
    /// Anything newer.
    Other(String),
}

impl Reason {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::AllowMiss => "allow_miss",
            Self::DenyMatch => "deny_match",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The policy entry landstrip suggests, e.g. `{"allowWrite":"/tmp/x"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SuggestedGrant {
    /// An `allowRead` entry.
    pub allow_read: Option<String>,
    /// An `allowWrite` entry.
    pub allow_write: Option<String>,
}

/// A trap that is recorded, never answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
// Built once per line and moved, never stored in bulk: a Box would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum TerminalTrap {
    /// A completed filesystem or network denial.
    Denial(Denial),
    /// landstrip could not start the program.
    Launch(LaunchTrap),
    /// landstrip was invoked wrongly.
    Usage(UsageTrap),
    /// landstrip failed internally (e.g. the policy did not parse).
    Internal(InternalTrap),
}

impl TerminalTrap {
    /// `(kind, operation or code, subject)` for an activity log line.
    pub fn summary(&self) -> (String, String, String) {
        let text = |s: &Option<String>| s.clone().unwrap_or_default();
        match self {
            Self::Denial(d) => match &d.access {
                QueryKind::Filesystem(fs) => (
                    "filesystem".into(),
                    fs.operation.as_str().into(),
                    fs.path.clone(),
                ),
                QueryKind::Network(net) => (
                    "network".into(),
                    net.operation.as_str().into(),
                    net.target.clone(),
                ),
            },
            Self::Launch(l) => ("launch".into(), text(&l.code), text(&l.program)),
            Self::Usage(u) => ("usage".into(), text(&u.code), text(&u.message)),
            Self::Internal(i) => ("internal".into(), text(&i.code), text(&i.message)),
        }
    }
}

/// A filesystem/network trap that needs no answer (same fields as [`Query`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// Which `state` the trap carried.
    pub state: DenialState,
    /// What was attempted.
    pub access: QueryKind,
    /// Machine-readable code, e.g. `FILESYSTEM_DENIED`.
    pub code: Option<String>,
    /// The denied syscall, e.g. `openat`.
    pub syscall: Option<String>,
    /// The errno returned, e.g. `EACCES`.
    pub errno: Option<String>,
    /// How landstrip enforced it, e.g. `seccomp`.
    pub mechanism: Option<String>,
    /// The process that made the syscall.
    pub process: Option<ProcessInfo>,
}

/// The `state` of a terminal filesystem/network trap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DenialState {
    /// `"state":"info"`.
    Info,
    /// No `state` field: the pre-0.15.4 dialect, always terminal.
    Absent,
    /// An unknown state, never answered.
    Other(String),
}

/// `{"kind":"launch",...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LaunchTrap {
    /// e.g. `LAUNCH_FAILED`.
    pub code: Option<String>,
    /// The program that failed to start.
    pub program: Option<String>,
    /// e.g. `ENOENT`.
    pub errno: Option<String>,
    /// Human-readable explanation.
    pub message: Option<String>,
}

/// `{"kind":"usage",...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UsageTrap {
    /// Machine-readable code, if any.
    pub code: Option<String>,
    /// Human-readable explanation.
    pub message: Option<String>,
}

/// `{"kind":"internal",...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InternalTrap {
    /// e.g. `POLICY_PARSE_FAILED`.
    pub code: Option<String>,
    /// Human-readable explanation.
    pub message: Option<String>,
    /// `detail` object entries in order; non-string values as JSON text.
    pub detail: Vec<(String, String)>,
}

/// Why a line was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreReason {
    /// Not valid UTF-8.
    NotUtf8,
    /// Not a single JSON value (or an object with duplicate keys).
    NotJson,
    /// Valid JSON but not an object.
    NotObject,
    /// No string `kind` field.
    MissingKind,
    /// A `kind` we do not know.
    UnknownKind,
    /// A session hello with an empty or overlong `sessionID`.
    BadSessionId,
    /// `"state":"query"` without a usable `query_id` (missing, wrong type, too long).
    BadQueryId,
    /// A filesystem/network trap missing what it needs.
    ///
    /// If `pending` is set the sender is holding a syscall for that id: the
    /// caller should answer it (deny) rather than leave it hanging.
    MalformedTrap {
        /// What was wrong.
        problem: TrapProblem,
        /// The query id, when the trap was a query with a valid id.
        pending: Option<QueryId>,
    },
}

/// What made a filesystem/network trap unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapProblem {
    /// No string `operation`.
    MissingOperation,
    /// A filesystem `operation` other than read/write.
    UnknownOperation,
    /// A filesystem trap without a string `path`.
    MissingPath,
    /// A network trap without a string `target`.
    MissingTarget,
}
