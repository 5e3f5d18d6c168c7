//! The journal against real files in a temporary directory: each kind recorded and
//! restored, a folder swapped for a link refused, eviction, the per-file limit, modes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

struct Fixture {
    _root: tempfile::TempDir,
    base: PathBuf,
    journal: Arc<Journal>,
}

fn fixture(config: JournalConfig) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("work")).unwrap();
    let journal = Journal::open(&base.join("data/journal"), config).unwrap();
    Fixture {
        _root: root,
        base,
        journal,
    }
}

impl Fixture {
    fn path(&self, rel: &str) -> PathBuf {
        self.base.join("work").join(rel)
    }

    /// Journals a write to `rel` by connection `conn` with `syscall`.
    fn record(&self, conn: u64, rel: &str, syscall: &str) -> u64 {
        let path = self.path(rel).display().to_string();
        self.journal
            .record(&Held {
                conn,
                session: Some("ses_a"),
                project: &self.base,
                path: &path,
                syscall: Some(syscall),
                requested_path: None,
                cwd: None,
            })
            .expect("journal on")
    }

    /// Ends run `conn` and waits for its fingerprints.
    fn end(&self, conn: u64) {
        self.journal.end_run(conn);
        self.journal.wait_for_ends(Duration::from_secs(10));
    }

    fn item(&self, id: u64) -> JournalItem {
        self.journal
            .list(None)
            .into_iter()
            .find(|i| i.id == id)
            .unwrap()
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn an_overwrite_a_creation_and_a_removal_are_put_back_exactly() {
    let f = fixture(JournalConfig::default());
    let kept = f.path("kept.txt");
    std::fs::write(&kept, b"before\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    let removed = f.path("removed.txt");
    std::fs::write(&removed, b"gone soon").unwrap();
    std::fs::set_permissions(&removed, std::fs::Permissions::from_mode(0o604)).unwrap();
    let overwrite = f.record(1, "kept.txt", "openat");
    let create = f.record(1, "new.txt", "openat");
    let remove = f.record(1, "removed.txt", "unlinkat");
    assert_eq!(f.item(overwrite).before, Before::File);
    assert_eq!(f.item(create).before, Before::Absent);
    assert_eq!(f.item(remove).before, Before::File);
    // What the run does with them.
    std::fs::write(&kept, b"after, longer\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::write(f.path("new.txt"), b"made").unwrap();
    std::fs::remove_file(&removed).unwrap();
    f.end(1);
    assert!(f.item(create).ended_ms.is_some());

    let dry = f
        .journal
        .undo(&UndoTarget::Session("ses_a".into()), true, false);
    assert!(
        dry.iter().all(|o| o.outcome == UndoResult::WouldRestore),
        "{dry:?}"
    );
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        b"after, longer\n",
        "a dry run changes nothing"
    );
    assert!(!removed.exists());

    let done = f
        .journal
        .undo(&UndoTarget::Session("ses_a".into()), false, false);
    assert_eq!(
        done.iter().map(|o| o.id).collect::<Vec<_>>(),
        [remove, create, overwrite],
        "newest write first"
    );
    assert!(
        done.iter().all(|o| o.outcome == UndoResult::Restored),
        "{done:?}"
    );
    assert_eq!(std::fs::read(&kept).unwrap(), b"before\n");
    assert_eq!(mode(&kept), 0o640);
    assert!(!f.path("new.txt").exists());
    assert_eq!(std::fs::read(&removed).unwrap(), b"gone soon");
    assert_eq!(mode(&removed), 0o604);
    // Once only.
    let again = f
        .journal
        .undo(&UndoTarget::Ids(vec![overwrite]), false, false);
    assert_eq!(again[0].outcome, UndoResult::Refused);
    assert_eq!(again[0].detail, "already undone");
}

#[test]
fn folders_and_links_are_put_back() {
    let f = fixture(JournalConfig::default());
    std::fs::create_dir(f.path("old")).unwrap();
    std::fs::set_permissions(f.path("old"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("some/target", f.path("link")).unwrap();
    std::fs::write(f.path("target"), b"t").unwrap();
    std::os::unix::fs::symlink(f.path("target"), f.path("other")).unwrap();
    let rmdir = f.record(1, "old", "rmdir");
    let mkdir = f.record(1, "made", "mkdir");
    // A trap naming the link itself: the link is kept.
    let unlink = f.record(1, "link", "unlinkat");
    // landstrip 0.18.27 names the link's target for an unlink of the link, and the target
    // is what goes: the named path is kept.
    let target = f.path("target").display().to_string();
    let named = f
        .journal
        .record(&Held {
            conn: 1,
            session: Some("ses_a"),
            project: &f.base,
            path: &target,
            syscall: Some("unlink"),
            requested_path: Some(f.path("other").to_str().unwrap()),
            cwd: None,
        })
        .unwrap();
    assert_eq!(f.item(unlink).before, Before::Symlink);
    assert_eq!(f.item(named).before, Before::File);
    assert_eq!(f.item(named).path, target);
    assert_eq!(f.item(rmdir).before, Before::Dir);
    assert_eq!(f.item(mkdir).before, Before::Absent);
    std::fs::remove_dir(f.path("old")).unwrap();
    std::fs::create_dir(f.path("made")).unwrap();
    std::fs::remove_file(f.path("link")).unwrap();
    std::fs::remove_file(f.path("target")).unwrap();
    f.end(1);
    let done = f
        .journal
        .undo(&UndoTarget::Session("ses_a".into()), false, false);
    assert!(
        done.iter().all(|o| o.outcome == UndoResult::Restored),
        "{done:?}"
    );
    assert_eq!(mode(&f.path("old")), 0o750);
    assert!(!f.path("made").exists());
    assert_eq!(
        std::fs::read_link(f.path("link")).unwrap(),
        Path::new("some/target"),
        "the link is back, pointing where it pointed"
    );
    assert_eq!(std::fs::read(f.path("target")).unwrap(), b"t");
}

#[test]
fn a_rename_and_a_link_are_listed_as_not_undoable() {
    let f = fixture(JournalConfig::default());
    std::fs::write(f.path("src"), b"s").unwrap();
    for syscall in ["renameat2", "linkat", "utimensat"] {
        let id = f.record(1, "src", syscall);
        let item = f.item(id);
        assert_eq!(item.before, Before::NotUndoable, "{syscall}");
        assert!(!item.undoable);
        assert!(item.why.unwrap().starts_with("cannot be undone"));
    }
}

#[test]
fn a_path_changed_after_the_run_is_refused_unless_forced() {
    let f = fixture(JournalConfig::default());
    std::fs::write(f.path("a"), b"one").unwrap();
    let id = f.record(1, "a", "openat");
    std::fs::write(f.path("a"), b"two").unwrap();
    let unended = f.journal.undo(&UndoTarget::Ids(vec![id]), false, false);
    assert_eq!(unended[0].outcome, UndoResult::Refused);
    assert!(unended[0].detail.contains("has not ended"), "{unended:?}");
    f.end(1);
    std::fs::write(f.path("a"), b"three").unwrap();
    let refused = f.journal.undo(&UndoTarget::Ids(vec![id]), false, false);
    assert_eq!(refused[0].outcome, UndoResult::Refused);
    assert!(refused[0].detail.contains("changed since the run ended"));
    assert_eq!(std::fs::read(f.path("a")).unwrap(), b"three");
    let forced = f.journal.undo(&UndoTarget::Ids(vec![id]), false, true);
    assert_eq!(forced[0].outcome, UndoResult::Restored);
    assert_eq!(std::fs::read(f.path("a")).unwrap(), b"one");
}

#[test]
fn a_folder_swapped_for_a_link_does_not_redirect_the_undo() {
    let f = fixture(JournalConfig::default());
    std::fs::create_dir(f.path("sub")).unwrap();
    std::fs::create_dir(f.path("victim")).unwrap();
    std::fs::write(f.path("victim/f"), b"victim's").unwrap();
    let id = f.record(1, "sub/f", "openat");
    std::fs::write(f.path("sub/f"), b"made").unwrap();
    f.end(1);
    std::fs::rename(f.path("sub"), f.path("sub.real")).unwrap();
    std::os::unix::fs::symlink(f.path("victim"), f.path("sub")).unwrap();
    let done = f.journal.undo(&UndoTarget::Ids(vec![id]), false, true);
    assert_eq!(done[0].outcome, UndoResult::Refused, "{done:?}");
    assert!(done[0].detail.contains("symbolic link"), "{done:?}");
    assert_eq!(std::fs::read(f.path("victim/f")).unwrap(), b"victim's");
}

#[test]
fn a_file_over_the_limit_is_too_large_and_the_oldest_session_is_evicted() {
    let f = fixture(JournalConfig {
        enabled: true,
        limit: 10,
        file_limit: 6,
    });
    std::fs::write(f.path("big"), b"1234567").unwrap();
    let big = f.record(1, "big", "openat");
    assert_eq!(f.item(big).before, Before::TooLarge);
    assert!(f.item(big).why.unwrap().contains("too large"));
    std::fs::write(f.path("a"), b"123456").unwrap();
    let first = f.record(1, "a", "openat");
    assert_eq!(f.journal.stored_bytes(), 6);
    // Another session's 6 bytes do not fit beside the first's: the oldest goes.
    std::fs::write(f.path("b"), b"abcdef").unwrap();
    let path = f.path("b").display().to_string();
    let second = f
        .journal
        .record(&Held {
            conn: 2,
            session: Some("ses_b"),
            project: &f.base,
            path: &path,
            syscall: Some("openat"),
            requested_path: None,
            cwd: None,
        })
        .unwrap();
    assert_eq!(f.journal.stored_bytes(), 6);
    assert!(f.item(first).why.unwrap().starts_with("evicted"));
    assert!(!f.item(first).undoable);
    assert!(f.item(second).undoable);
    assert!(!f.journal.blob_path(first).exists());
    // Read back from disk (written out, as at quit), the eviction holds.
    f.journal.flush();
    let reopened = Journal::open(f.journal.dir(), JournalConfig::default()).unwrap();
    let items = reopened.list(None);
    assert!(!items.iter().find(|i| i.id == first).unwrap().undoable);
    assert!(items.iter().find(|i| i.id == second).unwrap().undoable);
    assert!(reopened.record_next_id() > second);
}

#[test]
fn the_journal_is_private_and_keeps_no_fifo() {
    let f = fixture(JournalConfig::default());
    std::fs::write(f.path("secret"), b"token").unwrap();
    let id = f.record(1, "secret", "openat");
    let dir = f.journal.dir();
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(&dir.join("blobs")), 0o700);
    assert_eq!(mode(&dir.join("index.jsonl")), 0o600);
    assert_eq!(mode(&f.journal.blob_path(id)), 0o600);
    let index = std::fs::read_to_string(dir.join("index.jsonl")).unwrap();
    assert!(!index.contains("token"), "contents stay out of the index");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        f.path("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let fifo = f.record(1, "pipe", "openat");
    assert_eq!(f.item(fifo).before, Before::NotUndoable);
}

#[test]
fn off_records_nothing_and_sizes_read_as_typed() {
    let f = fixture(JournalConfig {
        enabled: false,
        ..JournalConfig::default()
    });
    let path = f.path("x").display().to_string();
    assert!(f
        .journal
        .record(&Held {
            conn: 1,
            session: None,
            project: &f.base,
            path: &path,
            syscall: None,
            requested_path: None,
            cwd: None,
        })
        .is_none());
    assert_eq!(parse_size("2GiB"), Ok(2 << 30));
    assert_eq!(parse_size("64MiB"), Ok(64 << 20));
    assert_eq!(parse_size("512"), Ok(512));
    assert!(parse_size("2 parsecs").is_err());
    assert_eq!(format_size(1 << 30), "1GiB");
    assert_eq!(format_size(1000), "1000B");
}

impl Journal {
    fn record_next_id(&self) -> u64 {
        self.next_id.load(Ordering::Relaxed)
    }
}

/// A held query as landstrip 0.19 writes it.
fn held(path: &Path, operation: &str, syscall: &str) -> crate::wire::protocol::Query {
    let line = format!(
        r#"{{"kind":"filesystem","state":"query","query_id":"1","operation":"{operation}","path":"{}","syscall":"{syscall}","reason":"allow_miss"}}"#,
        path.display()
    );
    match crate::wire::protocol::parse_line(line.as_bytes()).into_line() {
        crate::wire::protocol::Line::Query(query) => query,
        other => panic!("not a query: {other:?}"),
    }
}

#[test]
fn the_prompt_is_told_before_the_answer_what_could_not_be_undone() {
    let f = fixture(JournalConfig {
        enabled: true,
        limit: 1 << 20,
        file_limit: 4,
    });
    std::fs::write(f.path("big"), b"12345").unwrap();
    std::fs::write(f.path("small"), b"1234").unwrap();
    let note =
        |rel: &str, op: &str, syscall: &str| f.journal.undo_note(&held(&f.path(rel), op, syscall));
    assert!(note("big", "write", "openat")
        .unwrap()
        .contains("too large"));
    assert_eq!(note("small", "write", "openat"), None);
    assert_eq!(note("new", "write", "openat"), None);
    assert_eq!(
        note("big", "read", "openat"),
        None,
        "a read changes nothing"
    );
    assert!(note("small", "write", "renameat2")
        .unwrap()
        .contains("a rename names only its source"));
    f.journal.configure(JournalConfig {
        enabled: false,
        ..f.journal.config()
    });
    assert_eq!(
        note("big", "write", "openat"),
        None,
        "nothing is kept at all"
    );
}
