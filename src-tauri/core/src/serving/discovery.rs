//! Discovery files: how a launcher finds the presenter for a project.
//!
//! One file per project, `<runtime dir>/opencode-landstrip/port-<H>.json`,
//! holding `{"port":…,"pid":…,"ts":…}`. The opencode TUI plugin writes and
//! deletes the same file without checking whose it is, so every write here
//! first looks at what is there.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::safe_fs::{self, FileMode, PrivateDirError};

/// The directory name under the runtime (or temp) directory.
pub const DIR_NAME: &str = "opencode-landstrip";

/// How long a liveness check waits for the owner's port to accept, as the plugin does.
pub const LIVE_CONNECT_TIMEOUT: Duration = Duration::from_millis(250);

/// Discovery files are a few dozen bytes; anything bigger is not one.
const MAX_FILE_LEN: u64 = 4096;

/// Mode of a discovery file.
const FILE_MODE: u32 = 0o600;

/// Failures that stop a discovery file operation.
#[derive(Debug, Error)]
pub enum DiscoveryError {
    /// The discovery directory could not be created, or is not ours alone (a symlink,
    /// someone else's, open to others): files in it could be swapped or redirected.
    #[error("discovery file not published: {0}")]
    Dir(#[source] PrivateDirError),
    /// Our record could not be written.
    #[error("writing discovery file {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Our record could not be removed.
    #[error("removing discovery file {}: {source}", path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The content of a discovery file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct DiscoveryRecord {
    /// The presenter's TCP port on 127.0.0.1.
    pub port: u16,
    /// The presenter's pid.
    pub pid: u32,
    /// When it was written, in ms since the epoch.
    pub ts: u64,
}

impl DiscoveryRecord {
    /// A record naming this process, stamped now.
    pub fn ours(port: u16) -> Self {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        Self {
            port,
            pid: std::process::id(),
            ts,
        }
    }

    /// Parses a file's bytes; extra fields are ignored, a missing `ts` reads as 0.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let obj = value.as_object()?;
        let port = u16::try_from(obj.get("port")?.as_u64()?).ok()?;
        let pid = u32::try_from(obj.get("pid")?.as_u64()?).ok()?;
        let ts = obj
            .get("ts")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        // The plugin rejects port 0, and pid 0 would mean "our process group" to kill().
        (port != 0 && pid != 0).then_some(Self { port, pid, ts })
    }

    /// The exact file content: `{"port":…,"pid":…,"ts":…}` and a newline.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"port\":{},\"pid\":{},\"ts\":{}}}\n",
            self.port, self.pid, self.ts
        )
    }

    /// Whether this is this process's record.
    pub fn is_ours(&self) -> bool {
        self.pid == std::process::id()
    }
}

/// What [`DiscoveryDir::read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// No file.
    Missing,
    /// A file that is not a valid record (or could not be read).
    Malformed,
    /// A valid record.
    Record(DiscoveryRecord),
}

/// How long a discovery file that does not parse is given to become whole before it is
/// replaced (another presenter half-way through writing it in place).
pub const HALF_WRITTEN_GRACE: Duration = Duration::from_millis(100);

/// What [`DiscoveryDir::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishOutcome {
    /// Written; there was no file, or it was already ours.
    Published,
    /// Written over a malformed file (`None`) or a dead presenter's record.
    ReplacedStale {
        /// The record replaced, if it parsed.
        previous: Option<DiscoveryRecord>,
    },
    /// Not written: another live presenter owns the file.
    Conflict {
        /// The live owner's record.
        other: DiscoveryRecord,
    },
    /// Written over a live presenter's record because `force` was set.
    TookOver {
        /// The record replaced.
        previous: DiscoveryRecord,
    },
}

/// The directory holding discovery files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryDir {
    dir: PathBuf,
}

impl DiscoveryDir {
    /// `$XDG_RUNTIME_DIR/opencode-landstrip`, else `$TMPDIR` or `/tmp` + `/opencode-landstrip`.
    pub fn from_env() -> Self {
        Self::from_vars(
            std::env::var_os("XDG_RUNTIME_DIR"),
            std::env::var_os("TMPDIR"),
        )
    }

    /// [`from_env`](Self::from_env) with the variables passed in; empty counts as unset.
    pub fn from_vars(xdg_runtime_dir: Option<OsString>, tmpdir: Option<OsString>) -> Self {
        let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty());
        // std::env::temp_dir() would turn an empty TMPDIR into a relative path.
        let base = non_empty(xdg_runtime_dir)
            .or_else(|| non_empty(tmpdir))
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        Self::new(base)
    }

    /// Discovery files under `base/opencode-landstrip`.
    pub fn new(base: PathBuf) -> Self {
        Self {
            dir: base.join(DIR_NAME),
        }
    }

    /// The `opencode-landstrip` directory itself.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The discovery file for a project directory.
    pub fn file_for(&self, project: &Path) -> PathBuf {
        self.dir
            .join(format!("port-{}.json", project_hash(project)))
    }

    /// Creates the directory (0700) if missing; refuses one that is a symlink, not a
    /// directory, someone else's or open to group or others. The temp-dir fallback is shared
    /// by every user, so what is there is never followed, loosened or trusted.
    pub fn ensure_dir(&self) -> Result<(), DiscoveryError> {
        safe_fs::ensure_private_dir(&self.dir).map_err(DiscoveryError::Dir)
    }

    /// Reads a project's discovery file. Never fails: unreadable counts as malformed.
    pub fn read(&self, project: &Path) -> ReadOutcome {
        read_file(&self.file_for(project))
    }

    /// Publishes our record (this pid, `port`) for `project`, unless another live
    /// presenter owns the file and `force` is not set.
    /// A file that does not parse is looked at again [`HALF_WRITTEN_GRACE`] later before
    /// it counts as stale: the plugin writes its record in place (truncate, then write), so
    /// one read can fall between the two. Blocks (file I/O, and that pause).
    pub fn publish(
        &self,
        project: &Path,
        port: u16,
        force: bool,
    ) -> Result<PublishOutcome, DiscoveryError> {
        self.publish_observed(project, port, force, || {
            std::thread::sleep(HALF_WRITTEN_GRACE)
        })
    }

    /// [`Self::publish`], with `pause` run between a malformed read and the second look.
    fn publish_observed(
        &self,
        project: &Path,
        port: u16,
        force: bool,
        pause: impl FnOnce(),
    ) -> Result<PublishOutcome, DiscoveryError> {
        self.ensure_dir()?;
        let path = self.file_for(project);
        let mut seen = read_file(&path);
        if seen == ReadOutcome::Malformed {
            pause();
            seen = read_file(&path);
        }
        let outcome = match seen {
            ReadOutcome::Missing => PublishOutcome::Published,
            ReadOutcome::Malformed => PublishOutcome::ReplacedStale { previous: None },
            ReadOutcome::Record(r) if r.is_ours() => PublishOutcome::Published,
            ReadOutcome::Record(r) if !record_is_live(&r) => {
                PublishOutcome::ReplacedStale { previous: Some(r) }
            }
            ReadOutcome::Record(r) if !force => return Ok(PublishOutcome::Conflict { other: r }),
            ReadOutcome::Record(r) => PublishOutcome::TookOver { previous: r },
        };
        self.write_atomic(&path, &DiscoveryRecord::ours(port))?;
        Ok(outcome)
    }

    /// Removes the project's file only if it still names this pid and `port`.
    /// Returns whether it was removed.
    pub fn remove_if_ours(&self, project: &Path, port: u16) -> Result<bool, DiscoveryError> {
        let path = self.file_for(project);
        // A tiny window remains between this check and the unlink; the plugin
        // does not check at all, and there is no compare-and-unlink syscall.
        match read_file(&path) {
            ReadOutcome::Record(r) if r.is_ours() && r.port == port => {}
            _ => return Ok(false),
        }
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(DiscoveryError::Remove { path, source }),
        }
    }

    /// Writes `record` atomically (0600 from the start), so a reader never sees a partial
    /// file.
    fn write_atomic(&self, path: &Path, record: &DiscoveryRecord) -> Result<(), DiscoveryError> {
        safe_fs::write_atomic(
            path,
            record.to_json().as_bytes(),
            FileMode::Exact(FILE_MODE),
        )
        .map_err(|source| DiscoveryError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Reads a discovery file without following a symlink or blocking on a FIFO.
pub fn read_file(path: &Path) -> ReadOutcome {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return ReadOutcome::Missing,
        Err(e) => {
            tracing::debug!(path = %path.display(), "unreadable discovery file: {e}");
            return ReadOutcome::Malformed;
        }
    };
    match read_small(file) {
        Some(bytes) => {
            DiscoveryRecord::parse(&bytes).map_or(ReadOutcome::Malformed, ReadOutcome::Record)
        }
        None => ReadOutcome::Malformed,
    }
}

/// The content of a regular file of at most [`MAX_FILE_LEN`] bytes.
fn read_small(file: File) -> Option<Vec<u8>> {
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_LEN + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_FILE_LEN).then_some(bytes)
}

/// First 16 lowercase hex digits of SHA-256 of the project's realpath (or of the raw
/// path when it cannot be resolved), as the opencode-landstrip plugin computes it.
pub fn project_hash(project: &Path) -> String {
    let resolved = fs::canonicalize(project);
    let key = resolved.as_deref().unwrap_or(project);
    let digest = Sha256::digest(key.as_os_str().as_bytes());
    let mut hex = String::with_capacity(16);
    for byte in &digest[..8] {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether a record's owner is live: its pid exists and its port accepts a TCP
/// connect within [`LIVE_CONNECT_TIMEOUT`] (the plugin's rule since 0.19).
pub fn record_is_live(record: &DiscoveryRecord) -> bool {
    pid_alive(record.pid) && port_accepts(record.port, LIVE_CONNECT_TIMEOUT)
}

/// Whether 127.0.0.1:`port` accepts a TCP connection within `timeout`.
pub fn port_accepts(port: u16, timeout: Duration) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&addr, timeout).is_ok()
}

/// Whether a process with this pid exists (EPERM counts: it exists, owned by
/// someone else). Pid 0 and pids beyond `i32::MAX` are never alive.
pub fn pid_alive(pid: u32) -> bool {
    // Signal 0 delivers nothing; `send_signal` refuses pid 0 (our own process group).
    match crate::sys::send_signal(pid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

/// When a process started, in clock ticks since boot (`/proc/<pid>/stat` field 22): with
/// the pid, it tells one start of a program from the next.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold spaces or ')'; fields after the
    // last ')' are plain numbers: state is field 3, so starttime is the 20th of those.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A process's short name (`/proc/<pid>/comm`), such as `opencode`.
pub fn process_name(pid: u32) -> Option<String> {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let name = comm.trim_end_matches('\n');
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
    use std::process::{Child, Command};

    fn hex16(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn setup() -> (tempfile::TempDir, DiscoveryDir, tempfile::TempDir) {
        let base = tempfile::tempdir().unwrap();
        let dir = DiscoveryDir::new(base.path().to_path_buf());
        let project = tempfile::tempdir().unwrap();
        (base, dir, project)
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    /// A pid that surely belongs to no process: a reaped child's.
    fn dead_pid() -> u32 {
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    /// A live process that is not us, killed when dropped.
    struct Owner(Child);

    impl Owner {
        fn spawn() -> Self {
            Self(Command::new("sleep").arg("30").spawn().unwrap())
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn plant(dir: &DiscoveryDir, project: &Path, content: &[u8]) -> PathBuf {
        dir.ensure_dir().unwrap();
        let path = dir.file_for(project);
        fs::write(&path, content).unwrap();
        path
    }

    fn record_bytes(port: u16, pid: u32) -> Vec<u8> {
        DiscoveryRecord { port, pid, ts: 1 }.to_json().into_bytes()
    }

    #[test]
    fn file_name_hashes_the_realpath() {
        let (base, dir, _) = setup();
        let real = fs::canonicalize("/tmp").unwrap();
        let expected = format!("port-{}.json", hex16(real.as_os_str().as_bytes()));
        assert_eq!(
            dir.file_for(Path::new("/tmp")),
            base.path().join("opencode-landstrip").join(expected)
        );
        // A symlink to a directory names the same file as the directory.
        let (_b2, _d2, project) = setup();
        let link = base.path().join("link");
        symlink(project.path(), &link).unwrap();
        assert_eq!(project_hash(&link), project_hash(project.path()));
    }

    #[test]
    fn unresolvable_path_hashes_the_raw_string() {
        // printf %s /nonexistent/landstrip-tray/project | sha256sum
        assert_eq!(
            project_hash(Path::new("/nonexistent/landstrip-tray/project")),
            "0412043a8d88b838"
        );
    }

    #[test]
    fn dir_from_variables() {
        let d = DiscoveryDir::from_vars(Some("/run/user/1000".into()), Some("/var/tmp".into()));
        assert_eq!(d.path(), Path::new("/run/user/1000/opencode-landstrip"));
        let d = DiscoveryDir::from_vars(Some("".into()), Some("/var/tmp".into()));
        assert_eq!(d.path(), Path::new("/var/tmp/opencode-landstrip"));
        let d = DiscoveryDir::from_vars(None, None);
        assert_eq!(d.path(), Path::new("/tmp/opencode-landstrip"));
        let d = DiscoveryDir::from_vars(None, Some("".into()));
        assert_eq!(d.path(), Path::new("/tmp/opencode-landstrip"));
    }

    #[test]
    fn publish_writes_exact_content_with_private_modes() {
        let (_base, dir, project) = setup();
        let before = DiscoveryRecord::ours(1).ts;
        let outcome = dir.publish(project.path(), 40123, false).unwrap();
        assert_eq!(outcome, PublishOutcome::Published);

        let path = dir.file_for(project.path());
        let content = fs::read_to_string(&path).unwrap();
        let ReadOutcome::Record(rec) = dir.read(project.path()) else {
            panic!("no record");
        };
        assert_eq!(
            content,
            format!(
                "{{\"port\":40123,\"pid\":{},\"ts\":{}}}\n",
                std::process::id(),
                rec.ts
            )
        );
        assert!(rec.ts >= before && rec.ts <= DiscoveryRecord::ours(1).ts);
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&path), 0o600);
        // No temp file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        // Publishing again (ours) just rewrites.
        assert_eq!(
            dir.publish(project.path(), 40124, false).unwrap(),
            PublishOutcome::Published
        );
        assert!(matches!(dir.read(project.path()), ReadOutcome::Record(r) if r.port == 40124));
    }

    #[test]
    fn an_open_directory_is_refused_and_left_alone() {
        let (_base, dir, project) = setup();
        fs::create_dir_all(dir.path()).unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let err = dir.publish(project.path(), 1000, false).unwrap_err();
        assert!(
            matches!(
                err,
                DiscoveryError::Dir(PrivateDirError::TooOpen { mode: 0o755, .. })
            ),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("not published")
                && text.contains(&dir.path().display().to_string())
                && text.contains("0755"),
            "{text}"
        );
        assert_eq!(mode(dir.path()), 0o755, "not changed");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_symlinked_temp_fallback_is_never_followed() {
        // XDG_RUNTIME_DIR unset: the shared temp dir, where anyone may plant a link.
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        fs::set_permissions(elsewhere.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let dir = DiscoveryDir::from_vars(None, Some(tmp.path().into()));
        assert_eq!(dir.path(), tmp.path().join(DIR_NAME));
        symlink(elsewhere.path(), dir.path()).unwrap();
        let project = tempfile::tempdir().unwrap();
        let err = dir.publish(project.path(), 1000, false).unwrap_err();
        assert!(
            matches!(err, DiscoveryError::Dir(PrivateDirError::Symlink { .. })),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&dir.path().display().to_string())
                && text.contains(&elsewhere.path().display().to_string())
                && text.contains("symbolic link"),
            "{text}"
        );
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        assert!(dir.ensure_dir().is_err());
    }

    #[test]
    fn a_directory_of_another_uid_is_refused() {
        // chown to another uid needs root. Runs here and in CI are root: a run that is
        // not fails, rather than passing without having looked.
        assert_eq!(
            crate::uid(),
            0,
            "needs root: a directory owned by another uid is made with chown"
        );
        let (_base, dir, project) = setup();
        dir.ensure_dir().unwrap();
        std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        let err = dir.publish(project.path(), 1000, false).unwrap_err();
        assert!(
            matches!(
                err,
                DiscoveryError::Dir(PrivateDirError::NotOwned { owner: 65534, .. })
            ),
            "{err}"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn dead_owner_is_replaced() {
        let (_base, dir, project) = setup();
        let pid = dead_pid();
        assert!(!pid_alive(pid));
        plant(&dir, project.path(), &record_bytes(5555, pid));
        assert_eq!(
            dir.publish(project.path(), 40123, false).unwrap(),
            PublishOutcome::ReplacedStale {
                previous: Some(DiscoveryRecord {
                    port: 5555,
                    pid,
                    ts: 1
                })
            }
        );
        assert!(matches!(dir.read(project.path()), ReadOutcome::Record(r) if r.is_ours()));
    }

    #[test]
    fn live_pid_with_a_closed_port_is_stale() {
        let (_base, dir, project) = setup();
        let owner = Owner::spawn();
        // Bound and not listening for the whole test: refused, and nobody else's.
        let closed = tokio::net::TcpSocket::new_v4().unwrap();
        closed.bind((Ipv4Addr::LOCALHOST, 0).into()).unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        plant(
            &dir,
            project.path(),
            &record_bytes(closed_port, owner.pid()),
        );
        assert!(matches!(
            dir.publish(project.path(), 40123, false).unwrap(),
            PublishOutcome::ReplacedStale { previous: Some(_) }
        ));
    }

    #[test]
    fn live_owner_conflicts_unless_forced() {
        let (_base, dir, project) = setup();
        let owner = Owner::spawn();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let theirs = record_bytes(port, owner.pid());
        let path = plant(&dir, project.path(), &theirs);
        let other = DiscoveryRecord {
            port,
            pid: owner.pid(),
            ts: 1,
        };

        assert_eq!(
            dir.publish(project.path(), 40123, false).unwrap(),
            PublishOutcome::Conflict { other }
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            theirs,
            "a conflict must not write"
        );

        assert_eq!(
            dir.publish(project.path(), 40123, true).unwrap(),
            PublishOutcome::TookOver { previous: other }
        );
        assert!(
            matches!(dir.read(project.path()), ReadOutcome::Record(r) if r.is_ours() && r.port == 40123)
        );
        drop(listener);
    }

    #[test]
    fn malformed_file_is_replaced() {
        let (_base, dir, project) = setup();
        plant(&dir, project.path(), b"{not json");
        assert_eq!(dir.read(project.path()), ReadOutcome::Malformed);
        assert_eq!(
            dir.publish(project.path(), 40123, false).unwrap(),
            PublishOutcome::ReplacedStale { previous: None }
        );
        assert!(matches!(dir.read(project.path()), ReadOutcome::Record(_)));
    }

    #[test]
    fn a_file_caught_half_written_is_looked_at_again_before_it_is_replaced() {
        let (_base, dir, project) = setup();
        let owner = Owner::spawn();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let theirs = record_bytes(port, owner.pid());
        // Truncated, as the plugin's in-place write leaves it for a moment.
        let path = plant(&dir, project.path(), b"");
        let outcome = dir
            .publish_observed(project.path(), 40123, false, || {
                fs::write(&path, &theirs).unwrap()
            })
            .unwrap();
        assert!(
            matches!(outcome, PublishOutcome::Conflict { other } if other.pid == owner.pid()),
            "{outcome:?}"
        );
        assert_eq!(fs::read(&path).unwrap(), theirs, "their record was kept");
        drop(listener);
    }

    #[test]
    fn read_outcomes() {
        let (_base, dir, project) = setup();
        let p = project.path();
        assert_eq!(dir.read(p), ReadOutcome::Missing);
        let cases: [(&[u8], ReadOutcome); 8] = [
            (
                br#"{"port":1,"pid":2,"ts":3,"extra":{"x":1}}"#,
                ReadOutcome::Record(DiscoveryRecord {
                    port: 1,
                    pid: 2,
                    ts: 3,
                }),
            ),
            (
                br#"{"port":1,"pid":2}"#,
                ReadOutcome::Record(DiscoveryRecord {
                    port: 1,
                    pid: 2,
                    ts: 0,
                }),
            ),
            (b"[1,2,3]", ReadOutcome::Malformed),
            (br#"{"port":0,"pid":2,"ts":3}"#, ReadOutcome::Malformed),
            (br#"{"port":70000,"pid":2,"ts":3}"#, ReadOutcome::Malformed),
            (br#"{"port":1,"pid":-2,"ts":3}"#, ReadOutcome::Malformed),
            (br#"{"port":"1","pid":2,"ts":3}"#, ReadOutcome::Malformed),
            (b"", ReadOutcome::Malformed),
        ];
        for (content, expected) in cases {
            plant(&dir, p, content);
            assert_eq!(
                dir.read(p),
                expected,
                "{}",
                String::from_utf8_lossy(content)
            );
        }
        // Oversized files and symlinks are not discovery files.
        let mut big = br#"{"port":1,"pid":2,"ts":3}"#.to_vec();
        big.resize(MAX_FILE_LEN as usize + 1, b' ');
        plant(&dir, p, &big);
        assert_eq!(dir.read(p), ReadOutcome::Malformed);
        let path = dir.file_for(p);
        fs::remove_file(&path).unwrap();
        let target = dir.path().join("target.json");
        fs::write(&target, record_bytes(1, 2)).unwrap();
        symlink(&target, &path).unwrap();
        assert_eq!(dir.read(p), ReadOutcome::Malformed);
    }

    #[test]
    fn record_round_trips() {
        let r = DiscoveryRecord {
            port: 40123,
            pid: 12345,
            ts: 1_764_425_000_000,
        };
        assert_eq!(
            r.to_json(),
            "{\"port\":40123,\"pid\":12345,\"ts\":1764425000000}\n"
        );
        assert_eq!(DiscoveryRecord::parse(r.to_json().as_bytes()), Some(r));
    }

    #[test]
    fn remove_if_ours_only_removes_our_record() {
        let (_base, dir, project) = setup();
        let p = project.path();
        assert!(!dir.remove_if_ours(p, 40123).unwrap(), "missing file");

        let owner = Owner::spawn();
        let theirs = record_bytes(40123, owner.pid());
        let path = plant(&dir, p, &theirs);
        assert!(!dir.remove_if_ours(p, 40123).unwrap());
        assert_eq!(fs::read(&path).unwrap(), theirs);

        dir.publish(p, 40123, true).unwrap();
        assert!(
            !dir.remove_if_ours(p, 40124).unwrap(),
            "our pid, other port"
        );
        assert!(path.exists());
        assert!(dir.remove_if_ours(p, 40123).unwrap());
        assert!(!path.exists());
    }

    #[test]
    fn a_process_start_tells_starts_apart() {
        let me = std::process::id();
        assert!(process_start(me).is_some());
        assert_eq!(process_start(me), process_start(me));
        let owner = Owner::spawn();
        // The child may still carry our name for a moment after spawn returns (gVisor
        // updates /proc a little later): wait, bounded, for the name exec gives it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_name(owner.pid()).as_deref() != Some("sleep")
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(process_name(owner.pid()).as_deref(), Some("sleep"));
        assert!(process_start(owner.pid()) >= process_start(me));
        assert_eq!(process_start(dead_pid()), None);
        assert_eq!(process_name(dead_pid()), None);
    }

    #[test]
    fn pid_liveness() {
        assert!(pid_alive(std::process::id()));
        // pid 1 always exists; as non-root kill() says EPERM, which counts as alive.
        assert!(pid_alive(1));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        assert!(!pid_alive(i32::MAX as u32 + 1));
        assert!(!pid_alive(dead_pid()));
    }
}
