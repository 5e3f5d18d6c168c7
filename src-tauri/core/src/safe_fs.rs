//! Directories and files the app can trust: private directories checked without
//! following a symlink, atomic writes whose temp file has its final mode before it holds a
//! byte, and an advisory lock file for read-modify-write updates shared with other
//! processes.

use std::ffi::OsStr;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The mode of a private directory: ours alone.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Why a directory is not trusted to hold our sockets or files.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// The directory could not be created or inspected.
    #[error("cannot use {}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A symbolic link sits where the directory goes: whoever made it chooses where our
    /// files land.
    #[error(
        "refusing to use {}: it is a symbolic link (to {}), and a link there lets whoever made it \
         choose where our files go; remove it",
        dir.display(),
        target.display()
    )]
    Symlink {
        /// The directory's path.
        dir: PathBuf,
        /// What the link points to (as written in the link).
        target: PathBuf,
    },
    /// Something other than a directory sits there.
    #[error("refusing to use {}: it exists and is not a directory", dir.display())]
    NotADirectory {
        /// The path.
        dir: PathBuf,
    },
    /// Someone else owns the directory: they could swap what we put there.
    #[error(
        "refusing to use {}: it belongs to uid {owner}, not to us (uid {ours}), so its owner \
         could replace what we put there",
        dir.display()
    )]
    NotOwned {
        /// The directory.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our uid.
        ours: u32,
    },
    /// Group or others may enter or write the directory.
    #[error(
        "refusing to use {}: its mode {mode:04o} lets other users in (it must be 0700: chmod 700 {})",
        dir.display(),
        dir.display()
    )]
    TooOpen {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

impl PrivateDirError {
    /// The directory this is about.
    pub fn dir(&self) -> &Path {
        match self {
            Self::Io { dir, .. }
            | Self::Symlink { dir, .. }
            | Self::NotADirectory { dir }
            | Self::NotOwned { dir, .. }
            | Self::TooOpen { dir, .. } => dir,
        }
    }
}

/// Creates `dir` (and missing parents) with mode 0700 if missing, then checks it with
/// [`check_private_dir`]. An existing directory is never loosened or tightened: a wrong
/// one is refused, so nothing placed in it while it was open is trusted.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    match DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
    {
        Ok(()) => {}
        // Something else is there; the check below says what.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(PrivateDirError::Io {
                dir: dir.to_path_buf(),
                source,
            })
        }
    }
    check_private_dir(dir)
}

/// Checks, without following a symlink at `dir` itself (lstat), that `dir` is a real
/// directory, owned by our uid, with no permission bits for group or others.
pub fn check_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    let meta = fs::symlink_metadata(dir).map_err(|source| PrivateDirError::Io {
        dir: dir.to_path_buf(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(PrivateDirError::Symlink {
            dir: dir.to_path_buf(),
            target: fs::read_link(dir).unwrap_or_default(),
        });
    }
    if !meta.is_dir() {
        return Err(PrivateDirError::NotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    let ours = crate::uid();
    if meta.uid() != ours {
        return Err(PrivateDirError::NotOwned {
            dir: dir.to_path_buf(),
            owner: meta.uid(),
            ours,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(PrivateDirError::TooOpen {
            dir: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Where a symlink at `path` points, when `path` is one (lstat; never follows). A relative
/// link is resolved against `path`'s directory, lexically.
pub fn symlink_target(path: &Path) -> io::Result<Option<PathBuf>> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let link = fs::read_link(path)?;
            let target = if link.is_relative() {
                crate::lexical::normalize_lexically(&parent_dir(path).join(link))
            } else {
                link
            };
            Ok(Some(target))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The permission bits a file written by [`write_atomic`] gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// Exactly these bits, whatever the umask.
    Exact(u32),
    /// The bits of the regular file being replaced; for a new file, these bits less the
    /// umask (as `open(2)` gives them).
    KeepOr(u32),
}

/// Distinguishes temp files of concurrent writers within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes the temp file on drop unless disarmed.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Replaces `path` with `contents` atomically: a temp file is created in the same
/// directory (which must exist) already carrying its final mode, written, fsynced and
/// renamed over `path`; then the directory is fsynced. The temp file is removed on any
/// failure before the rename. Once the rename is done the file is written: a failing
/// directory fsync is logged, not returned. A symlink at `path` is replaced, never
/// followed; callers that must not replace one check first ([`symlink_target`]).
pub fn write_atomic(path: &Path, contents: &[u8], mode: FileMode) -> io::Result<()> {
    write_atomic_observed(path, contents, mode, |_| {})
}

/// [`write_atomic`], calling `created` with the temp file's path right after it is
/// created and before any content is written (tests look at its mode there).
fn write_atomic_observed(
    path: &Path,
    contents: &[u8],
    mode: FileMode,
    created: impl FnOnce(&Path),
) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a file path: {}", path.display()),
        )
    })?;
    let dir = parent_dir(path);
    // `Some`: set exactly, past the umask; `None`: what open(2) gives.
    let (create_mode, exact) = match mode {
        FileMode::Exact(bits) => (bits, Some(bits)),
        FileMode::KeepOr(default) => match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() => {
                let bits = meta.mode() & 0o7777;
                (bits, Some(bits))
            }
            Ok(_) => (default, None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (default, None),
            Err(e) => return Err(e),
        },
    };
    let (temp, mut file) = create_temp(dir, name, create_mode & 0o777)?;
    let mut guard = TempGuard(Some(temp.clone()));
    if let Some(bits) = exact {
        // The umask may have removed bits at creation; the file is still empty here.
        file.set_permissions(fs::Permissions::from_mode(bits))?;
    }
    created(&temp);
    file.write_all(contents)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, path)?;
    guard.0 = None;
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::warn!(
            file = %path.display(),
            "written, but syncing its directory failed (a crash now could lose the change): {e}"
        );
    }
    Ok(())
}

fn create_temp(dir: &Path, name: &OsStr, mode: u32) -> io::Result<(PathBuf, File)> {
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(
            ".{}.{}.{n}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        // create_new is O_EXCL: it never follows or reuses anything already at `temp`.
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// An exclusive advisory lock (flock) on a lock file, released on drop. It serialises a
/// read-modify-write of a file with other processes doing the same; the lock file is
/// never replaced, unlike the file it guards (whose inode each atomic write changes).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Opens (creating, 0600) `path` and waits for its exclusive lock.
    pub fn exclusive(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        loop {
            match flock(&file, libc::LOCK_EX) {
                Ok(()) => return Ok(Self { _file: file }),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
    /// Waits, at most `wait`, for the exclusive lock of the directory `dir` itself (no
    /// lock file: nothing is added to a user's directory). Every file in it that is
    /// replaced by rename gets a new inode, but the directory keeps its own, so processes
    /// editing a file there meet on the same lock. A linked directory (dotfiles) is locked
    /// where the link points, as every writer going through the link writes there. Bounded
    /// because any process that can open the directory can hold its lock, a sandboxed one
    /// included: past `wait` the error says so (`WouldBlock`) and nothing is written.
    pub fn directory(dir: &Path, wait: std::time::Duration) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(dir)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
                Ok(()) => return Ok(Self { _file: file }),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if std::time::Instant::now() >= deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            format!(
                                "another process has held the lock of {} for over {wait:?}",
                                dir.display()
                            ),
                        ));
                    }
                    // flock has no timed wait; the lock is held only for an edit.
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// `flock(fd, op)`; the lock goes with the open file and is released when it closes.
#[allow(unsafe_code)]
fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    // SAFETY: flock takes an fd that `file` keeps open for the call, and an integer.
    if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The in-process lock of one file path (the same lock for every spelling of the path),
/// so read-modify-write updates of a file by different threads never interleave.
pub fn path_lock(path: &Path) -> std::sync::Arc<std::sync::Mutex<()>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let key = crate::lexical::normalize_lexically(&absolute);
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    Arc::clone(locks.entry(key).or_default())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).expect("lstat").mode() & 0o7777
    }

    /// The names in `dir`, sorted (to see that no temporary file is left behind).
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_missing_directory_is_created_private() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("a/b");
        ensure_private_dir(&dir).expect("created");
        assert_eq!(mode(&dir), 0o700);
        ensure_private_dir(&dir).expect("and accepted again");
    }

    #[test]
    fn a_symlink_is_refused_even_to_a_private_directory_of_ours() {
        let root = tempfile::tempdir().expect("tempdir");
        let real = root.path().join("real");
        ensure_private_dir(&real).expect("real");
        let link = root.path().join("link");
        symlink(&real, &link).expect("symlink");
        let err = ensure_private_dir(&link).expect_err("refused");
        assert!(matches!(err, PrivateDirError::Symlink { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&link.display().to_string())
                && text.contains(&real.display().to_string())
                && text.contains("symbolic link"),
            "{text}"
        );
        // A dangling link is refused too, and nothing is created behind it.
        let dangling = root.path().join("dangling");
        symlink(root.path().join("nowhere"), &dangling).expect("symlink");
        assert!(matches!(
            ensure_private_dir(&dangling),
            Err(PrivateDirError::Symlink { .. })
        ));
        assert!(!root.path().join("nowhere").exists());
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let root = tempfile::tempdir().expect("tempdir");
        let file = root.path().join("file");
        fs::write(&file, "x").expect("write");
        assert!(matches!(
            ensure_private_dir(&file),
            Err(PrivateDirError::NotADirectory { .. })
        ));
    }

    #[test]
    fn open_modes_are_refused_and_left_as_they_are() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("d");
        fs::create_dir(&dir).expect("mkdir");
        for bits in [0o755, 0o750, 0o701, 0o710, 0o1777] {
            fs::set_permissions(&dir, fs::Permissions::from_mode(bits)).expect("chmod");
            let err = ensure_private_dir(&dir).expect_err("refused");
            assert!(
                matches!(err, PrivateDirError::TooOpen { mode, .. } if mode == bits),
                "{bits:o}: {err}"
            );
            assert!(
                err.to_string().contains(&format!("{bits:04o}"))
                    && err.to_string().contains("other users"),
                "{err}"
            );
            assert_eq!(mode(&dir), bits, "not changed");
        }
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
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("theirs");
        ensure_private_dir(&dir).expect("mkdir");
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
        let err = ensure_private_dir(&dir).expect_err("refused");
        assert!(
            matches!(err, PrivateDirError::NotOwned { owner: 65534, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("uid 65534"), "{err}");
    }

    #[test]
    fn the_temp_file_has_the_final_mode_before_any_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.json");
        fs::write(&path, "{}").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        let mut seen = None;
        write_atomic_observed(&path, b"{ }\n", FileMode::KeepOr(0o666), |temp| {
            let meta = fs::metadata(temp).expect("temp");
            seen = Some((meta.mode() & 0o7777, meta.len()));
        })
        .expect("written");
        assert_eq!(
            seen,
            Some((0o640, 0)),
            "(mode, length) of the fresh temp file"
        );
        assert_eq!(mode(&path), 0o640);
        assert_eq!(fs::read(&path).expect("read"), b"{ }\n");
        assert_eq!(names(dir.path()), ["sandbox.json"]);

        let exact = dir.path().join("port.json");
        let mut seen = None;
        write_atomic_observed(&exact, b"x", FileMode::Exact(0o600), |temp| {
            seen = Some(mode(temp));
        })
        .expect("written");
        assert_eq!(seen, Some(0o600));
        assert_eq!(mode(&exact), 0o600);
    }

    #[test]
    fn a_symlink_is_replaced_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        fs::write(&target, "theirs").expect("write");
        let link = dir.path().join("file");
        symlink(&target, &link).expect("symlink");
        assert_eq!(
            symlink_target(&link).expect("lstat"),
            Some(target.clone()),
            "absolute"
        );
        write_atomic(&link, b"ours", FileMode::Exact(0o600)).expect("written");
        assert_eq!(fs::read(&target).expect("read"), b"theirs");
        assert_eq!(fs::read(&link).expect("read"), b"ours");
        assert!(fs::symlink_metadata(&link).expect("lstat").is_file());
        assert_eq!(symlink_target(&link).expect("lstat"), None);
    }

    #[test]
    fn a_failed_rename_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("busy");
        fs::create_dir(&path).expect("mkdir");
        fs::write(path.join("inside"), "x").expect("write");
        assert!(write_atomic(&path, b"x", FileMode::KeepOr(0o666)).is_err());
        assert_eq!(names(dir.path()), ["busy"]);
    }

    #[test]
    fn the_file_lock_excludes_other_holders() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(".lock");
        let held = FileLock::exclusive(&path).expect("lock");
        // A second open file (as another process would have) cannot take it meanwhile.
        let other = OpenOptions::new().write(true).open(&path).expect("open");
        let busy = flock(&other, libc::LOCK_EX | libc::LOCK_NB).expect_err("held");
        assert_eq!(busy.kind(), io::ErrorKind::WouldBlock);
        drop(held);
        flock(&other, libc::LOCK_EX | libc::LOCK_NB).expect("free after drop");
    }

    #[test]
    fn the_directory_lock_is_waited_for_within_its_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wait = std::time::Duration::from_millis(100);
        // Held through another open file description, as another process would hold it.
        let held = FileLock::directory(dir.path(), wait).expect("lock");
        let Err(busy) = FileLock::directory(dir.path(), wait) else {
            panic!("taken while held")
        };
        assert_eq!(busy.kind(), io::ErrorKind::WouldBlock);
        assert!(busy.to_string().contains("another process"), "{busy}");
        // Given back within the wait: taken then.
        let giver = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(held);
        });
        FileLock::directory(dir.path(), std::time::Duration::from_secs(20)).expect("free");
        giver.join().expect("join");
    }
}
