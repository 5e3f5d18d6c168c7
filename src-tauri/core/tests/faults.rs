//! Policy saves that go wrong, on real files: a read-only directory and a full one (small
//! tmpfs mounts, which need root: those tests fail, saying why, where they cannot mount,
//! rather than pass without having looked), a writer process
//! SIGKILLed at random moments of its saves, and several writers at once (threads of one
//! process, and separate processes as two app instances are). The file on disk is always
//! the old text or the new one, never a mix; every failure is a typed error naming the
//! file; no writer loses another's entries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use landstrip_tray_core::policy::change::{ListField, PolicyChange};
use landstrip_tray_core::policy::{
    parse_overrides, write_atomic, EditOutcome, FsList, PolicyError,
};

const ALLOW_WRITE: ListField = ListField::Filesystem(FsList::AllowWrite);

/// A small tmpfs mounted for one test and unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` bytes, or panics saying why it cannot (not root, no
    /// mount in this sandbox): a test that cannot set up its directory must not pass.
    fn mount(size: usize) -> Self {
        assert_eq!(
            landstrip_tray_core::uid(),
            0,
            "needs root: mounting the tmpfs this test saves into"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::piped())
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot mount the tmpfs this test needs: no mount command: {e}")
            });
        assert!(
            out.status.success(),
            "cannot mount the tmpfs this test needs ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.path())
            .status()
            .expect("mount");
        assert!(status.success(), "remount {options} failed");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const ORIGINAL: &str = "{\n  \"filesystem\": {\n    \"allowWrite\": [\"/old\"]\n  }\n}\n";

fn add(entry: &str) -> PolicyChange {
    PolicyChange::Add {
        list: ALLOW_WRITE,
        entry: entry.to_string(),
    }
}

#[test]
fn a_save_into_a_read_only_directory_is_a_typed_error_and_the_file_is_kept() {
    let fs = Tmpfs::mount(1 << 20);
    let dir = fs.path().join(".opencode");
    std::fs::create_dir(&dir).expect("mkdir");
    let file = dir.join("sandbox.json");
    std::fs::write(&file, ORIGINAL).expect("write");
    fs.remount("ro");

    let err = add("/new")
        .apply_to_file(&file)
        .expect_err("saved on a read-only fs");
    let PolicyError::Io {
        file: named,
        source,
    } = &err
    else {
        panic!("not an I/O error: {err:?}");
    };
    assert_eq!(named, &file);
    assert_eq!(source.raw_os_error(), Some(libc::EROFS), "{source}");
    let message = err.to_string();
    assert!(
        message.contains(file.to_str().expect("utf-8")) && message.contains("Read-only"),
        "the user is not told which file or why: {message}"
    );
    eprintln!("read-only: {message}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), ORIGINAL);
    assert_eq!(names(&dir), ["sandbox.json"]);
    fs.remount("rw");
}

#[test]
fn a_save_into_a_full_directory_is_a_typed_error_and_the_file_is_kept() {
    let fs = Tmpfs::mount(64 * 1024);
    let dir = fs.path().to_path_buf();
    let file = dir.join("sandbox.json");
    std::fs::write(&file, ORIGINAL).expect("write");
    // Fill what is left, so the temp file can be created but not written out.
    let filler = dir.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).expect("filler");
        let block = [0u8; 1024];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
    }
    let big = format!("/new/{}", "x".repeat(16 * 1024));
    let err = add(&big)
        .apply_to_file(&file)
        .expect_err("saved on a full fs");
    let PolicyError::Io {
        file: named,
        source,
    } = &err
    else {
        panic!("not an I/O error: {err:?}");
    };
    assert_eq!(named, &file);
    assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "{source}");
    eprintln!("full: {err}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), ORIGINAL);
    assert_eq!(
        names(&dir),
        ["filler", "sandbox.json"],
        "a temp file was left"
    );

    // Room again: the same save goes through.
    std::fs::remove_file(&filler).expect("rm filler");
    assert!(matches!(
        add(&big).apply_to_file(&file),
        Ok(EditOutcome::Changed(_))
    ));
    let parsed =
        parse_overrides(&std::fs::read_to_string(&file).expect("read"), &file).expect("parses");
    let list = parsed.string_list(&ALLOW_WRITE.key_path()).expect("list");
    assert_eq!(list, ["/old".to_string(), big]);
}

/// Env var naming the file a child writer works on (set only for the children below).
const CHILD_TARGET: &str = "LT_FAULTS_CHILD_TARGET";
/// Env var naming what a child does: `alternate` (rewrite two texts forever) or
/// `add:<prefix>:<n>` (add n entries through the editor, then exit).
const CHILD_JOB: &str = "LT_FAULTS_CHILD_JOB";

/// Two valid texts of 256 KiB each that differ everywhere, so a mix of them is seen.
fn texts() -> [String; 2] {
    let text = |c: char| {
        let entries: Vec<String> = (0..1024)
            .map(|i| format!("\"/{c}/{i}/{}\"", c.to_string().repeat(240)))
            .collect();
        format!(
            "{{\n  \"filesystem\": {{\n    \"allowWrite\": [{}]\n  }}\n}}\n",
            entries.join(", ")
        )
    };
    [text('a'), text('b')]
}

/// Not a test by itself: the body of the child processes the tests below start.
#[test]
#[ignore = "run as a child process by the fault tests"]
fn child_writer() {
    let (Ok(target), Ok(job)) = (std::env::var(CHILD_TARGET), std::env::var(CHILD_JOB)) else {
        return;
    };
    let target = PathBuf::from(target);
    if job == "alternate" {
        let texts = texts();
        for i in 0.. {
            write_atomic(&target, &texts[i % 2]).expect("write");
            if i == 0 {
                println!("first save done");
            }
        }
    } else if let Some(rest) = job.strip_prefix("add:") {
        let (prefix, n) = rest.split_once(':').expect("add:<prefix>:<n>");
        let n: usize = n.parse().expect("n");
        for i in 0..n {
            let outcome = add(&format!("/{prefix}/{i}")).apply_to_file(&target);
            assert!(
                matches!(outcome, Ok(EditOutcome::Changed(_))),
                "{outcome:?}"
            );
        }
    }
}

fn child(target: &Path, job: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "--exact",
        "child_writer",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_TARGET, target)
    .env(CHILD_JOB, job);
    cmd
}

#[test]
fn a_writer_killed_at_any_moment_leaves_the_old_file_or_the_new_one() {
    const ROUNDS: u64 = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("sandbox.json");
    let texts = texts();
    let mut mid_write = 0;
    let mut seed = 0x9e37_79b9_u64;
    for round in 0..ROUNDS {
        let mut writer = child(&target, "alternate")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the writer");
        // Wait for its first complete save, then kill it a moment later. The pipe is read
        // on a thread and waited for with a timeout: a writer that hangs without saving
        // fails this round instead of blocking the read forever.
        let out = writer.stdout.take().expect("stdout");
        let (saved_tx, saved_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let mut out = out;
            let mut seen = String::new();
            let mut buf = [0u8; 256];
            // To the end of the pipe (the kill), so the writer never writes to a closed
            // one; the first save is reported once, an early end by dropping the sender.
            loop {
                let n = match out.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let said = seen.contains("first save done");
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
                if !said && seen.contains("first save done") {
                    let _ = saved_tx.send(());
                }
            }
        });
        let saved = saved_rx.recv_timeout(Duration::from_secs(20));
        if saved.is_err() {
            let _ = writer.kill();
            let _ = writer.wait();
        }
        assert!(
            saved.is_ok(),
            "round {round}: the writer never saved ({saved:?}: timed out, or its output ended)"
        );
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(seed % 30_000));
        writer.kill().expect("SIGKILL");
        let _ = writer.wait();
        // The kill closed the pipe: the reader is at its end.
        reader.join().expect("the pipe reader");

        let on_disk = std::fs::read_to_string(&target).expect("the target is still there");
        assert!(
            on_disk == texts[0] || on_disk == texts[1],
            "round {round}: the file is a mix of two saves ({} bytes)",
            on_disk.len()
        );
        // A kill between create and rename leaves the writer's temp file (never the
        // target); remove it for the next round and count it.
        for name in names(dir.path()) {
            if name != "sandbox.json" {
                assert!(
                    name.starts_with(".sandbox.json.") && name.ends_with(".tmp"),
                    "{name}"
                );
                std::fs::remove_file(dir.path().join(&name)).expect("rm temp");
                mid_write += 1;
            }
        }
    }
    eprintln!("{ROUNDS} writers killed: {mid_write} of them mid-save (temp file written, not renamed); the target was whole every time");
}

#[test]
fn threads_editing_one_file_at_once_lose_no_entry() {
    const THREADS: usize = 8;
    const EACH: usize = 25;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(".opencode/sandbox.json");
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let file = &file;
            s.spawn(move || {
                for i in 0..EACH {
                    let outcome = add(&format!("/t{t}/{i}")).apply_to_file(file);
                    assert!(
                        matches!(outcome, Ok(EditOutcome::Changed(_))),
                        "{outcome:?}"
                    );
                }
            });
        }
    });
    let parsed =
        parse_overrides(&std::fs::read_to_string(&file).expect("read"), &file).expect("parses");
    let list = parsed.string_list(&ALLOW_WRITE.key_path()).expect("list");
    assert_eq!(list.len(), THREADS * EACH, "entries were lost");
}

#[test]
fn processes_editing_one_file_at_once_lose_no_entry() {
    const PROCESSES: usize = 4;
    const EACH: usize = 40;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(".opencode/sandbox.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, ORIGINAL).expect("write");
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            child(&file, &format!("add:p{p}:{EACH}"))
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        let status = c.wait().expect("wait");
        assert!(status.success(), "a writer failed: {status}");
    }
    let parsed =
        parse_overrides(&std::fs::read_to_string(&file).expect("read"), &file).expect("parses");
    let list = parsed.string_list(&ALLOW_WRITE.key_path()).expect("list");
    let lost: Vec<String> = (0..PROCESSES)
        .flat_map(|p| (0..EACH).map(move |i| format!("/p{p}/{i}")))
        .filter(|e| !list.contains(e))
        .collect();
    assert!(lost.is_empty(), "{} entries lost: {lost:?}", lost.len());
    assert_eq!(list.len(), PROCESSES * EACH + 1);
    assert_eq!(names(file.parent().expect("parent")), ["sandbox.json"]);
}

/// What the editor asks a plugin-style writer to hold until it has tried the file once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// The file truncated and half written.
    Torn,
    /// The file whole.
    Whole,
}

/// Sets its flag when dropped (a thread told to stop, however the scope ends).
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_plugin_style_writer_racing_the_editor_never_gets_a_torn_file_written_over() {
    // The plugin rewrites sandbox.json in place (writeFileSync: truncate, then write),
    // without a lock. Its writes cannot be made safe from here, but the editor must never
    // take a torn read for the file: it refuses text that does not parse, and whatever it
    // writes parses and keeps the plugin's entry.
    const EDITS: usize = 200;
    // Every this many edits the writer holds the file torn until the editor has tried it
    // once, and as often whole: a torn read and a written edit are met for certain,
    // whatever the scheduler does (free-running, the writer keeps the file torn nearly
    // all the time).
    const FORCE_EVERY: usize = 10;
    // Bounds each handshake of a forced round.
    const HANDSHAKE: Duration = Duration::from_secs(30);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("sandbox.json");
    let plugin_text =
        "{\n  \"filesystem\": {\n    \"allowWrite\": [\n      \"/plugin\"\n    ]\n  }\n}\n";
    std::fs::write(&file, plugin_text).expect("write");
    let stop = std::sync::atomic::AtomicBool::new(false);
    // The editor asks the writer to hold a state; the writer says it holds it; the editor
    // says it has tried.
    let (hold_tx, hold_rx) = std::sync::mpsc::channel::<Hold>();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let (tried_tx, tried_rx) = std::sync::mpsc::channel::<()>();
    let (mut written, mut refused) = (0, 0);
    let (mut forced_torn, mut forced_whole) = (0, 0);
    std::thread::scope(|s| {
        let (stop, file) = (&stop, &file);
        s.spawn(move || {
            use std::io::Write;
            let (head, tail) = plugin_text.split_at(plugin_text.len() / 2);
            let mut asked = None;
            let hold_if = |state: Hold, asked: &mut Option<Hold>| {
                if asked.is_none() {
                    *asked = hold_rx.try_recv().ok();
                }
                if *asked == Some(state) {
                    *asked = None;
                    // An editor that is gone (it failed) is not waited for.
                    if held_tx.send(()).is_ok() {
                        let _ = tried_rx.recv_timeout(HANDSHAKE);
                    }
                }
            };
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut f = std::fs::File::create(file).expect("truncate");
                f.write_all(head.as_bytes()).expect("write");
                // The editor's rename may have put its own whole file at the path between
                // the create and this write: then the path is not torn, and a torn hold
                // waits for the next round (else the test blames the editor for a race of
                // its own).
                use std::os::unix::fs::MetadataExt;
                let ours = f.metadata().map(|m| m.ino()).ok();
                let at_path = std::fs::metadata(file).map(|m| m.ino()).ok();
                if ours.is_some() && ours == at_path {
                    hold_if(Hold::Torn, &mut asked);
                }
                std::thread::yield_now();
                f.write_all(tail.as_bytes()).expect("write");
                hold_if(Hold::Whole, &mut asked);
            }
        });
        // A failing edit stops the writer too (the scope waits for it), and drops the
        // editor's ends of the handshake.
        let _stop = StopOnDrop(stop);
        let (hold_tx, held_rx, tried_tx) = (hold_tx, held_rx, tried_tx);
        for i in 0..EDITS {
            let entry = format!("/app/{i}");
            let force = match i % FORCE_EVERY {
                0 => Some(Hold::Torn),
                n if n == FORCE_EVERY / 2 => Some(Hold::Whole),
                _ => None,
            };
            if let Some(state) = force {
                hold_tx.send(state).expect("the writer runs");
                held_rx
                    .recv_timeout(HANDSHAKE)
                    .unwrap_or_else(|_| panic!("the writer never held the file {state:?}"));
            }
            let result = add(&entry).apply_to_file(file);
            if force.is_some() {
                tried_tx.send(()).expect("the writer waits");
            }
            match result {
                Ok(EditOutcome::Changed(text)) => {
                    assert_ne!(
                        force,
                        Some(Hold::Torn),
                        "the editor wrote over a torn file: {text:?}"
                    );
                    let parsed =
                        parse_overrides(&text, file).expect("the editor wrote text that parses");
                    let list = parsed
                        .string_list(&ALLOW_WRITE.key_path())
                        .expect("allowWrite");
                    assert!(
                        list.iter().any(|e| e == "/plugin") && list.contains(&entry),
                        "edit {i} lost the plugin's entry or its own: {list:?}"
                    );
                    written += 1;
                    forced_whole += usize::from(force == Some(Hold::Whole));
                }
                Ok(EditOutcome::Unchanged) => panic!("{entry} was already there"),
                Err(PolicyError::Syntax { .. }) => {
                    assert_ne!(
                        force,
                        Some(Hold::Whole),
                        "the editor refused the whole file"
                    );
                    refused += 1;
                    forced_torn += usize::from(force == Some(Hold::Torn));
                }
                Err(e) => panic!("not a parse error: {e}"),
            }
        }
    });
    let last = std::fs::read_to_string(&file).expect("read");
    parse_overrides(&last, &file).expect("the file parses at the end");
    eprintln!("plugin-style writer racing the editor: {written} edits written ({forced_whole} on a whole file held for the editor), {refused} refused on a torn read, a parse error naming the file ({forced_torn} on a torn file held for it)");
}
