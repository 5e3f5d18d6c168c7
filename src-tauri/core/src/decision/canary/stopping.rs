//! Stopping a run that read a canary: the confined processes under that run's landstrip
//! process, found in `/proc` and signalled through pidfds (docs/ARCHITECTURE.md,
//! "Canaries"). Never a process group, never a pid that may name another process by the
//! time the signal goes: each process is checked after its pidfd is opened, and every
//! later signal (resume, kill) goes to the same pidfds.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use crate::origin::procfs;
use crate::sys;

/// At most this many passes look for processes forked while the run was being stopped.
const PASSES: usize = 8;

/// At most this many processes of one run are stopped (a fork bomb is not followed
/// further; they stay confined).
pub const MAX_PROCESSES: usize = 4096;

/// A signal this module sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGSTOP.
    Stop,
    /// SIGCONT.
    Cont,
    /// SIGKILL.
    Kill,
}

impl Signal {
    fn number(self) -> i32 {
        match self {
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// The processes of one run that were stopped, each held by its pidfd.
#[derive(Debug, Default)]
pub struct RunProcesses {
    /// The run's landstrip process.
    pub landstrip: u32,
    members: BTreeMap<u32, OwnedFd>,
}

impl RunProcesses {
    /// Finds the run behind a canary read by `reader` (the query's pid) and stops its
    /// confined processes. None when the reader is not a confined process under an
    /// unconfined landstrip running `exe` (the query's executable): anything may connect
    /// to the query port and name a pid, and nothing outside a sandbox is ever stopped.
    pub fn stop(proc: &Path, reader: u32, exe: Option<&str>) -> Option<Self> {
        let landstrip = run_root(proc, reader, exe)?;
        // Held from here: a landstrip that exits and whose pid is reused cannot hand its
        // number to another process's tree without this pidfd seeing the exit.
        let landstrip_fd = sys::pidfd_open(landstrip).ok()?;
        let mut run = Self {
            landstrip,
            members: BTreeMap::new(),
        };
        for _ in 0..PASSES {
            if sys::pidfd_exited(landstrip_fd.as_fd()) {
                break;
            }
            let found = descendants(proc, landstrip);
            let mut added = false;
            for pid in found {
                if run.members.contains_key(&pid) || run.members.len() >= MAX_PROCESSES {
                    continue;
                }
                if let Some(fd) = run.checked(proc, pid) {
                    if sys::pidfd_send_signal(fd.as_fd(), Signal::Stop.number()).is_ok() {
                        run.members.insert(pid, fd);
                        added = true;
                    }
                }
            }
            // A pass that stopped nothing new found every process (those stopped cannot
            // fork any more).
            if !added {
                break;
            }
        }
        Some(run)
    }

    /// A pidfd for `pid` once it is checked to be one of this run's: confined, its parent
    /// landstrip or a process already held. The check reads `/proc` after the pidfd is
    /// open and the pidfd is seen alive after it, so what was checked is what the pidfd
    /// holds (a pid is not reused while its process lives).
    fn checked(&self, proc: &Path, pid: u32) -> Option<OwnedFd> {
        let fd = sys::pidfd_open(pid).ok()?;
        let entry = procfs::read_entry(proc, pid).ok()?;
        let under = entry.ppid == self.landstrip || self.members.contains_key(&entry.ppid);
        (entry.confined && under && !sys::pidfd_exited(fd.as_fd())).then_some(fd)
    }

    /// The pids held, in order.
    pub fn pids(&self) -> Vec<u32> {
        self.members.keys().copied().collect()
    }

    /// Sends `signal` to every process held that still lives; how many it reached.
    pub fn signal(&self, signal: Signal) -> usize {
        self.members
            .values()
            .filter(|fd| sys::pidfd_send_signal(fd.as_fd(), signal.number()).is_ok())
            .count()
    }

    /// Copies of the pidfds held, for a thread that waits for the run's end.
    pub fn watch(&self) -> Vec<OwnedFd> {
        self.members
            .values()
            .filter_map(|fd| fd.try_clone().ok())
            .collect()
    }

    /// Whether every process held has exited (true when none was held).
    pub fn all_gone(&self) -> bool {
        self.members
            .values()
            .all(|fd| sys::pidfd_exited(fd.as_fd()))
    }
}

/// The landstrip process whose run `reader` belongs to: the first unconfined ancestor of
/// a confined reader running `exe`, if that is named landstrip. Unlike the origin's walk
/// (which stops at the first process named landstrip, confined or not, and after
/// [`procfs::MAX_DEPTH`] links), this one goes past confined processes of any name: a
/// confined process cannot make an unconfined one, so a program that renames a copy of
/// itself `landstrip-x` or forks a long chain still leads here to its run's landstrip.
fn run_root(proc: &Path, reader: u32, exe: Option<&str>) -> Option<u32> {
    let first = procfs::read_entry(proc, reader).ok()?;
    if !first.confined || (exe.is_some() && first.exe.as_deref() != exe) {
        return None;
    }
    let mut ppid = first.ppid;
    for _ in 0..MAX_PROCESSES {
        if ppid <= 1 {
            return None;
        }
        let parent = procfs::read_entry(proc, ppid).ok()?;
        if !parent.confined {
            return procfs::is_landstrip(&parent).then_some(parent.pid);
        }
        ppid = parent.ppid;
    }
    None
}

/// The descendants of `root` as `/proc` shows them now, parents before their children.
fn descendants(proc: &Path, root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir(proc) {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = procfs::parent_pid(proc, pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut order = Vec::new();
    let mut queue = VecDeque::from([root]);
    while let Some(pid) = queue.pop_front() {
        if order.len() > MAX_PROCESSES {
            break;
        }
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            order.push(child);
            queue.push_back(child);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// The state letter of `/proc/PID/stat`.
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        let after = &stat[stat.rfind(')').expect(")") + 2..];
        after.chars().next().expect("state")
    }

    #[test]
    fn an_unconfined_reader_stops_nothing() {
        // This test's own process: not confined, so it is never stopped, nor its group.
        let me = std::process::id();
        assert!(RunProcesses::stop(Path::new("/proc"), me, None).is_none());
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep");
        assert!(RunProcesses::stop(Path::new("/proc"), child.id(), None).is_none());
        assert_ne!(state(child.id()), 'T');
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn descendants_lists_a_tree_parents_first() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .stdin(Stdio::null())
            .spawn()
            .expect("sh");
        let sh = child.id();
        // Bounded: the shell forks its two sleeps at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut found = descendants(Path::new("/proc"), sh);
        while found.len() < 2 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
            found = descendants(Path::new("/proc"), sh);
        }
        assert_eq!(found.len(), 2, "{found:?}");
        // Other tests' children may be there too; the shell comes before its own.
        let mine = descendants(Path::new("/proc"), std::process::id());
        let at = |pid: u32| mine.iter().position(|p| *p == pid).expect("listed");
        assert!(found.iter().all(|c| at(sh) < at(*c)), "{mine:?}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
