//! Crash-safe writes of policy files and read-edit-write helpers.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::edit::{add_entry, remove_entry, set_bool, EditOutcome};
use super::files::read_text;
use super::matcher::normalize_lexically;
use super::schema::{FsList, PolicyError};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes the temp file on drop unless disarmed.
struct TempGuard {
    path: Option<PathBuf>,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// The file a write to `path` should replace: a symlink is followed so that
/// the link (e.g. into a dotfiles repository) stays a link.
fn write_target(path: &Path) -> io::Result<PathBuf> {
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&target)?;
                target = match target.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(target),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(target),
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::other(format!(
        "too many levels of symbolic links: {}",
        path.display()
    )))
}

fn open_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
}

/// Replace `path` with `contents` atomically: parent directories created, a
/// temp file in the same directory written and fsynced, the existing file's
/// permission bits kept, renamed over the target, the directory fsynced. The
/// temp file is removed on any failure. A symlink at `path` is followed.
pub fn write_atomic(path: &Path, contents: &str) -> io::Result<()> {
    let target = write_target(path)?;
    let name = target
        .file_name()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a file path: {}", path.display()),
            )
        })?
        .to_string_lossy()
        .into_owned();
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let permissions = match fs::metadata(&target) {
        Ok(meta) => Some(meta.permissions()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };

    let (temp, mut file) = open_temp(&dir, &name)?;
    let mut guard = TempGuard {
        path: Some(temp.clone()),
    };
    file.write_all(contents.as_bytes())?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, &target)?;
    guard.path = None;
    // The rename is done; a failing directory sync must not delete anything.
    File::open(&dir)?.sync_all()?;
    Ok(())
}

fn path_lock(path: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let key = if path.is_absolute() {
        normalize_lexically(path)
    } else {
        std::env::current_dir()
            .map(|cwd| normalize_lexically(&cwd.join(path)))
            .unwrap_or_else(|_| normalize_lexically(path))
    };
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    Arc::clone(locks.entry(key).or_default())
}

/// Read `path` (missing → `None`), apply `edit`, write atomically if it changed.
/// Concurrent edits of one path within this process are serialised.
pub fn edit_file(
    path: &Path,
    edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
) -> Result<EditOutcome, PolicyError> {
    let lock = path_lock(path);
    let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
    let text = read_text(path)?;
    let outcome = edit(text.as_deref()).map_err(|error| error.with_file(path))?;
    if let EditOutcome::Changed(new_text) = &outcome {
        write_atomic(path, new_text).map_err(|source| PolicyError::Io {
            file: path.to_path_buf(),
            source,
        })?;
    }
    Ok(outcome)
}

/// Add `entry` to a filesystem list of the file at `path` (created if missing).
pub fn add_to_file(path: &Path, list: FsList, entry: &str) -> Result<EditOutcome, PolicyError> {
    edit_file(path, |text| add_entry(text, list, entry))
}

/// Remove `entry` from a filesystem list of the file at `path` (a missing file is unchanged).
pub fn remove_from_file(
    path: &Path,
    list: FsList,
    entry: &str,
) -> Result<EditOutcome, PolicyError> {
    edit_file(path, |text| match text {
        Some(text) => remove_entry(text, list, entry),
        None => Ok(EditOutcome::Unchanged),
    })
}

/// Set a boolean field of the file at `path` (created if missing).
pub fn set_bool_in_file(
    path: &Path,
    key_path: &[&str],
    value: bool,
) -> Result<EditOutcome, PolicyError> {
    edit_file(path, |text| set_bool(text, key_path, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_atomic_creates_dirs_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/sandbox.json");
        write_atomic(&path, "{}\n").expect("write");
        assert_eq!(fs::read_to_string(&path).expect("read"), "{}\n");
        write_atomic(&path, "{\"enabled\": true}\n").expect("rewrite");
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            "{\"enabled\": true}\n"
        );
        assert_eq!(entries(&dir.path().join("a/b")), ["sandbox.json"]);
    }

    #[test]
    fn write_atomic_keeps_the_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.json");
        fs::write(&path, "{}").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        write_atomic(&path, "{ }").expect("rewrite");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
        assert_eq!(entries(dir.path()), ["sandbox.json"]);
    }

    #[test]
    fn write_atomic_removes_the_temp_file_on_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The target is a directory: the rename fails after the temp file is written.
        let path = dir.path().join("sandbox.json");
        fs::create_dir(&path).expect("mkdir");
        fs::write(path.join("inside"), "x").expect("write");
        assert!(write_atomic(&path, "{}").is_err());
        assert_eq!(entries(dir.path()), ["sandbox.json"]);
    }

    #[test]
    fn write_atomic_follows_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("dotfiles/sandbox.json");
        fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
        fs::write(&real, "{}").expect("write");
        let link = dir.path().join("sandbox.json");
        std::os::unix::fs::symlink("dotfiles/sandbox.json", &link).expect("symlink");
        write_atomic(&link, "{\"enabled\": false}").expect("write");
        assert!(fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink());
        assert_eq!(
            fs::read_to_string(&real).expect("read"),
            "{\"enabled\": false}"
        );
    }

    #[test]
    fn file_edits_write_only_on_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("proj/.opencode/sandbox.json");
        assert_eq!(
            remove_from_file(&path, FsList::AllowWrite, "x").expect("ok"),
            EditOutcome::Unchanged
        );
        assert!(!path.exists());

        let outcome = add_to_file(&path, FsList::AllowWrite, "/data").expect("ok");
        assert!(matches!(outcome, EditOutcome::Changed(_)));
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"/data\"]\n  }\n}\n"
        );
        let before = fs::metadata(&path).expect("stat");
        assert_eq!(
            add_to_file(&path, FsList::AllowWrite, "/data").expect("ok"),
            EditOutcome::Unchanged
        );
        let after = fs::metadata(&path).expect("stat");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            before.ino(),
            after.ino(),
            "unchanged files are not rewritten"
        );

        set_bool_in_file(&path, &["enabled"], false).expect("ok");
        remove_from_file(&path, FsList::AllowWrite, "/data").expect("ok");
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            "{\n  \"filesystem\": {\n    \"allowWrite\": []\n  },\n  \"enabled\": false\n}\n"
        );
        assert_eq!(
            entries(&dir.path().join("proj/.opencode")),
            ["sandbox.json"]
        );
    }

    #[test]
    fn broken_files_are_never_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.json");
        let broken = "{\"filesystem\": {\"allowWrite\": [\"a\",]}}";
        fs::write(&path, broken).expect("write");
        match add_to_file(&path, FsList::AllowWrite, "b") {
            Err(PolicyError::Syntax { file, line, .. }) => {
                assert_eq!(file, path);
                assert_eq!(line, 1);
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
        fs::write(&path, r#"{"network": {"allowNetwork": "yes"}}"#).expect("write");
        let error = set_bool_in_file(&path, &["enabled"], true).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            format!("{}: network.allowNetwork must be a boolean", path.display())
        );
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            r#"{"network": {"allowNetwork": "yes"}}"#
        );
    }

    #[test]
    fn concurrent_edits_of_one_file_all_land() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = Arc::new(dir.path().join("sandbox.json"));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let path = Arc::clone(&path);
                std::thread::spawn(move || {
                    add_to_file(&path, FsList::AllowRead, &format!("/d{i}")).expect("edit");
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("thread");
        }
        let loaded = crate::policy::files::load_file(&path)
            .expect("valid")
            .expect("exists");
        let list = loaded
            .filesystem
            .and_then(|fs| fs.allow_read)
            .expect("allowRead");
        assert_eq!(list.len(), 8);
        assert_eq!(entries(dir.path()), ["sandbox.json"]);
    }
}
