//! The activity view's operations against a real service: a file-backed activity log,
//! real policy files in a temporary home and project. Entries are recorded through the
//! log's own writer, as the broker records them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use landstrip_tray_core::activity::{
    now_ms, ActivityEntry, ActivityFilter, ActivityLog, Decider, Outcome,
};
use landstrip_tray_core::decision::broker::Broker;
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::policy::change::{ListField, PolicyChange};
use landstrip_tray_core::policy::merge::Source;
use landstrip_tray_core::policy::FsList;
use landstrip_tray_core::serving::discovery::DiscoveryDir;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::ops::{self, PolicyFile};

struct Env {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    outside: PathBuf,
    service: Service,
}

fn start() -> Env {
    let root = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(root.path()).expect("canonical");
    let (home, project, outside) = (
        base.join("home"),
        base.join("project"),
        base.join("outside"),
    );
    for dir in [&home, &project, &outside] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let log = ActivityLog::open(&base.join("data/activity.jsonl"), 1 << 22).expect("log");
    let service = Service::start(
        Broker::new(Arc::new(log)),
        home.clone(),
        DiscoveryDir::new(base.join("runtime")),
        None,
    );
    Env {
        _root: root,
        home,
        project,
        outside,
        service,
    }
}

fn logged(
    project: &Path,
    operation: &str,
    subject: &Path,
    outcome: Outcome,
    by: Decider,
) -> ActivityEntry {
    ActivityEntry {
        ts: now_ms(),
        project: project.display().to_string(),
        session: Some("ses_1".into()),
        kind: "filesystem".into(),
        operation: operation.into(),
        subject: subject.display().to_string(),
        exe: Some("/usr/bin/python3.11".into()),
        pid: Some(7),
        outcome,
        by,
        detail: None,
        command: None,
        chain: Vec::new(),
    }
}

fn write(path: &Path, json: serde_json::Value) {
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(path, json.to_string()).expect("write");
}

#[tokio::test]
async fn the_entry_that_allowed_a_request_is_the_most_specific_covering_one_of_its_layer() {
    let env = start();
    let out = env.project.join("out");
    write(
        &PolicyFile::Project(env.project.clone()).path(&env.home),
        serde_json::json!({"filesystem": {"allowWrite": [".", "out"]}}),
    );
    write(
        &PolicyFile::Global.path(&env.home),
        serde_json::json!({"filesystem": {"allowWrite": [env.outside.display().to_string()]}}),
    );
    let by_policy = logged(
        &env.project,
        "write",
        &out.join("a.txt"),
        Outcome::Allow,
        Decider::Policy,
    );
    let found = ops::explain_activity(&env.service, &by_policy)
        .expect("explain")
        .expect("an entry allowed it");
    assert_eq!(found.entry, "out", "the most specific entry");
    assert_eq!(found.list, ListField::Filesystem(FsList::AllowWrite));
    assert_eq!(found.source, Source::Project);
    assert_eq!(found.file, Some(env.project.join(".opencode/sandbox.json")));

    let global = logged(
        &env.project,
        "write",
        &env.outside.join("b"),
        Outcome::Allow,
        Decider::Policy,
    );
    let found = ops::explain_activity(&env.service, &global)
        .expect("explain")
        .expect("global");
    assert_eq!(found.source, Source::Global);
    assert_eq!(
        found.file,
        Some(env.home.join(".config/opencode/sandbox.json"))
    );

    // A person's answer was not the policy's; a request nothing covers now has no entry.
    let asked = logged(
        &env.project,
        "write",
        &out.join("a.txt"),
        Outcome::Allow,
        Decider::User,
    );
    assert_eq!(
        ops::explain_activity(&env.service, &asked).expect("explain"),
        None
    );
    let gone = logged(
        &env.project,
        "write",
        Path::new("/nowhere/x"),
        Outcome::Allow,
        Decider::Policy,
    );
    assert_eq!(
        ops::explain_activity(&env.service, &gone).expect("explain"),
        None
    );
}

#[tokio::test]
async fn a_denied_request_becomes_the_previewed_entry_through_change_policy() {
    let env = start();
    let target = env.outside.join("deep/file.txt");
    let denied = logged(&env.project, "write", &target, Outcome::Deny, Decider::User);
    let preview =
        ops::activity_grant_preview(&env.service, &denied, PolicyTarget::Project).expect("preview");
    assert_eq!(preview.array, "filesystem.allowWrite");
    assert!(!preview.file_exists);
    let suggested = preview
        .options
        .iter()
        .find(|o| o.suggested)
        .expect("a suggested scope");
    assert_eq!(
        suggested.entry,
        env.outside.join("deep").display().to_string()
    );

    let change = PolicyChange::Add {
        list: ListField::Filesystem(FsList::AllowWrite),
        entry: suggested.entry.clone(),
    };
    let changed = ops::change_policy(
        &env.service,
        &PolicyFile::Project(env.project.clone()),
        &change,
        false,
    )
    .expect("saved");
    assert!(changed.written);
    let text = std::fs::read_to_string(&changed.file).expect("written");
    assert!(text.contains(&suggested.entry), "{text}");
    // The same request would now be answered by that entry.
    let again = logged(
        &env.project,
        "write",
        &target,
        Outcome::Allow,
        Decider::Policy,
    );
    let found = ops::explain_activity(&env.service, &again)
        .expect("explain")
        .expect("entry");
    assert_eq!(found.entry, suggested.entry);

    // Network rows and hard denials cannot become entries.
    let mut net = denied.clone();
    net.kind = "network".into();
    net.operation = "connect".into();
    assert!(ops::activity_grant_preview(&env.service, &net, PolicyTarget::Project).is_err());
    let hard = logged(
        &env.project,
        "write",
        &target,
        Outcome::Deny,
        Decider::HardDenial,
    );
    assert!(ops::activity_grant_preview(&env.service, &hard, PolicyTarget::Global).is_err());
}

#[tokio::test]
async fn a_page_is_the_newest_rows_first_with_the_total_that_matched() {
    let env = start();
    let log = env.service.broker().activity();
    let entries: Vec<ActivityEntry> = (0..1_000)
        .map(|i| {
            let mut e = logged(
                &env.project,
                "write",
                &env.outside.join(format!("f{i}")),
                Outcome::Deny,
                Decider::User,
            );
            e.ts = 1_000 + i;
            if i % 10 == 0 {
                e.subject = format!("/needle/{i}");
            }
            e
        })
        .collect();
    log.record_all(entries);
    let page = ops::activity_page(
        &env.service,
        &ActivityFilter {
            limit: Some(200),
            ..Default::default()
        },
    )
    .expect("page");
    assert_eq!(page.total, 1_000);
    assert_eq!(page.rows.len(), 200);
    assert_eq!(page.rows[0].entry.ts, 1_999, "newest first");
    assert!(page.rows.windows(2).all(|w| w[0].entry.ts > w[1].entry.ts));
    assert_eq!(page.rows[0].program, "python3.11 (pid 7)");
    assert!(page.rows[0].grantable);

    let narrowed = ops::activity_page(
        &env.service,
        &ActivityFilter {
            grep: Some("NEEDLE".into()),
            limit: Some(50),
            ..Default::default()
        },
    )
    .expect("page");
    assert_eq!(narrowed.total, 100);
    assert_eq!(narrowed.rows.len(), 50);
    assert!(narrowed
        .rows
        .iter()
        .all(|r| r.entry.subject.starts_with("/needle/")));
}

#[tokio::test]
#[ignore = "a timing, not a check"]
async fn time_a_page_over_ten_thousand() {
    let env = start();
    let log = env.service.broker().activity();
    let entries: Vec<ActivityEntry> = (0..10_000)
        .map(|i| {
            logged(
                &env.project,
                "write",
                &env.outside.join(format!("f{i}")),
                Outcome::Deny,
                Decider::User,
            )
        })
        .collect();
    log.record_all(entries);
    log.flush();
    for grep in [None, Some("needle".to_owned())] {
        let started = std::time::Instant::now();
        let page = ops::activity_page(
            &env.service,
            &ActivityFilter {
                grep: grep.clone(),
                limit: Some(200),
                ..Default::default()
            },
        )
        .expect("page");
        eprintln!(
            "{grep:?}: {} rows of {} in {:?}",
            page.rows.len(),
            page.total,
            started.elapsed()
        );
    }
}
