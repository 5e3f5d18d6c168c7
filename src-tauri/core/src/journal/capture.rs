//! Which path a held write's trap lets the journal restore, and its prior state kept.
//!
//! Each trap names one path. Restorable exactly: a write-open (`openat`, `creat`, …), an
//! `unlinkat`/`rmdir` of a file or folder, a `mkdir`, a `fchmodat` (the named path's state
//! before: bytes and mode, absent, a folder's mode, a link's target). Not: a rename
//! (`renameat`, `renameat2`) names only its source, never the destination it may
//! replace; a `linkat` names the existing file, not the new name; a `symlinkat`'s trap
//! may name the target rather than the new link; `utimensat` changes times, which are
//! not kept. landstrip 0.18.27 names a symlink's *target* for an `unlinkat` of the link
//! (`requested_path` is the link), and allowed, the target is what goes (the link stays:
//! seen with the real 0.18.27 in tests/tests/journal.rs), so the named path is journaled
//! there too: its bytes are what an undo must bring back.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use super::nofollow::{self, Kind, WalkError};
use super::{Before, Held, Journal};

/// What was found and kept.
pub(super) struct Captured {
    pub path: String,
    pub before: Before,
    pub mode: Option<u32>,
    pub size: Option<u64>,
    pub target: Option<String>,
    pub why: Option<String>,
}

impl Captured {
    fn not_undoable(path: &str, why: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            before: Before::NotUndoable,
            mode: None,
            size: None,
            target: None,
            why: Some(why.into()),
        }
    }
}

/// Why a syscall's writes cannot be restored from the one path its trap names; None
/// when they can.
pub fn unrestorable(syscall: Option<&str>) -> Option<&'static str> {
    match syscall? {
        "rename" | "renameat" | "renameat2" => Some(
            "cannot be undone: a rename names only its source; the file it may replace is not named",
        ),
        "link" | "linkat" => {
            Some("cannot be undone: a hard link's trap names the existing file, not the new name")
        }
        "symlink" | "symlinkat" => {
            Some("cannot be undone: a symbolic link's trap may name its target, not the new link")
        }
        "utime" | "utimes" | "utimensat" | "futimesat" => {
            Some("cannot be undone: file times are not journaled")
        }
        _ => None,
    }
}

/// The prior state of the path `held` names, its bytes copied to the blob `id`.
pub(super) fn capture(journal: &Journal, id: u64, held: &Held<'_>) -> Captured {
    if let Some(why) = unrestorable(held.syscall) {
        return Captured::not_undoable(held.path, why);
    }
    let path = PathBuf::from(held.path);
    let shown = path.display().to_string();
    let parent = match nofollow::parent(&path) {
        Ok(parent) => parent,
        // A write into a folder that does not exist fails by itself; there is nothing to
        // take back but what it may create, which an absent entry removes.
        Err(WalkError::Missing(_)) => return absent(shown),
        Err(e) => return Captured::not_undoable(&shown, format!("cannot be undone: {e}")),
    };
    let stat = match parent.lstat() {
        Ok(stat) => stat,
        Err(e) => return Captured::not_undoable(&shown, format!("cannot be undone: {e}")),
    };
    let Some(stat) = stat else {
        return absent(shown);
    };
    let mode = nofollow::mode_of(&stat);
    match nofollow::kind_of(Some(&stat)) {
        Kind::Absent => absent(shown),
        Kind::Dir => Captured {
            path: shown,
            before: Before::Dir,
            mode: Some(mode),
            size: None,
            target: None,
            why: None,
        },
        Kind::Symlink => match parent.readlink() {
            Ok(target) => match String::from_utf8(target) {
                Ok(target) => Captured {
                    path: shown,
                    before: Before::Symlink,
                    mode: None,
                    size: None,
                    target: Some(target),
                    why: None,
                },
                Err(_) => Captured::not_undoable(
                    &shown,
                    "cannot be undone: the link's target is not UTF-8",
                ),
            },
            Err(e) => Captured::not_undoable(&shown, format!("cannot be undone: {e}")),
        },
        Kind::Special => Captured::not_undoable(
            &shown,
            "cannot be undone: not a regular file, folder or link (never opened)",
        ),
        Kind::File => {
            let size = stat.st_size as u64;
            let limit = journal.config().file_limit;
            if size > limit || !journal.reserve(size) {
                let why = if size > limit {
                    format!(
                        "cannot be undone: too large ({} over the {} per-file limit)",
                        super::format_size(size),
                        super::format_size(limit)
                    )
                } else {
                    "cannot be undone: too large for the journal's total limit".to_owned()
                };
                return Captured {
                    path: shown,
                    before: Before::TooLarge,
                    mode: Some(mode),
                    size: Some(size),
                    target: None,
                    why: Some(why),
                };
            }
            let kept = parent
                .open_regular(&stat)
                .and_then(|file| keep(journal, id, file, size));
            match kept {
                Ok(()) => Captured {
                    path: shown,
                    before: Before::File,
                    mode: Some(mode),
                    size: Some(size),
                    target: None,
                    why: None,
                },
                Err(e) => {
                    journal.unreserve(size);
                    let _ = std::fs::remove_file(journal.blob_path(id));
                    tracing::warn!(id, "the write journal could not keep a file: {e}");
                    Captured::not_undoable(&shown, format!("cannot be undone: not kept: {e}"))
                }
            }
        }
    }
}

fn absent(path: String) -> Captured {
    Captured {
        path,
        before: Before::Absent,
        mode: None,
        size: None,
        target: None,
        why: None,
    }
}

/// Copies exactly `size` bytes of `file` to blob `id` (0600, created new); a file that
/// grew or shrank meanwhile is an error.
fn keep(journal: &Journal, id: u64, file: File, size: u64) -> io::Result<()> {
    let blob = journal.blob_path(id);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode_0600()
        .open(&blob)?;
    let mut limited = file.take(size + 1);
    let copied = io::copy(&mut limited, &mut out)?;
    if copied != size {
        return Err(io::Error::other("the file changed size while it was kept"));
    }
    Ok(())
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
}
