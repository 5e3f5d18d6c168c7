//! Whether a local process runs inside a sandbox, so that the control socket never lets a
//! sandboxed program approve its own requests (docs/ARCHITECTURE.md, the control socket).
//!
//! The peer's pid comes from the kernel (SO_PEERCRED: the process that called `connect`)
//! and the verdict from `/proc/PID/status` and `/proc/PID/fd` (ours to read: the peer has our
//! uid, which the server checks first). A peer counts as sandboxed when any of these holds:
//!
//! - **`NoNewPrivs: 1` or `Seccomp:` not 0.** landstrip sets `no_new_privs` (Landlock and
//!   an unprivileged seccomp filter both need it) and installs seccomp filters (its broker
//!   is a seccomp user-notification filter) before it starts the program. Both are
//!   inherited by every child and no process can drop them, so double-forking, being
//!   reparented to init or exec'ing something else does not get a sandboxed program out.
//!   Either one is enough: a sandbox without one of them is still caught.
//! - **It holds a seccomp user-notification descriptor** (`anon_inode:seccomp notify` in
//!   `/proc/PID/fd`): it is a sandbox's supervisor. landstrip 0.19 makes a sandboxed
//!   program's `connect` itself, in its unconfined supervisor, and hands the program the
//!   socket, so SO_PEERCRED names the supervisor, which carries none of the markers above.
//!   The supervisor never asks anything of its own; whatever arrives on such a connection
//!   comes from the program it supervises. The descriptor is not named after landstrip, so
//!   a renamed binary is caught too.
//! - **A process named `landstrip` among its ancestors** (following `PPid`). This alone
//!   could be escaped (a double fork reparents the grandchild away from landstrip); it is
//!   kept as a second sign for a landstrip that ran without the markers above (as root,
//!   say).
//! - **Nothing can be told** (fail closed): the kernel gave no pid (the peer lives in
//!   another pid namespace), `/proc/PID/status` or `/proc/PID/fd` cannot be read, or the
//!   status has neither field.
//!
//! Observed with landstrip 0.19.2 and 0.18.27 (under gVisor): the program shows
//! `NoNewPrivs: 1`, `Seccomp: 2` and 3 (0.19.2) or 2 (0.18.27) `Seccomp_filters`; its parent
//! is the unconfined landstrip supervisor (`Name: landstrip`, no markers); under 0.18.27 a
//! grandchild that outlives its parent (0.19.2 lets nothing outlive the program) keeps the
//! markers. With a policy that allows Unix sockets, a connection from inside 0.18.27 has
//! the program as its peer, one from inside 0.19.2 the supervisor (which then holds the
//! socket and a `seccomp notify` descriptor).
//!
//! False positives, accepted because a sandboxed peer must never get through: a command run
//! from inside any other seccomp or `no_new_privs` confinement — a Docker or Podman container
//! (their default seccomp profile), a Flatpak or Snap, a systemd service with
//! `NoNewPrivileges=` or `SystemCallFilter=` — is refused too, as is one holding a seccomp
//! notification descriptor (a container runtime's seccomp agent); the refusal says which
//! sign it saw, so its user can run the command from a plain shell instead.
//!
//! Limits: the signs are read once, when the connection is accepted. A connection opened
//! outside a sandbox and then handed into one (an inherited descriptor) counts as from
//! outside: handing it in was the outside's choice. And a pid is only meaningful while its
//! process lives: if the connecting process exits and the kernel hands its pid to an
//! unconfined process before the check reads `/proc`, that process is judged instead (pids
//! are reused only after the whole pid space has gone round).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where the kernel shows processes.
const PROC: &str = "/proc";

/// The name (`Name:` in `/proc/PID/status`) of the landstrip supervisor.
const LANDSTRIP: &str = "landstrip";

/// What `/proc/PID/fd/N` points to for a seccomp user-notification descriptor (Linux and
/// gVisor print it so; the bracketed form is accepted in case a kernel ever does).
const SECCOMP_NOTIFY: [&str; 2] = ["anon_inode:seccomp notify", "anon_inode:[seccomp notify]"];

/// How many ancestors are looked at (a bound against a `PPid` cycle in a strange /proc).
const MAX_ANCESTORS: usize = 256;

/// Where a peer process stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No sign of a sandbox: it may change things.
    Outside {
        /// Its pid.
        pid: u32,
    },
    /// Inside a sandbox, or it cannot be told: it may only look.
    Inside(Inside),
}

impl Verdict {
    /// The sandbox it is in, if any.
    pub fn inside(&self) -> Option<&Inside> {
        match self {
            Verdict::Outside { .. } => None,
            Verdict::Inside(inside) => Some(inside),
        }
    }
}

/// A peer judged to be inside a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inside {
    /// Its pid, when the kernel gave one.
    pub pid: Option<u32>,
    /// The sign seen.
    pub sign: Sign,
}

impl Inside {
    /// The sentence a refused request is answered with.
    pub fn refusal(&self) -> String {
        let pid = match self.pid {
            Some(pid) => format!("pid {pid}"),
            None => "pid unknown".to_owned(),
        };
        format!(
            "refused: this request comes from inside a sandbox ({pid}, {}); answer it from \
             outside the sandbox",
            self.sign
        )
    }
}

/// Why a peer counts as sandboxed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sign {
    /// It runs with `no_new_privs`, a seccomp filter, or both.
    Confined {
        /// `NoNewPrivs: 1`.
        no_new_privs: bool,
        /// `Seccomp:` 0 none, 1 strict, 2 filter.
        seccomp: u8,
        /// `Seccomp_filters:` (Linux 5.9 and later).
        filters: Option<u32>,
    },
    /// It holds a seccomp user-notification descriptor: a sandbox's supervisor, connecting on
    /// behalf of the program it supervises.
    Supervisor {
        /// Its command name.
        name: Option<String>,
    },
    /// A process named landstrip is among its ancestors.
    LandstripAncestor {
        /// That process.
        pid: u32,
    },
    /// The kernel gave no pid (another pid namespace).
    NoPid,
    /// Its `/proc/PID/status` could not be read.
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        error: String,
    },
    /// Its status shows neither `NoNewPrivs` nor `Seccomp`.
    Unrecognised,
}

impl fmt::Display for Sign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sign::Confined {
                no_new_privs,
                seccomp,
                filters,
            } => {
                let mut marks = Vec::new();
                if *no_new_privs {
                    marks.push("no_new_privs".to_owned());
                }
                match (seccomp, filters) {
                    (0, _) => {}
                    (1, _) => marks.push("seccomp strict mode".to_owned()),
                    (_, Some(1)) => marks.push("a seccomp filter".to_owned()),
                    (_, Some(n)) => marks.push(format!("{n} seccomp filters")),
                    (_, None) => marks.push("seccomp filters".to_owned()),
                }
                write!(
                    f,
                    "it runs with {}, which landstrip sets and no process can drop; other \
                     sandboxes and containers set them too",
                    marks.join(" and ")
                )
            }
            Sign::Supervisor { name } => {
                let name = name.as_deref().unwrap_or("a sandbox");
                write!(
                    f,
                    "it is {name}'s supervisor (it holds a seccomp notification descriptor), \
                     which connects on behalf of the sandboxed program"
                )
            }
            Sign::LandstripAncestor { pid } => {
                write!(f, "it was started by landstrip (pid {pid})")
            }
            Sign::NoPid => write!(
                f,
                "the kernel did not say which process it is, so it is treated as sandboxed"
            ),
            Sign::Unreadable { file, error } => write!(
                f,
                "{} cannot be read ({error}), so it is treated as sandboxed",
                file.display()
            ),
            Sign::Unrecognised => write!(
                f,
                "its status shows neither NoNewPrivs nor Seccomp, so it is treated as sandboxed"
            ),
        }
    }
}

/// What `/proc/PID/status` says about confinement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `Name:` (the command name, at most 15 bytes).
    pub name: Option<String>,
    /// `PPid:`.
    pub ppid: Option<u32>,
    /// `NoNewPrivs:` (Linux 4.10 and later).
    pub no_new_privs: Option<bool>,
    /// `Seccomp:` (Linux 3.8 and later).
    pub seccomp: Option<u8>,
    /// `Seccomp_filters:` (Linux 5.9 and later).
    pub seccomp_filters: Option<u32>,
}

impl Status {
    /// Parses the text of a `/proc/PID/status` file; unknown or malformed lines are skipped.
    pub fn parse(text: &str) -> Self {
        let mut status = Self::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key {
                "Name" => status.name = Some(value.to_owned()),
                "PPid" => status.ppid = value.parse().ok(),
                "NoNewPrivs" => status.no_new_privs = value.parse::<u8>().ok().map(|v| v != 0),
                "Seccomp" => status.seccomp = value.parse().ok(),
                "Seccomp_filters" => status.seccomp_filters = value.parse().ok(),
                _ => {}
            }
        }
        status
    }

    /// The confinement sign this status shows by itself, if any.
    fn sign(&self) -> Option<Sign> {
        if self.no_new_privs.is_none() && self.seccomp.is_none() {
            return Some(Sign::Unrecognised);
        }
        let no_new_privs = self.no_new_privs.unwrap_or(false);
        let seccomp = self.seccomp.unwrap_or(0);
        (no_new_privs || seccomp != 0).then_some(Sign::Confined {
            no_new_privs,
            seccomp,
            filters: self.seccomp_filters,
        })
    }
}

/// Judges the process with this pid (as SO_PEERCRED gives it; None or 0: unknown). Reads
/// procfs: call it off the async runtime.
pub fn judge(pid: Option<i32>) -> Verdict {
    judge_in(Path::new(PROC), pid)
}

/// [`judge`] against a procfs mounted at `proc` (a directory of `PID/status` files).
pub fn judge_in(proc: &Path, pid: Option<i32>) -> Verdict {
    let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()).filter(|&p| p != 0) else {
        return Verdict::Inside(Inside {
            pid: None,
            sign: Sign::NoPid,
        });
    };
    let inside = |sign| {
        Verdict::Inside(Inside {
            pid: Some(pid),
            sign,
        })
    };
    let status = match read_status(proc, pid) {
        Ok(status) => status,
        Err((file, e)) => {
            return inside(Sign::Unreadable {
                file,
                error: e.to_string(),
            })
        }
    };
    if let Some(sign) = status.sign() {
        return inside(sign);
    }
    match holds_seccomp_notify(proc, pid) {
        Ok(false) => {}
        Ok(true) => {
            return inside(Sign::Supervisor {
                name: status.name.clone(),
            })
        }
        Err((file, e)) => {
            return inside(Sign::Unreadable {
                file,
                error: e.to_string(),
            })
        }
    }
    if let Some(ancestor) = landstrip_ancestor(proc, pid, &status) {
        return inside(Sign::LandstripAncestor { pid: ancestor });
    }
    Verdict::Outside { pid }
}

fn read_status(proc: &Path, pid: u32) -> Result<Status, (PathBuf, io::Error)> {
    let file = proc.join(pid.to_string()).join("status");
    match std::fs::read_to_string(&file) {
        Ok(text) => Ok(Status::parse(&text)),
        Err(e) => Err((file, e)),
    }
}

/// Whether `pid` holds a seccomp user-notification descriptor. A descriptor closed while
/// the directory is read is skipped.
fn holds_seccomp_notify(proc: &Path, pid: u32) -> Result<bool, (PathBuf, io::Error)> {
    let dir = proc.join(pid.to_string()).join("fd");
    let entries = std::fs::read_dir(&dir).map_err(|e| (dir.clone(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| (dir.clone(), e))?;
        if let Ok(target) = std::fs::read_link(entry.path()) {
            if SECCOMP_NOTIFY.iter().any(|s| target.as_os_str() == *s) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The nearest process named landstrip among `pid` (with `status`) and its ancestors. An
/// ancestor that cannot be read ends the walk: it has exited, and its children were
/// reparented (the markers, not the ancestry, catch those).
fn landstrip_ancestor(proc: &Path, pid: u32, status: &Status) -> Option<u32> {
    let (mut pid, mut status) = (pid, status.clone());
    for _ in 0..MAX_ANCESTORS {
        if status.name.as_deref() == Some(LANDSTRIP) {
            return Some(pid);
        }
        let parent = status.ppid.filter(|&p| p > 1 && p != pid)?;
        status = read_status(proc, parent).ok()?;
        pid = parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status file as the kernel prints it (fields abridged).
    fn status(name: &str, ppid: u32, no_new_privs: u8, seccomp: u8, filters: u32) -> String {
        format!(
            "Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t9\nPPid:\t{ppid}\n\
             NoNewPrivs:\t{no_new_privs}\nSeccomp:\t{seccomp}\nSeccomp_filters:\t{filters}\n\
             Cpus_allowed:\tff\n"
        )
    }

    /// A fake procfs: `(pid, status text)` pairs, each with an `fd` directory holding
    /// standard descriptors.
    fn procfs(entries: &[(u32, String)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (pid, text) in entries {
            let dir = root.path().join(pid.to_string());
            std::fs::create_dir_all(dir.join("fd")).unwrap();
            std::fs::write(dir.join("status"), text).unwrap();
            add_fd(root.path(), *pid, 0, "/dev/null");
            add_fd(root.path(), *pid, 1, "pipe:[136703]");
        }
        root
    }

    /// Adds descriptor `fd` pointing at `target` to `pid` in a fake procfs.
    fn add_fd(proc: &Path, pid: u32, fd: u32, target: &str) {
        let link = proc.join(format!("{pid}/fd/{fd}"));
        std::os::unix::fs::symlink(target, link).unwrap();
    }

    #[test]
    fn status_fields_are_parsed_and_odd_lines_skipped() {
        let parsed = Status::parse(&format!("garbage\nPPid:\tx\n{}", status("sh", 7, 1, 2, 3)));
        assert_eq!(
            parsed,
            Status {
                name: Some("sh".into()),
                ppid: Some(7),
                no_new_privs: Some(true),
                seccomp: Some(2),
                seccomp_filters: Some(3),
            }
        );
        assert_eq!(Status::parse("Name:\tx\n").sign(), Some(Sign::Unrecognised));
        // A kernel before 4.10 prints Seccomp but not NoNewPrivs.
        assert_eq!(Status::parse("Seccomp:\t0\n").sign(), None);
    }

    #[test]
    fn either_marker_makes_a_process_sandboxed() {
        let proc = procfs(&[
            (10, status("bash", 1, 0, 0, 0)),
            (11, status("python3", 10, 1, 2, 3)),
            (12, status("docker-thing", 10, 0, 2, 1)),
            (13, status("flatpak-thing", 10, 1, 0, 0)),
        ]);
        assert_eq!(
            judge_in(proc.path(), Some(10)),
            Verdict::Outside { pid: 10 }
        );
        for (pid, no_new_privs, seccomp, filters) in
            [(11, true, 2, 3), (12, false, 2, 1), (13, true, 0, 0)]
        {
            assert_eq!(
                judge_in(proc.path(), Some(pid)),
                Verdict::Inside(Inside {
                    pid: Some(pid as u32),
                    sign: Sign::Confined {
                        no_new_privs,
                        seccomp,
                        filters: Some(filters),
                    },
                }),
                "pid {pid}"
            );
        }
    }

    #[test]
    fn a_seccomp_supervisor_is_sandboxed_whatever_its_name() {
        // landstrip 0.19.2's supervisor as the server sees it: no markers, parent a shell.
        let proc = procfs(&[
            (40, status("bash", 1, 0, 0, 0)),
            (41, status("sandboxer", 40, 0, 0, 0)),
            (42, status("plain", 40, 0, 0, 0)),
        ]);
        add_fd(proc.path(), 41, 3, "socket:[136704]");
        add_fd(proc.path(), 41, 4, "anon_inode:seccomp notify");
        add_fd(proc.path(), 42, 4, "anon_inode:[eventfd]");
        let verdict = judge_in(proc.path(), Some(41));
        assert_eq!(
            verdict.inside().map(|i| &i.sign),
            Some(&Sign::Supervisor {
                name: Some("sandboxer".into())
            })
        );
        assert_eq!(
            judge_in(proc.path(), Some(42)),
            Verdict::Outside { pid: 42 }
        );
        // Its descriptors cannot be listed: it cannot be told.
        std::fs::remove_dir_all(proc.path().join("42/fd")).unwrap();
        assert!(
            matches!(
                judge_in(proc.path(), Some(42)).inside(),
                Some(Inside { sign: Sign::Unreadable { file, .. }, .. }) if file.ends_with("42/fd")
            ),
            "an unreadable fd directory"
        );
    }

    #[test]
    fn a_landstrip_ancestor_makes_a_process_sandboxed_however_far_up() {
        let proc = procfs(&[
            (20, status("bash", 1, 0, 0, 0)),
            (21, status("landstrip", 20, 0, 0, 0)),
            (22, status("sh", 21, 0, 0, 0)),
            (23, status("python3", 22, 0, 0, 0)),
            // Its parent has exited: the walk ends there, without a verdict from it.
            (24, status("orphan", 99, 0, 0, 0)),
            // A cycle in a strange /proc ends too.
            (25, status("a", 26, 0, 0, 0)),
            (26, status("b", 25, 0, 0, 0)),
        ]);
        let verdict = judge_in(proc.path(), Some(23));
        assert_eq!(
            verdict.inside().map(|i| &i.sign),
            Some(&Sign::LandstripAncestor { pid: 21 })
        );
        for pid in [20, 24, 25] {
            assert_eq!(
                judge_in(proc.path(), Some(pid)),
                Verdict::Outside { pid: pid as u32 }
            );
        }
    }

    #[test]
    fn what_cannot_be_told_is_sandboxed() {
        let proc = procfs(&[(30, "Name:\told\n".to_owned())]);
        for pid in [None, Some(0), Some(-1)] {
            assert_eq!(
                judge_in(proc.path(), pid),
                Verdict::Inside(Inside {
                    pid: None,
                    sign: Sign::NoPid
                })
            );
        }
        let gone = judge_in(proc.path(), Some(31));
        let Some(Inside {
            pid: Some(31),
            sign: Sign::Unreadable { file, .. },
        }) = gone.inside()
        else {
            panic!("{gone:?}");
        };
        assert_eq!(file, &proc.path().join("31/status"));
        assert_eq!(
            judge_in(proc.path(), Some(30)).inside().map(|i| &i.sign),
            Some(&Sign::Unrecognised)
        );
    }

    #[test]
    fn the_refusal_names_the_pid_and_the_sign() {
        let inside = Inside {
            pid: Some(4242),
            sign: Sign::Confined {
                no_new_privs: true,
                seccomp: 2,
                filters: Some(3),
            },
        };
        assert_eq!(
            inside.refusal(),
            "refused: this request comes from inside a sandbox (pid 4242, it runs with \
             no_new_privs and 3 seccomp filters, which landstrip sets and no process can \
             drop; other sandboxes and containers set them too); answer it from outside the \
             sandbox"
        );
        let unknown = Inside {
            pid: None,
            sign: Sign::NoPid,
        };
        assert!(
            unknown.refusal().starts_with(
                "refused: this request comes from inside a sandbox (pid unknown, the kernel"
            ),
            "{}",
            unknown.refusal()
        );
    }

    #[test]
    fn the_real_procfs_is_read() {
        // Whatever this test process is confined by, the verdict must match what its own
        // status file says; a pid that does not exist is refused.
        let own = std::fs::read_to_string("/proc/self/status").unwrap();
        let pid = i32::try_from(std::process::id()).unwrap();
        let verdict = judge(Some(pid));
        match Status::parse(&own).sign() {
            Some(sign) => assert_eq!(verdict.inside().map(|i| &i.sign), Some(&sign)),
            None => assert!(
                matches!(verdict, Verdict::Outside { .. })
                    || matches!(
                        verdict.inside(),
                        Some(Inside {
                            sign: Sign::LandstripAncestor { .. },
                            ..
                        })
                    ),
                "{verdict:?}"
            ),
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = i32::try_from(child.id()).unwrap();
        child.wait().unwrap();
        assert!(
            matches!(
                judge(Some(gone)).inside(),
                Some(Inside {
                    sign: Sign::Unreadable { .. },
                    ..
                })
            ),
            "a reaped child's pid"
        );
    }
}
