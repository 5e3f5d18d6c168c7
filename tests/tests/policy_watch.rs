//! The policy files are watched: a real landstrip write is held, a sandbox.json gains a
//! covering entry written from outside the app (as an editor or another program would),
//! and the held write completes without anyone answering. Real landstrip 0.19.2, real
//! sockets, real inotify; nothing is mocked.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use landstrip_tray_core::activity::{Decider, Outcome};
use landstrip_tray_core::decision::broker::{BrokerEvent, PendingPrompt, PromptId};
use landstrip_tray_core::policy::{self, PolicyChanged};
use landstrip_tray_tests::{finish, Landstrip, TestEnv, EVENT_TIMEOUT, PYTHON, WRITE};
use tokio::sync::broadcast;

/// The README's promise: a held request a policy file's change covers is answered within
/// a second of the change.
const PROMISED: Duration = Duration::from_secs(1);

/// What a loaded test machine may add to [`PROMISED`] (printed with each figure): the
/// bound tells a change acted on from one missed or waited on, not a fast machine from a
/// slow one.
const LOADED_MARGIN: Duration = Duration::from_secs(1);

/// How a policy file is changed from outside the app.
#[derive(Debug, Clone, Copy)]
enum Writer {
    /// `std::fs::write` of the complete new JSON (in place; creates it if missing).
    InPlace,
    /// Written to a temporary file beside it, then renamed over it (most editors).
    TempAndRename,
}

fn write_file(path: &Path, text: &str, how: Writer) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    match how {
        Writer::InPlace => std::fs::write(path, text).expect("write sandbox.json"),
        Writer::TempAndRename => {
            let temp = path.with_file_name(".sandbox.json.swp");
            std::fs::write(&temp, text).expect("write the temp file");
            std::fs::rename(&temp, path).expect("rename over sandbox.json");
        }
    }
}

fn allow_write(dir: &Path) -> String {
    serde_json::json!({"filesystem": {"allowWrite": [dir]}}).to_string()
}

/// A held write outside the project, from a real landstrip run.
struct Held {
    env: TestEnv,
    changes: broadcast::Receiver<PolicyChanged>,
    child: tokio::process::Child,
    prompt: PendingPrompt,
    target: PathBuf,
}

/// Serves a project (whose policy is `project_policy`, if any) and holds a write of
/// `outside/note.txt`.
async fn held_write(project_policy: Option<&str>) -> Held {
    let mut env = TestEnv::start().await;
    if let Some(text) = project_policy {
        env.write_project_policy(text);
    }
    let changes = env.service.subscribe_policy();
    let target = env.outside.join("note.txt");
    let child = env.launch(
        Landstrip::V0_19,
        None,
        &[PYTHON, "-c", WRITE, target.to_str().expect("utf-8")],
    );
    let prompt = env.next_prompt().await;
    Held {
        env,
        changes,
        child,
        prompt,
        target,
    }
}

/// The next policy change naming `file`, failing after [`EVENT_TIMEOUT`].
async fn change_of(changes: &mut broadcast::Receiver<PolicyChanged>, file: &Path) -> PolicyChanged {
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, changes.recv()).await {
            Ok(Ok(change)) if change.file == file => return change,
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => panic!("policy events: {e}"),
            Err(_) => panic!(
                "no PolicyChanged for {} within {EVENT_TIMEOUT:?}",
                file.display()
            ),
        }
    }
}

/// Waits for prompt `id` to be resolved; returns how and how long it took.
async fn resolution(env: &mut TestEnv, id: PromptId) -> (Outcome, Decider, Duration) {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, env.events.recv()).await {
            Ok(Ok(BrokerEvent::Resolved {
                id: got,
                outcome,
                by,
            })) if got == id => return (outcome, by, started.elapsed()),
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => panic!("broker events: {e}"),
            Err(_) => panic!("prompt {id:?} not resolved within {EVENT_TIMEOUT:?}"),
        }
    }
}

/// Writes a covering entry into `file` and checks that the held write completes, decided
/// by the policy, and that the change was announced.
async fn covered_by(mut held: Held, file: &Path, how: Writer, project: Option<&Path>) {
    write_file(file, &allow_write(&held.env.outside), how);
    let (outcome, by, took) = resolution(&mut held.env, held.prompt.id).await;
    eprintln!(
        "{how:?} {}: answered {took:?} after the write (promised {PROMISED:?}, bound with a margin of {LOADED_MARGIN:?})",
        file.display()
    );
    assert_eq!((outcome, by), (Outcome::Allow, Decider::Policy));
    assert!(
        took <= PROMISED + LOADED_MARGIN,
        "{how:?}: the change took {took:?} to be acted on (promised {PROMISED:?}, margin {LOADED_MARGIN:?})"
    );
    let done = finish(held.child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(
        std::fs::read_to_string(&held.target).expect("written"),
        "hello"
    );
    let recent = held.env.broker().activity().recent();
    let entry = recent
        .iter()
        .rev()
        .find(|e| Path::new(&e.subject) == held.target)
        .expect("the write is in the activity");
    assert_eq!((entry.outcome, entry.by), (Outcome::Allow, Decider::Policy));
    let change = change_of(&mut held.changes, file).await;
    assert_eq!(change.project.as_deref(), project);
    assert!(held.env.broker().pending().is_empty());
}

#[tokio::test]
async fn a_project_file_created_later_with_its_directory_answers_the_held_write() {
    let mut held = held_write(None).await;
    let file = policy::project_path(&held.env.project);
    assert!(!file.parent().expect("parent").exists());
    // A change that covers nothing else answers nothing: announced, still pending.
    let unrelated = held.env.root.path().join("elsewhere");
    write_file(&file, &allow_write(&unrelated), Writer::InPlace);
    change_of(&mut held.changes, &file).await;
    assert!(
        held.env
            .broker()
            .pending()
            .iter()
            .any(|p| p.id == held.prompt.id),
        "an unrelated entry answered the prompt"
    );
    let project = held.env.project.clone();
    covered_by(held, &file, Writer::InPlace, Some(&project)).await;
}

#[tokio::test]
async fn a_project_file_rewritten_in_place_answers_the_held_write() {
    let held = held_write(Some("{}")).await;
    let file = policy::project_path(&held.env.project);
    let project = held.env.project.clone();
    covered_by(held, &file, Writer::InPlace, Some(&project)).await;
}

#[tokio::test]
async fn a_project_file_replaced_by_a_rename_answers_the_held_write() {
    let held = held_write(Some("{}")).await;
    let file = policy::project_path(&held.env.project);
    let project = held.env.project.clone();
    covered_by(held, &file, Writer::TempAndRename, Some(&project)).await;
}

#[tokio::test]
async fn the_global_file_created_later_answers_the_held_write() {
    let held = held_write(None).await;
    let file = policy::global_path(&held.env.home);
    // Not even ~/.config exists yet: the watch must follow the directories' creation.
    assert!(!held.env.home.join(".config").exists());
    covered_by(held, &file, Writer::TempAndRename, None).await;
}
