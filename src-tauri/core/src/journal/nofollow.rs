//! The file system as the journal touches it: every path walked one component at a time
//! from `/` without following a symbolic link (`O_NOFOLLOW` on each folder), so a folder
//! a sandboxed program swapped for a link cannot send a capture, a restore or a delete
//! elsewhere. A FIFO, socket or device is never opened: the name is looked at first
//! (`lstat`), and a file is opened `O_NOFOLLOW|O_NONBLOCK` and checked regular again on
//! its descriptor.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A path's folder, opened without following a link, and its last component.
pub struct Parent {
    dir: OwnedFd,
    name: Vec<u8>,
}

/// Why a path could not be reached without following a link.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// Not an absolute path of plain components (`..` or `.` in it, or relative).
    #[error("not a plain absolute path")]
    NotPlain,
    /// A folder on the path is a symbolic link (or not a folder).
    #[error("a folder on its path ({0}) is a symbolic link or not a folder: not followed")]
    Link(String),
    /// A folder on the path does not exist.
    #[error("a folder on its path ({0}) does not exist")]
    Missing(String),
    /// Any other failure.
    #[error("{0}")]
    Io(io::Error),
}

/// Opens the folder holding `path`, each component `O_NOFOLLOW|O_DIRECTORY` from `/`.
pub fn parent(path: &Path) -> Result<Parent, WalkError> {
    if !path.is_absolute() {
        return Err(WalkError::NotPlain);
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => parts.push(part),
            _ => return Err(WalkError::NotPlain),
        }
    }
    let name = parts.pop().ok_or(WalkError::NotPlain)?;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // One syscall where the kernel has openat2 (Linux 5.6): the whole folder path resolved
    // with no symbolic link followed anywhere on it. Any failure (a link, a missing
    // folder, no openat2) takes the walk below, which names the folder at fault.
    let folder: std::path::PathBuf = parts.iter().collect();
    if let Ok(dir) = rustix::fs::openat2(
        rustix::fs::CWD,
        Path::new("/").join(&folder),
        flags,
        Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
    ) {
        return Ok(Parent {
            dir,
            name: name.as_bytes().to_vec(),
        });
    }
    let mut dir =
        rustix::fs::open("/", flags, Mode::empty()).map_err(|e| WalkError::Io(e.into()))?;
    let mut walked = std::path::PathBuf::from("/");
    for part in parts {
        walked.push(part);
        dir = rustix::fs::openat(&dir, part, flags, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
                WalkError::Link(walked.display().to_string())
            }
            rustix::io::Errno::NOENT => WalkError::Missing(walked.display().to_string()),
            e => WalkError::Io(e.into()),
        })?;
    }
    Ok(Parent {
        dir,
        name: name.as_bytes().to_vec(),
    })
}

impl Parent {
    fn name(&self) -> &OsStr {
        OsStr::from_bytes(&self.name)
    }

    /// `lstat` of the name; None when it does not exist.
    pub fn lstat(&self) -> io::Result<Option<Stat>> {
        match rustix::fs::statat(&self.dir, self.name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The link's target.
    pub fn readlink(&self) -> io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(&self.dir, self.name(), Vec::new())?.into_bytes())
    }

    /// Opens the name for reading if it is (still) a regular file: `O_NOFOLLOW` and
    /// `O_NONBLOCK` (a FIFO swapped in after the `lstat` neither blocks nor is read),
    /// then checked regular and the same inode on the descriptor.
    pub fn open_regular(&self, seen: &Stat) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, self.name(), flags, Mode::empty())?;
        let now = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(now.st_mode) != FileType::RegularFile
            || now.st_ino != seen.st_ino
            || now.st_dev != seen.st_dev
        {
            return Err(io::Error::other("it changed while it was being read"));
        }
        Ok(File::from(fd))
    }

    /// Removes the name: a folder with `rmdir` (only when empty), anything else unlinked.
    pub fn remove(&self, is_dir: bool) -> io::Result<()> {
        let flags = if is_dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        Ok(rustix::fs::unlinkat(&self.dir, self.name(), flags)?)
    }

    /// Puts `bytes` with `mode` at the name: written to a new file beside it (exclusive,
    /// never through a link), given the mode exactly (umask aside), and renamed over it.
    pub fn replace_file(&self, bytes: &mut dyn Read, mode: u32, tag: u64) -> io::Result<()> {
        let temp = format!(".landstrip-undo-{tag}-{}", std::process::id());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, temp.as_str(), flags, Mode::from_raw_mode(0o600))?;
        let written = (|| {
            let mut file = File::from(fd);
            io::copy(bytes, &mut file)?;
            rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(mode & 0o7777))?;
            file.flush()?;
            rustix::fs::renameat(&self.dir, temp.as_str(), &self.dir, self.name())?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Makes a folder at the name with `mode` exactly.
    pub fn make_dir(&self, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(&self.dir, self.name(), Mode::from_raw_mode(mode & 0o7777))?;
        self.chmod_dir(mode)
    }

    /// Gives the folder at the name `mode` (opened without following a link).
    pub fn chmod_dir(&self, mode: u32) -> io::Result<()> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, self.name(), flags, Mode::empty())?;
        Ok(rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777))?)
    }

    /// Makes a symbolic link at the name pointing at `target` (a link there now is
    /// replaced through a new name and a rename).
    pub fn make_symlink(&self, target: &[u8], replace: bool, tag: u64) -> io::Result<()> {
        let target = OsStr::from_bytes(target);
        if !replace {
            return Ok(rustix::fs::symlinkat(target, &self.dir, self.name())?);
        }
        let temp = format!(".landstrip-undo-{tag}-{}", std::process::id());
        rustix::fs::symlinkat(target, &self.dir, temp.as_str())?;
        rustix::fs::renameat(&self.dir, temp.as_str(), &self.dir, self.name()).inspect_err(
            |_| {
                let _ = rustix::fs::unlinkat(&self.dir, temp.as_str(), AtFlags::empty());
            },
        )?;
        Ok(())
    }
}

/// What a stat says a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Nothing there.
    Absent,
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device: never opened.
    Special,
}

/// The kind of what `stat` describes.
pub fn kind_of(stat: Option<&Stat>) -> Kind {
    match stat.map(|s| FileType::from_raw_mode(s.st_mode)) {
        None => Kind::Absent,
        Some(FileType::RegularFile) => Kind::File,
        Some(FileType::Directory) => Kind::Dir,
        Some(FileType::Symlink) => Kind::Symlink,
        Some(_) => Kind::Special,
    }
}

/// The permission bits of a stat.
pub fn mode_of(stat: &Stat) -> u32 {
    stat.st_mode & 0o7777
}

/// How a path was left: enough to tell "still as the run left it" from "changed since".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// What is there (`unreachable`: a folder on its path is a link or missing).
    pub kind: Option<Kind>,
    /// Its size in bytes.
    #[serde(default)]
    pub size: u64,
    /// Its permission bits.
    #[serde(default)]
    pub mode: u32,
    /// Its modification time, ns since the epoch.
    #[serde(default)]
    pub mtime_ns: i128,
    /// A regular file's SHA-256, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The fingerprint of `path` now, reached without following a link.
pub fn fingerprint(path: &Path) -> Fingerprint {
    let unreachable = Fingerprint {
        kind: None,
        size: 0,
        mode: 0,
        mtime_ns: 0,
        sha256: None,
        target: None,
    };
    let Ok(parent) = parent(path) else {
        return unreachable;
    };
    let Ok(stat) = parent.lstat() else {
        return unreachable;
    };
    let kind = kind_of(stat.as_ref());
    let Some(stat) = stat else {
        return Fingerprint {
            kind: Some(Kind::Absent),
            ..unreachable
        };
    };
    let sha256 = match kind {
        Kind::File => parent.open_regular(&stat).and_then(hash).ok(),
        _ => None,
    };
    let target = match kind {
        Kind::Symlink => parent
            .readlink()
            .ok()
            .map(|t| String::from_utf8_lossy(&t).into_owned()),
        _ => None,
    };
    Fingerprint {
        kind: Some(kind),
        size: stat.st_size as u64,
        mode: mode_of(&stat),
        mtime_ns: (stat.st_mtime as i128) * 1_000_000_000 + stat.st_mtime_nsec as i128,
        sha256,
        target,
    }
}

/// SHA-256 of a file's content, hex.
pub fn hash(mut file: File) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_swapped_for_a_link_is_not_walked_through() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("victim")).unwrap();
        std::fs::write(base.join("victim/f"), b"v").unwrap();
        std::os::unix::fs::symlink(base.join("victim"), base.join("sub")).unwrap();
        assert!(matches!(
            parent(&base.join("sub/f")),
            Err(WalkError::Link(_))
        ));
        assert!(matches!(
            parent(&base.join("gone/f")),
            Err(WalkError::Missing(_))
        ));
        assert!(matches!(
            parent(&base.join("a/../f")),
            Err(WalkError::NotPlain)
        ));
        assert_eq!(fingerprint(&base.join("sub/f")).kind, None);
        assert_eq!(fingerprint(&base.join("sub")).kind, Some(Kind::Symlink));
    }

    #[test]
    fn a_fifo_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let fifo = base.join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let p = parent(&fifo).unwrap();
        let stat = p.lstat().unwrap().unwrap();
        assert_eq!(kind_of(Some(&stat)), Kind::Special);
        // Even when asked, the descriptor check refuses it (and O_NONBLOCK kept the open
        // from waiting for a writer).
        assert!(p.open_regular(&stat).is_err());
    }
}
