//! Learning entries from answered prompts and saving several changes in one write, against
//! a real service: real TCP runs to the project's listener (landstrip's side spoken by the
//! test, with the plugin's session hello), prompts answered through the broker as the
//! dialog answers them, the activity log written by the core's own writer to a real file,
//! and real policy files in a temporary home. Nothing is mocked.

mod common;

use common::{bounded, write_query, Run};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::{now_ms, ActivityFilter, ActivityLog};
use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::decision::broker::{Broker, BrokerEvent, PendingPrompt};
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::policy::change::{BoolField, PolicyChange};
use landstrip_tray_core::policy::{parse_overrides, FsList};
use landstrip_tray_core::serving::discovery::{DiscoveryDir, ReadOutcome};
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::ops::{self, LearnRequest, PolicyFile};
use tokio::sync::broadcast;

const BOUND: Duration = Duration::from_secs(20);

struct Env {
    _root: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
    home: PathBuf,
    discovery: DiscoveryDir,
    service: Service,
    events: broadcast::Receiver<BrokerEvent>,
}

async fn start() -> Env {
    let root = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(root.path()).expect("canonical");
    let (project, home) = (base.join("project"), base.join("home"));
    for dir in [&project, &home] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let log = ActivityLog::open(&base.join("data/activity.jsonl"), 1 << 20).expect("open log");
    let broker = Broker::new(Arc::new(log));
    let events = broker.subscribe();
    let discovery = DiscoveryDir::new(base.join("runtime"));
    let service = Service::start(broker, home.clone(), discovery.clone(), None);
    service.add_project(&project, false).await.expect("serve");
    Env {
        _root: root,
        base,
        project,
        home,
        discovery,
        service,
        events,
    }
}

impl Env {
    fn port(&self) -> u16 {
        match self.discovery.read(&self.project) {
            ReadOutcome::Record(record) => record.port,
            other => panic!("no discovery record: {other:?}"),
        }
    }

    async fn next_prompt(&mut self) -> PendingPrompt {
        loop {
            match bounded(BOUND, "a prompt", self.events.recv()).await {
                Ok(BrokerEvent::Added(prompt)) => return prompt,
                Ok(_) => continue,
                Err(e) => panic!("broker events: {e}"),
            }
        }
    }

    /// One run of session `session` writing each of `paths`, every prompt answered with
    /// `answer` as a person would.
    async fn session(&mut self, session: &str, paths: &[PathBuf], answer: AnswerRequest) {
        let mut run = Run::connect(self.port(), BOUND).await;
        run.send(
            &serde_json::json!({"kind": "opencode-landstrip-session", "sessionID": session})
                .to_string(),
        )
        .await;
        for (i, path) in paths.iter().enumerate() {
            run.send(&write_query(&format!("{session}-{i}"), path))
                .await;
            let prompt = self.next_prompt().await;
            assert_eq!(prompt.session.as_deref(), Some(session));
            self.service
                .broker()
                .answer(prompt.id, &answer)
                .expect("answer the prompt");
            run.answer().await;
        }
    }

    fn project_file(&self) -> PathBuf {
        self.project.join(".opencode/sandbox.json")
    }
}

fn learn_request(session: Option<&str>, target: PolicyTarget) -> LearnRequest {
    LearnRequest {
        session: session.map(str::to_owned),
        since_ms: None,
        until_ms: None,
        target,
    }
}

fn proposed(review: &ops::LearnReview) -> Vec<(FsList, String, usize)> {
    review
        .learned
        .proposals
        .iter()
        .map(|p| (p.list, p.entry.clone(), p.covers))
        .collect()
}

/// Waits (bounded) until the clock has moved past `ms`, so later entries are later.
async fn past(ms: u64) {
    bounded(BOUND, "the clock to move on", async {
        while now_ms() <= ms {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_s_answers_become_widened_entries_saved_in_one_write() {
    let mut env = start().await;
    let build = env.base.join("outside/build");
    let ssh = env.home.join(".ssh/config");
    env.session(
        "ses_a",
        &[
            build.join("a.o"),
            build.join("b.o"),
            env.home.join(".cache/go/x"),
            ssh.clone(),
        ],
        AnswerRequest::once(),
    )
    .await;
    let a_done = ops::activity(&env.service, &ActivityFilter::default())
        .expect("activity")
        .iter()
        .map(|e| e.ts)
        .max()
        .expect("logged");
    past(a_done).await;
    let later = env.base.join("elsewhere/c.txt");
    env.session("ses_b", std::slice::from_ref(&later), AnswerRequest::once())
        .await;
    // A denied prompt teaches nothing.
    env.session(
        "ses_b",
        &[env.base.join("denied/d.txt")],
        AnswerRequest::deny(),
    )
    .await;

    let sessions = ops::sessions(&env.service, &env.project).expect("sessions");
    let ids: Vec<(&str, usize)> = sessions
        .iter()
        .map(|s| (s.id.as_str(), s.answered))
        .collect();
    assert_eq!(ids, [("ses_b", 2), ("ses_a", 4)], "newest first");
    assert!(sessions[1].first_ms <= sessions[1].last_ms);
    assert!(sessions[1].last_ms < sessions[0].first_ms);

    let review = ops::learn(
        &env.service,
        &env.project,
        &learn_request(Some("ses_a"), PolicyTarget::Project),
    )
    .expect("learn");
    let build_entry = build.display().to_string();
    assert_eq!(
        proposed(&review),
        [
            (FsList::AllowWrite, "~/.cache".to_owned(), 1),
            (FsList::AllowWrite, build_entry.clone(), 2),
        ]
    );
    assert_eq!(review.considered, 4);
    assert_eq!(review.file, env.project_file());
    assert!(
        review.shown.ends_with(".opencode/sandbox.json"),
        "{}",
        review.shown
    );
    assert!(
        review
            .learned
            .left_out
            .iter()
            .any(|l| l.path == ssh.display().to_string() && l.reason.starts_with("sensitive")),
        "{:?}",
        review.learned.left_out
    );
    assert!(review.current.iter().all(|l| l.entries.is_empty()));

    // A time range: only what came after session A.
    let range = ops::learn(
        &env.service,
        &env.project,
        &LearnRequest {
            since_ms: Some(a_done + 1),
            ..learn_request(None, PolicyTarget::Global)
        },
    )
    .expect("learn a range");
    assert_eq!(
        proposed(&range),
        [(
            FsList::AllowWrite,
            later.parent().expect("dir").display().to_string(),
            1
        )]
    );
    let until = ops::learn(
        &env.service,
        &env.project,
        &LearnRequest {
            until_ms: Some(a_done),
            ..learn_request(None, PolicyTarget::Project)
        },
    )
    .expect("learn up to a time");
    assert_eq!(proposed(&until), proposed(&review));

    // Saved in one step, the file holds exactly the proposals and validates.
    let file = review.policy_file(&env.project);
    let changed =
        ops::change_policy_all(&env.service, &file, &review.changes(), false).expect("save");
    assert!(changed.written);
    assert!(
        changed.description.contains("~/.cache"),
        "{}",
        changed.description
    );
    assert!(
        changed.description.contains(&build_entry),
        "{}",
        changed.description
    );
    let text = std::fs::read_to_string(env.project_file()).expect("written");
    let saved = parse_overrides(&text, &env.project_file()).expect("valid");
    assert_eq!(
        saved
            .filesystem
            .expect("filesystem")
            .list(FsList::AllowWrite),
        Some(&["~/.cache".to_owned(), build_entry][..])
    );
    // Learned again: nothing left to propose, and the review shows the file's lists.
    let again = ops::learn(
        &env.service,
        &env.project,
        &learn_request(Some("ses_a"), PolicyTarget::Project),
    )
    .expect("learn again");
    assert!(again.learned.proposals.is_empty(), "{:?}", again.learned);
    let write_list = again
        .current
        .iter()
        .find(|l| l.list == FsList::AllowWrite)
        .expect("allowWrite");
    assert_eq!(write_list.entries.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_does_not_parse_refuses_learning() {
    let env = start().await;
    std::fs::create_dir_all(env.project.join(".opencode")).expect("mkdir");
    std::fs::write(env.project_file(), "{\"filesystem\": ").expect("write");
    let err = ops::learn(
        &env.service,
        &env.project,
        &learn_request(None, PolicyTarget::Project),
    )
    .unwrap_err();
    assert!(err.to_string().contains("sandbox.json"), "{err}");
    let relative = ops::learn(
        &env.service,
        Path::new("project"),
        &learn_request(None, PolicyTarget::Project),
    )
    .unwrap_err();
    assert!(relative.to_string().contains("absolute"), "{relative}");
}

fn add(list: &str, entry: &str) -> PolicyChange {
    PolicyChange::Add {
        list: list.parse().expect("a list"),
        entry: entry.to_owned(),
    }
}

/// How many times `file` was replaced (renamed into place) while `work` ran, as inotify
/// saw it. A marker file written afterwards tells when every earlier event has arrived.
async fn replacements(file: &Path, work: impl FnOnce()) -> usize {
    use notify::event::{ModifyKind, RenameMode};
    use notify::{EventKind, RecursiveMode, Watcher};
    let dir = file.parent().expect("dir").to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let _ = tx.send(event);
        }
    })
    .expect("watcher");
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .expect("watch");
    work();
    let marker = dir.join("marker");
    std::fs::write(&marker, "x").expect("marker");
    let mut count = 0;
    loop {
        let event = bounded(BOUND, "the marker's event", rx.recv())
            .await
            .expect("watcher alive");
        if event.paths.contains(&marker) {
            return count;
        }
        // A rename is reported as From, To and Both: the To names the file put in place.
        let into_place = event.kind == EventKind::Modify(ModifyKind::Name(RenameMode::To));
        if into_place && event.paths == [file.to_path_buf()] {
            count += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_changes_are_one_write_and_a_failing_one_writes_nothing() {
    let env = start().await;
    let file = env.project_file();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &file,
        "{\n  \"filesystem\": {\"allowWrite\": [\"keep\"]}\n}\n",
    )
    .expect("seed");
    let changes = [
        add("allowWrite", "out"),
        add("allowRead", "/opt/sdk"),
        PolicyChange::Set {
            field: BoolField::AllowNetwork,
            value: true,
        },
    ];
    let target = PolicyFile::Project(env.project.clone());
    // The counter can tell: three single changes are three replacements.
    let singles = replacements(&file, || {
        for change in &changes {
            ops::change_policy(&env.service, &target, change, false).expect("change");
        }
    })
    .await;
    assert_eq!(singles, 3);
    std::fs::write(
        &file,
        "{\n  \"filesystem\": {\"allowWrite\": [\"keep\"]}\n}\n",
    )
    .expect("reset");
    let mut changed = None;
    let batch = replacements(&file, || {
        changed =
            Some(ops::change_policy_all(&env.service, &target, &changes, false).expect("batch"));
    })
    .await;
    assert_eq!(batch, 1, "one write for the batch");
    let changed = changed.expect("changed");
    assert!(changed.written);
    assert_eq!(
        changed.description,
        "add \"out\" to filesystem.allowWrite; add \"/opt/sdk\" to filesystem.allowRead; \
         set network.allowNetwork to true"
    );
    let text = std::fs::read_to_string(&file).expect("read");
    let parsed = parse_overrides(&text, &file).expect("valid");
    let fs = parsed.filesystem.expect("filesystem");
    assert_eq!(
        fs.list(FsList::AllowWrite),
        Some(&["keep".to_owned(), "out".to_owned()][..])
    );
    assert_eq!(
        fs.list(FsList::AllowRead),
        Some(&["/opt/sdk".to_owned()][..])
    );
    assert_eq!(parsed.network.expect("network").allow_network, Some(true));

    // Applied again: nothing to write.
    let again = ops::change_policy_all(&env.service, &target, &changes, false).expect("again");
    assert!(!again.written);

    // A bad second change: the first is not written either, the bytes stay.
    let before = std::fs::read(&file).expect("read");
    let bad = [add("allowWrite", "new"), add("allowWrite", "two\nlines")];
    assert!(ops::change_policy_all(&env.service, &target, &bad, false).is_err());
    assert_eq!(std::fs::read(&file).expect("read"), before);
    // A file that does not parse: nothing written.
    std::fs::write(&file, "{\"enabled\": tru").expect("break");
    let err = ops::change_policy_all(&env.service, &target, &changes[..1], false).unwrap_err();
    assert!(err.to_string().contains("sandbox.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "{\"enabled\": tru"
    );
}
