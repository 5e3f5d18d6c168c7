//! The asking process and its parents, read from `/proc`: each one's command line, its
//! executable and whether it runs confined, up to the command landstrip started (the
//! process whose parent is landstrip itself). landstrip reports host pids (it runs in the
//! app's pid namespace, checked with 0.18.27 and 0.19.2), so `process.pid` names the
//! process here directly.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// At most this many processes are read, the asking one included.
pub const MAX_DEPTH: usize = 16;

/// At most this much of one command line is read.
pub const MAX_CMDLINE: u64 = 64 * 1024;

/// At most this much of landstrip's environment is read (variables past it are not
/// seen).
pub const MAX_ENVIRON: u64 = 256 * 1024;

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcEntry {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid (0 when it has none).
    pub ppid: u32,
    /// Its executable, when readable.
    pub exe: Option<String>,
    /// Its arguments (lossy UTF-8), at most [`MAX_CMDLINE`] bytes of them.
    pub argv: Vec<String>,
    /// The command line was longer than what was read.
    pub argv_cut: bool,
    /// It runs under `no_new_privs` or a seccomp filter, as everything landstrip starts
    /// does (and landstrip itself does not).
    pub confined: bool,
}

/// The asking process and the parents between it and landstrip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// The asking process first, the command landstrip started last.
    pub chain: Vec<ProcEntry>,
    /// [`MAX_DEPTH`] was reached before the command landstrip started.
    pub cut: bool,
    /// landstrip's own process, the parent of the command it started: known when that
    /// parent's executable is named landstrip and it runs unconfined. A sandboxed program
    /// could start a program of its own named landstrip and ask from under it, but
    /// nothing it starts can shed the sandbox's `no_new_privs` or seccomp filter.
    pub landstrip: Option<u32>,
}

/// Reads `pid` and its parents under `proc` (`/proc`). None when the asking process is
/// gone, unreadable, is not the program the query names (`expected_exe`: its pid was
/// reused), or is not confined: anything may connect to the query port and name a pid,
/// and the command line of a process outside any sandbox is none of its business.
pub fn walk(proc: &Path, pid: u32, expected_exe: Option<&str>) -> Option<Walk> {
    let first = read_entry(proc, pid).ok()?;
    if !first.confined {
        return None;
    }
    if let (Some(expected), Some(exe)) = (expected_exe, first.exe.as_deref()) {
        if expected != exe {
            return None;
        }
    }
    let mut chain = vec![first];
    let mut landstrip = None;
    while let Some(last) = chain.last() {
        if last.ppid <= 1 {
            break;
        }
        let Ok(parent) = read_entry(proc, last.ppid) else {
            break;
        };
        if is_landstrip(&parent) || !parent.confined {
            if is_landstrip(&parent) && !parent.confined {
                landstrip = Some(parent.pid);
            }
            break;
        }
        if chain.len() == MAX_DEPTH {
            return Some(Walk {
                chain,
                cut: true,
                landstrip: None,
            });
        }
        chain.push(parent);
    }
    Some(Walk {
        chain,
        cut: false,
        landstrip,
    })
}

/// The variables `names` of process `pid`'s environment (`/proc/PID/environ`, at most
/// [`MAX_ENVIRON`] bytes of it; a variable cut by that bound is dropped). Only the
/// process's own user may read it.
pub fn read_environ(proc: &Path, pid: u32, names: &[&str]) -> io::Result<Vec<(String, String)>> {
    let mut bytes = Vec::new();
    File::open(proc.join(pid.to_string()).join("environ"))?
        .take(MAX_ENVIRON + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ENVIRON {
        bytes.truncate(MAX_ENVIRON as usize);
        // The last variable read is not whole.
        let end = bytes.iter().rposition(|b| *b == 0).unwrap_or(0);
        bytes.truncate(end);
    }
    Ok(bytes
        .split(|b| *b == 0)
        .filter_map(|pair| {
            let pair = String::from_utf8_lossy(pair);
            let (name, value) = pair.split_once('=')?;
            names
                .contains(&name)
                .then(|| (name.to_owned(), value.to_owned()))
        })
        .collect())
}

/// landstrip's own process: its executable is named landstrip.
pub fn is_landstrip(entry: &ProcEntry) -> bool {
    entry
        .exe
        .as_deref()
        .and_then(|e| Path::new(e).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("landstrip"))
}

/// Process `pid`'s parent, from its `stat` alone (cheaper than [`read_entry`]).
pub fn parent_pid(proc: &Path, pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
    parent_of(&stat)
}

/// One process's entry.
pub fn read_entry(proc: &Path, pid: u32) -> io::Result<ProcEntry> {
    let dir = proc.join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat"))?;
    let ppid = parent_of(&stat).ok_or_else(|| io::Error::other("unreadable stat"))?;
    let (argv, argv_cut) = read_cmdline(&dir.join("cmdline"))?;
    let exe = std::fs::read_link(dir.join("exe")).ok().map(exe_text);
    let confined = std::fs::read_to_string(dir.join("status"))
        .map(|s| confined(&s))
        .unwrap_or(false);
    Ok(ProcEntry {
        pid,
        ppid,
        exe,
        argv,
        argv_cut,
        confined,
    })
}

/// The executable path as text, without the kernel's " (deleted)" mark.
fn exe_text(path: PathBuf) -> String {
    let text = path.to_string_lossy().into_owned();
    match text.strip_suffix(" (deleted)") {
        Some(stripped) => stripped.to_owned(),
        None => text,
    }
}

/// The ppid field of `/proc/PID/stat`: the fourth, counted after the command name,
/// which is in parentheses and may hold spaces and parentheses itself.
fn parent_of(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn read_cmdline(path: &Path) -> io::Result<(Vec<String>, bool)> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(MAX_CMDLINE + 1)
        .read_to_end(&mut bytes)?;
    let cut = bytes.len() as u64 > MAX_CMDLINE;
    bytes.truncate(MAX_CMDLINE as usize);
    if bytes.last() == Some(&0) {
        bytes.pop();
    }
    if bytes.is_empty() {
        return Ok((Vec::new(), cut));
    }
    let argv = bytes
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    Ok((argv, cut))
}

/// `NoNewPrivs: 1` or a seccomp mode in `/proc/PID/status`.
fn confined(status: &str) -> bool {
    status.lines().any(|line| {
        let field = |name: &str| line.strip_prefix(name).map(str::trim);
        field("NoNewPrivs:").is_some_and(|v| v != "0")
            || field("Seccomp:").is_some_and(|v| v != "0")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn stat_lines_give_their_parent() {
        assert_eq!(parent_of("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("42 (a) b (c)) R 9 1 1"), Some(9));
        assert_eq!(parent_of("garbage"), None);
    }

    #[test]
    fn status_says_confined() {
        assert!(confined("Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\n"));
        assert!(confined("NoNewPrivs:\t0\nSeccomp:\t2\n"));
        assert!(!confined("NoNewPrivs:\t0\nSeccomp:\t0\n"));
    }

    /// Forks `sh -c 'sleep 5; true'` (the `; true` keeps sh from exec'ing sleep) and
    /// waits for sleep; returns the child and sleep's pid.
    // Its callers kill and wait for the child it hands back.
    #[allow(clippy::zombie_processes)]
    fn fork_tree(program: &str, args: &[&str]) -> (std::process::Child, u32) {
        let child = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let sh = child.id();
        loop {
            // setpriv execs sh in place, so the child's pid is sh's.
            let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children"))
                .unwrap_or_default();
            if let Some(pid) = children
                .split_whitespace()
                .next()
                .and_then(|p| p.parse().ok())
            {
                // Until it execs, the forked child still reads as sh.
                let entry = read_entry(Path::new("/proc"), pid).ok();
                if entry.is_some_and(|e| e.argv.first().map(String::as_str) == Some("sleep")) {
                    return (child, pid);
                }
            }
            if std::time::Instant::now() >= deadline {
                let mut child = child;
                let _ = child.kill();
                let _ = child.wait();
                panic!("sh never forked sleep");
            }
            std::thread::yield_now();
        }
    }

    /// A real process tree read from the real /proc. Under `setpriv --no-new-privs` (as
    /// landstrip confines what it starts) the walk goes from sleep up through sh and
    /// stops below this test's own, unconfined, process.
    #[test]
    fn a_confined_forked_tree_is_walked_up_to_its_unconfined_parent() {
        let (mut child, sleep) =
            fork_tree("setpriv", &["--no-new-privs", "sh", "-c", "sleep 5; true"]);
        let walk = walk(Path::new("/proc"), sleep, None).expect("sleep is readable");
        let _ = child.kill();
        let _ = child.wait();
        let argv: Vec<&[String]> = walk.chain.iter().map(|e| e.argv.as_slice()).collect();
        assert_eq!(
            argv,
            [&["sleep", "5"][..], &["sh", "-c", "sleep 5; true"][..]]
        );
        assert_eq!(walk.chain[0].ppid, walk.chain[1].pid);
        assert_eq!(walk.chain[1].ppid, std::process::id());
        assert!(walk.chain.iter().all(|e| e.confined));
        assert!(walk.chain[0]
            .exe
            .as_deref()
            .is_some_and(|e| e.ends_with("sleep")));
        assert!(!walk.cut);
    }

    /// Unconfined, the same tree is not landstrip's: the walk keeps the asking process only.
    #[test]
    fn an_unconfined_asking_process_is_not_read() {
        let (mut child, sleep) = fork_tree("sh", &["-c", "sleep 5; true"]);
        let read = walk(Path::new("/proc"), sleep, None);
        let entry = read_entry(Path::new("/proc"), sleep);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(read, None);
        assert!(
            entry.is_ok_and(|e| !e.confined),
            "readable, but not confined"
        );
    }

    /// landstrip's process is the parent named landstrip that runs unconfined (here a
    /// copy of sh named landstrip), and its environment is what is read; a "landstrip"
    /// that runs confined, as a sandboxed program's own would, is not it.
    #[test]
    fn landstrip_is_the_unconfined_parent_named_landstrip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("landstrip");
        // Copied by a child (`cp`), not this process: a file this process wrote could be
        // held open by another test thread's fork and fail to run ("Text file busy").
        let copied = std::process::Command::new("cp")
            .arg("/bin/sh")
            .arg(&fake)
            .status()
            .expect("cp");
        assert!(copied.success(), "cp /bin/sh: {copied}");
        let fake = fake.to_str().expect("a UTF-8 path");
        let (mut child, sleep) = fork_tree(
            "env",
            &[
                "OPENCODE_DB=/real.db",
                "OPENCODE_DISABLE_CHANNEL_DB=1",
                fake,
                "-c",
                "OPENCODE_DB=/forged.db setpriv --no-new-privs sleep 5; true",
            ],
        );
        let read = walk(Path::new("/proc"), sleep, None);
        let env = read
            .as_ref()
            .and_then(|w| w.landstrip)
            .map(|pid| read_environ(Path::new("/proc"), pid, &["OPENCODE_DB"]));
        let own = read_environ(Path::new("/proc"), sleep, &["OPENCODE_DB"]);
        let landstrip = child.id();
        let _ = child.kill();
        let _ = child.wait();
        let read = read.expect("sleep is readable");
        assert_eq!(read.chain.len(), 1, "{read:?}");
        assert_eq!(read.landstrip, Some(landstrip));
        let env = env.expect("landstrip's process").expect("its environment");
        assert_eq!(env, [("OPENCODE_DB".to_owned(), "/real.db".to_owned())]);
        assert_eq!(
            own.expect("sleep's environment"),
            [("OPENCODE_DB".to_owned(), "/forged.db".to_owned())]
        );

        let (mut child, sleep) =
            fork_tree("setpriv", &["--no-new-privs", fake, "-c", "sleep 5; true"]);
        let read = walk(Path::new("/proc"), sleep, None);
        let _ = child.kill();
        let _ = child.wait();
        let read = read.expect("sleep is readable");
        assert_eq!(read.chain.len(), 1, "the walk stops below it: {read:?}");
        assert_eq!(
            read.landstrip, None,
            "a confined landstrip is not landstrip"
        );
    }

    #[test]
    fn a_gone_or_reused_pid_gives_nothing() {
        assert_eq!(walk(Path::new("/proc"), u32::MAX - 1, None), None);
        let (mut child, sleep) =
            fork_tree("setpriv", &["--no-new-privs", "sh", "-c", "sleep 5; true"]);
        let exe = read_entry(Path::new("/proc"), sleep)
            .ok()
            .and_then(|e| e.exe);
        let reused = walk(Path::new("/proc"), sleep, Some("/not/this/program"));
        let same = walk(Path::new("/proc"), sleep, exe.as_deref());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(reused, None, "the pid names another program now");
        assert!(same.is_some(), "the program the query names");
    }
}
