//! The kernel's notice that a policy file may have changed, for the query path.
//!
//! An inotify instance watches each file (through symlinks), the directory holding it and
//! the one above (or, where those are missing, the nearest directory that exists, for the
//! name that would create them), and is looked at through an epoll set of its own. "Has
//! anything changed since the files were read?" is then one `epoll_wait` with no timeout
//! (0.2 µs under gVisor) instead of a `stat` of each file (1–1.7 µs each), and it is as
//! current: the kernel queues an event before the writer's own call returns, so a change
//! made before a query was sent is seen when that query is decided. Events in a watched
//! directory about other names (an agent writing in the project root) are read and
//! dropped, and do not count.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::{Mutex, PoisonError};

/// What a file's own watch reports: its content, its inode's metadata, and its going.
const FILE_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF;
/// What a directory's watch reports about the names in it, and its own going.
const DIR_EVENTS: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF;
/// Events about the watch itself rather than a name in it.
const SELF_EVENTS: u32 =
    libc::IN_MOVE_SELF | libc::IN_DELETE_SELF | libc::IN_IGNORED | libc::IN_UNMOUNT;

/// One watch: its descriptor and, for a directory, the one name in it that matters.
#[derive(Debug)]
struct Watch {
    wd: i32,
    name: Option<Vec<u8>>,
}

/// Watches for a set of files, made before they are read; spent by the first change.
#[derive(Debug)]
pub struct ChangeNotice {
    inotify: OwnedFd,
    epoll: OwnedFd,
    watches: Vec<Watch>,
    /// Whether a change was seen; behind a lock so that two callers cannot both find the
    /// queue empty while a third is still reading a change out of it.
    spent: Mutex<bool>,
}

impl ChangeNotice {
    /// Watches `files` and the directories that lead to them. Fails when inotify is out
    /// of instances or watches (the caller then checks the files itself).
    pub fn watch(files: &[&Path]) -> io::Result<Self> {
        let inotify = cvt(
            // SAFETY: inotify_init1 takes flags and returns a new fd or -1.
            #[allow(unsafe_code)]
            unsafe {
                libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC)
            },
        )?;
        // SAFETY: the kernel just returned this fd and nothing else owns it.
        #[allow(unsafe_code)]
        let inotify = unsafe { OwnedFd::from_raw_fd(inotify) };
        // SAFETY: as above, epoll_create1 takes flags.
        #[allow(unsafe_code)]
        let epoll = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: the kernel just returned this fd and nothing else owns it.
        #[allow(unsafe_code)]
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: 0,
        };
        // SAFETY: both fds are open and owned here; `event` outlives the call.
        #[allow(unsafe_code)]
        cvt(unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                inotify.as_raw_fd(),
                &mut event,
            )
        })?;
        let mut notice = Self {
            inotify,
            epoll,
            watches: Vec::new(),
            spent: Mutex::new(false),
        };
        for file in files {
            notice.watch_path(file)?;
        }
        Ok(notice)
    }

    /// The file itself if it exists, its directory for its name, and the directory above
    /// for the directory's name; where the chain is broken, the nearest existing ancestor
    /// for the missing name below it.
    fn watch_path(&mut self, file: &Path) -> io::Result<()> {
        self.add(file, FILE_EVENTS, None)?;
        // Then its directory (the file made, replaced by a rename, deleted) and the one
        // above (the directory itself replaced), skipping those that do not exist.
        let mut child = file;
        let mut watched_dirs = 0;
        while let Some(dir) = child.parent() {
            let Some(Component::Normal(name)) = child.components().next_back() else {
                break;
            };
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if self.add(dir, DIR_EVENTS, Some(name))? {
                watched_dirs += 1;
                if watched_dirs == 2 {
                    break;
                }
            }
            child = dir;
        }
        Ok(())
    }

    /// Adds one watch; false when `path` does not exist (or is not reachable).
    fn add(&mut self, path: &Path, mask: u32, name: Option<&OsStr>) -> io::Result<bool> {
        let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
            return Ok(false);
        };
        let mask = if name.is_some() {
            mask | libc::IN_ONLYDIR
        } else {
            mask
        };
        // SAFETY: the fd is open; `c_path` is a NUL-terminated string that outlives the call.
        #[allow(unsafe_code)]
        let wd =
            unsafe { libc::inotify_add_watch(self.inotify.as_raw_fd(), c_path.as_ptr(), mask) };
        if wd < 0 {
            let error = io::Error::last_os_error();
            return match error.raw_os_error() {
                Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP) => Ok(false),
                _ => Err(error),
            };
        }
        self.watches.push(Watch {
            wd,
            name: name.map(|n| n.as_bytes().to_vec()),
        });
        Ok(true)
    }

    /// Whether a watched file may have changed since the notice was made. Once true,
    /// always true (the caller reads the files again and makes a new notice). An error
    /// reading the events counts as a change.
    pub fn changed(&self) -> bool {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if !*spent && self.pending() {
            *spent = self.drain_relevant();
        }
        *spent
    }

    /// Whether the inotify queue holds anything: `epoll_wait` with no timeout.
    fn pending(&self) -> bool {
        let mut ready = [libc::epoll_event { events: 0, u64: 0 }];
        // SAFETY: the fd is open; `ready` has room for the one event asked for.
        #[allow(unsafe_code)]
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), ready.as_mut_ptr(), 1, 0) };
        // An error (EINTR) proves nothing: look at the queue.
        n != 0
    }

    /// Reads every queued event; whether one of them is about a watched name, a watched
    /// file, a watch's own end, or a lost event.
    fn drain_relevant(&self) -> bool {
        let mut relevant = false;
        // Aligned for the kernel's struct inotify_event records.
        let mut buf = [0u64; 512];
        loop {
            // SAFETY: the fd is open; the kernel writes at most `size_of_val(&buf)` bytes
            // into `buf`, which outlives the call.
            #[allow(unsafe_code)]
            let n = unsafe {
                libc::read(
                    self.inotify.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    std::mem::size_of_val(&buf),
                )
            };
            if n < 0 {
                let error = io::Error::last_os_error();
                return match error.kind() {
                    io::ErrorKind::WouldBlock => relevant,
                    io::ErrorKind::Interrupted => continue,
                    _ => true,
                };
            }
            if n == 0 {
                return true;
            }
            let Ok(len) = usize::try_from(n) else {
                return true;
            };
            // SAFETY: the kernel wrote `len` bytes; they are read back as bytes.
            #[allow(unsafe_code)]
            let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
            relevant |= self.any_relevant(bytes);
        }
    }

    fn any_relevant(&self, mut bytes: &[u8]) -> bool {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut relevant = false;
        while bytes.len() >= HEADER {
            let field = |at: usize| {
                let mut word = [0u8; 4];
                word.copy_from_slice(&bytes[at..at + 4]);
                u32::from_ne_bytes(word)
            };
            let wd = field(0) as i32;
            let mask = field(4);
            let name_len = field(12) as usize;
            let Some(name) = bytes.get(HEADER..HEADER + name_len) else {
                return true;
            };
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            relevant |= mask & libc::IN_Q_OVERFLOW != 0
                || self.watches.iter().any(|w| {
                    w.wd == wd
                        && (mask & SELF_EVENTS != 0
                            || w.name.as_deref().is_none_or(|wanted| wanted == name))
                });
            bytes = &bytes[HEADER + name_len..];
        }
        relevant
    }
}

/// A libc return value as a result.
fn cvt(ret: i32) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Files {
        _dir: tempfile::TempDir,
        root: std::path::PathBuf,
    }

    fn files() -> Files {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        Files { _dir: dir, root }
    }

    #[test]
    fn nothing_done_is_no_change_and_a_write_in_place_is_one() {
        let f = files();
        let file = f.root.join("p/.opencode/sandbox.json");
        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs::write(&file, "{}").expect("write");
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        assert!(!notice.changed());
        fs::write(&file, "{ }").expect("write");
        assert!(notice.changed(), "seen as soon as the write returned");
        assert!(notice.changed(), "and it stays spent");
    }

    #[test]
    fn other_names_in_the_watched_directories_are_not_a_change() {
        let f = files();
        let project = f.root.join("p");
        let file = project.join(".opencode/sandbox.json");
        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs::write(&file, "{}").expect("write");
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::write(project.join("main.rs"), "fn main() {}").expect("write");
        fs::write(project.join(".opencode/notes.md"), "x").expect("write");
        fs::create_dir(project.join("src")).expect("mkdir");
        assert!(!notice.changed(), "an agent's own files are not the policy");
        fs::rename(project.join("main.rs"), project.join("lib.rs")).expect("rename");
        assert!(!notice.changed());
        fs::write(&file, "{\"enabled\": true}").expect("write");
        assert!(notice.changed());
    }

    #[test]
    fn a_rename_over_the_file_a_delete_and_a_replaced_directory_are_each_a_change() {
        let f = files();
        let dir = f.root.join("p/.opencode");
        let file = dir.join("sandbox.json");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(&file, "{}").expect("write");

        // An editor's save: a new file renamed over the old one.
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::write(dir.join(".sandbox.json.swp"), "{ }").expect("write");
        assert!(!notice.changed());
        fs::rename(dir.join(".sandbox.json.swp"), &file).expect("rename");
        assert!(notice.changed());

        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::remove_file(&file).expect("rm");
        assert!(notice.changed());

        // The whole directory moved away and another put in its place.
        fs::write(&file, "{}").expect("write");
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        let other = f.root.join("p/.opencode-new");
        fs::create_dir(&other).expect("mkdir");
        fs::write(other.join("sandbox.json"), "{}").expect("write");
        assert!(!notice.changed());
        fs::rename(&dir, f.root.join("p/.opencode-old")).expect("rename");
        fs::rename(&other, &dir).expect("rename");
        assert!(notice.changed());
    }

    #[test]
    fn a_missing_file_and_missing_directories_are_watched_for_their_creation() {
        let f = files();
        let home = f.root.join("home");
        fs::create_dir(&home).expect("mkdir");
        let file = home.join(".config/opencode/sandbox.json");
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::create_dir(home.join(".cache")).expect("mkdir");
        assert!(!notice.changed(), "another directory in home");
        fs::create_dir(home.join(".config")).expect("mkdir");
        assert!(notice.changed(), "the first missing directory made");

        fs::create_dir(home.join(".config/opencode")).expect("mkdir");
        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::write(home.join(".config/opencode/opencode.json"), "{}").expect("write");
        assert!(!notice.changed());
        fs::write(&file, "{}").expect("write");
        assert!(notice.changed(), "the file made");
    }

    #[test]
    fn a_file_behind_a_symlink_is_followed_and_so_is_the_link_itself() {
        let f = files();
        let real = f.root.join("shared/sandbox.json");
        fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
        fs::write(&real, "{}").expect("write");
        let dir = f.root.join("p/.opencode");
        fs::create_dir_all(&dir).expect("mkdir");
        let file = dir.join("sandbox.json");
        std::os::unix::fs::symlink(&real, &file).expect("symlink");

        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        fs::write(&real, "{ }").expect("write");
        assert!(notice.changed(), "the target written in place");

        let notice = ChangeNotice::watch(&[&file]).expect("watch");
        let other = f.root.join("shared/other.json");
        fs::write(&other, "{}").expect("write");
        fs::remove_file(&file).expect("rm link");
        std::os::unix::fs::symlink(&other, &file).expect("symlink");
        assert!(notice.changed(), "the link pointed elsewhere");
    }

    #[test]
    fn two_files_are_watched_by_one_notice() {
        let f = files();
        let global = f.root.join("home/.config/opencode/sandbox.json");
        let project = f.root.join("p/.opencode/sandbox.json");
        for file in [&global, &project] {
            fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            fs::write(file, "{}").expect("write");
        }
        let notice = ChangeNotice::watch(&[&global, &project]).expect("watch");
        assert!(!notice.changed());
        fs::write(&global, "{ }").expect("write");
        assert!(notice.changed());
    }
}
