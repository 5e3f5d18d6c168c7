//! Crash-safe writes of policy files and read-edit-write helpers.

use std::fs;
use std::path::Path;
use std::sync::PoisonError;

use super::cache::read_text;
use super::edit::{remove_entry, set_bool, EditOutcome};
use super::schema::{FsList, PolicyError};
use crate::safe_fs::{self, FileMode};

/// Refuses a policy file the app must not write: a symbolic link (a dotfiles link, say).
/// Writing through it would change a file other than the one the preview names, and
/// replacing it would break the link; the error names both and says to edit by hand.
/// Reading still follows links, as the plugin does. A missing file is writable.
pub fn check_writable(path: &Path) -> Result<(), PolicyError> {
    match safe_fs::symlink_target(path) {
        Ok(None) => Ok(()),
        Ok(Some(target)) => Err(PolicyError::Symlink {
            file: path.to_path_buf(),
            target,
        }),
        Err(source) => Err(PolicyError::Io {
            file: path.to_path_buf(),
            source,
        }),
    }
}

/// Replaces `path` with `contents` atomically ([`safe_fs::write_atomic`]), parent
/// directories created, the existing file's permission bits kept (a new file gets
/// 0666 less the umask, as the plugin's own writes do). Refuses a symlink
/// ([`check_writable`]).
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), PolicyError> {
    check_writable(path)?;
    let io_err = |source| PolicyError::Io {
        file: path.to_path_buf(),
        source,
    };
    fs::create_dir_all(safe_fs::parent_dir(path)).map_err(io_err)?;
    safe_fs::write_atomic(path, contents.as_bytes(), FileMode::KeepOr(0o666)).map_err(io_err)
}

/// How long a policy edit waits for another process's lock on the file's directory before
/// it fails (the prompt being answered stays pending; the settings view says why).
pub const DIR_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Read `path` (missing → `None`), apply `edit`, write atomically if it changed.
/// Concurrent edits of one path are serialised, within this process (a mutex) and across
/// processes (a `flock` on the file's directory: another app instance, `ctl` run from a
/// second build), so no edit is made to text another writer is replacing and no entry is
/// lost. A symlink at `path` is refused ([`check_writable`]). Directories created to hold
/// the lock are removed again when nothing was written.
pub fn edit_file(
    path: &Path,
    edit: impl FnOnce(Option<&str>) -> Result<EditOutcome, PolicyError>,
) -> Result<EditOutcome, PolicyError> {
    let lock = safe_fs::path_lock(path);
    let _held = lock.lock().unwrap_or_else(PoisonError::into_inner);
    // Before reading: a link is refused even when the edit would change nothing.
    check_writable(path)?;
    let io_err = |source| PolicyError::Io {
        file: path.to_path_buf(),
        source,
    };
    let dir = safe_fs::parent_dir(path);
    let created = missing_ancestors(dir);
    fs::create_dir_all(dir).map_err(io_err)?;
    let result = safe_fs::FileLock::directory(dir, DIR_LOCK_WAIT)
        .map_err(io_err)
        .and_then(|_dir_lock| {
            let text = read_text(path)?;
            let outcome = edit(text.as_deref()).map_err(|error| error.with_file(path))?;
            if let EditOutcome::Changed(new_text) = &outcome {
                write_atomic(path, new_text)?;
            }
            Ok(outcome)
        });
    if !matches!(result, Ok(EditOutcome::Changed(_))) {
        // Innermost first; one that is not empty (someone else's file) stays.
        for dir in &created {
            let _ = fs::remove_dir(dir);
        }
    }
    result
}

/// The directories of `dir` (itself first, then its parents) that do not exist yet.
fn missing_ancestors(dir: &Path) -> Vec<std::path::PathBuf> {
    dir.ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
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
    use crate::policy::add_entry;

    /// Adds `entry` to a filesystem list of the file at `path` (created if missing), as
    /// the app's writers do through `OwnWrites::edit`.
    fn add_to_file(path: &Path, list: FsList, entry: &str) -> Result<EditOutcome, PolicyError> {
        edit_file(path, |text| add_entry(text, list, entry))
    }
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    use crate::safe_fs::tests::names as entries;

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
    fn write_atomic_keeps_a_group_readable_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.json");
        fs::write(&path, "{}").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        add_to_file(&path, FsList::AllowWrite, "/data").expect("edit");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(dir.path()), ["sandbox.json"]);
    }

    #[test]
    fn a_symlinked_policy_file_is_refused_for_writing_and_left_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("dotfiles/sandbox.json");
        fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
        let original = "{\"filesystem\": {\"allowWrite\": [\"/a\"]}}\n";
        fs::write(&real, original).expect("write");
        let link = dir.path().join("proj/.opencode/sandbox.json");
        fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink("../../dotfiles/sandbox.json", &link).expect("symlink");

        // Reading follows the link, as the plugin does.
        let loaded = crate::policy::cache::load_file(&link)
            .expect("valid")
            .expect("exists");
        assert!(loaded.filesystem.is_some());

        let error = add_to_file(&link, FsList::AllowWrite, "/b").expect_err("refused");
        match &error {
            PolicyError::Symlink { file, target } => {
                assert_eq!(file, &link);
                assert_eq!(target, &real, "resolved against the link's directory");
            }
            other => panic!("expected a symlink refusal, got {other:?}"),
        }
        let text = error.to_string();
        assert!(
            text.contains(&link.display().to_string())
                && text.contains(&real.display().to_string())
                && text.contains("by hand"),
            "{text}"
        );
        assert_eq!(
            check_writable(&link).expect_err("refused").to_string(),
            text
        );
        // An edit that would change nothing is refused too: the answer depends on the file
        // alone, not on what it holds.
        assert!(add_to_file(&link, FsList::AllowWrite, "/a").is_err());
        assert!(write_atomic(&link, "{}").is_err());
        assert_eq!(fs::read_to_string(&real).expect("read"), original);
        assert!(fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink());
        // A dangling link is refused as well, and nothing is created where it points.
        fs::remove_file(&real).expect("rm");
        assert!(matches!(
            add_to_file(&link, FsList::AllowWrite, "/b"),
            Err(PolicyError::Symlink { .. })
        ));
        assert!(!real.exists());
        assert!(check_writable(&dir.path().join("missing.json")).is_ok());
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
        let loaded = crate::policy::cache::load_file(&path)
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
