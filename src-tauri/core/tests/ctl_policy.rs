//! `ctl policy`, `grants`, `revoke` and `activity` against a real service over the real
//! control socket: real Unix and TCP sockets, real policy files and a file-backed activity
//! log. Queries arrive over a real TCP connection to the project's listener. Nothing is
//! mocked; landstrip itself is stood in for by the connection's lines (its real binary is
//! used in the end-to-end suite, tests/tests/control.rs).

mod common;

use common::{write_query, Run};
use std::path::{Path, PathBuf};
use std::time::Duration;

use landstrip_tray_core::activity::{ActivityFilter, Decision};
use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_core::policy::change::{BoolField, PolicyChange};
use landstrip_tray_core::policy::parse_overrides;
use landstrip_tray_core::serving::discovery::ReadOutcome;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::ops::PolicyFile;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Bound on any single awaited event (not a sleep).
const BOUND: Duration = Duration::from_secs(20);

type Env = common::Served;

async fn start() -> Env {
    common::Setup {
        serve_project: true,
        serve_other: true,
        activity_file: true,
        ..Default::default()
    }
    .start()
    .await
}

impl Env {
    fn global_file(&self) -> PathBuf {
        self.home.join(".config/opencode/sandbox.json")
    }

    fn project_file(&self) -> PathBuf {
        self.project.join(".opencode/sandbox.json")
    }

    fn port(&self, project: &Path) -> u16 {
        match self.discovery.read(project) {
            ReadOutcome::Record(record) => record.port,
            other => panic!("no discovery record: {other:?}"),
        }
    }

    /// Sends a write of `path` from a run of `project`; the run, to read its answer.
    async fn write(&self, project: &Path, query_id: &str, path: &Path) -> Run {
        let mut run = Run::connect(self.port(project), BOUND).await;
        run.send(&write_query(query_id, path)).await;
        run
    }

    async fn change(&self, file: PolicyFile, change: PolicyChange) -> Reply {
        self.ok(Request::ChangePolicy {
            file,
            change,
            allow_broad: false,
        })
        .await
    }
}

async fn within<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, work)
        .await
        .unwrap_or_else(|_| panic!("not within {BOUND:?}"))
}

fn add(list: &str, entry: &str) -> PolicyChange {
    PolicyChange::Add {
        list: list.parse().expect("a list"),
        entry: entry.to_owned(),
    }
}

/// A reply's data as the wire carries it (and `ctl --json` prints it).
fn wire(data: &impl serde::Serialize) -> Value {
    serde_json::to_value(data).expect("JSON")
}

/// The effective list `name` of a policy view as (entry, source) pairs.
fn entries(view: &Value, name: &str) -> Vec<(String, String)> {
    let lists = view["effective"]["lists"]
        .as_array()
        .expect("effective lists");
    let list = lists
        .iter()
        .find(|l| l["list"] == name)
        .unwrap_or_else(|| panic!("no list {name} in {view}"));
    list["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["entry"].as_str().unwrap_or_default().to_owned(),
                e["source"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_show_reflects_all_three_layers_with_their_sources() {
    let env = start().await;
    std::fs::create_dir_all(env.global_file().parent().unwrap()).unwrap();
    std::fs::write(
        env.global_file(),
        r#"{"filesystem": {"allowRead": ["~/.cargo"]}, "network": {"allowNetwork": true}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(env.project_file().parent().unwrap()).unwrap();
    std::fs::write(
        env.project_file(),
        r#"{"filesystem": {"allowWrite": ["out", "/"]}}"#,
    )
    .unwrap();
    let Reply::Policy(view) = env
        .ok(Request::Policy {
            dir: env.project.clone(),
        })
        .await
    else {
        panic!("not a policy reply")
    };
    let view = wire(&view);
    assert_eq!(view["global"]["state"]["state"], "valid", "{view}");
    assert_eq!(view["projectFile"]["state"]["state"], "valid", "{view}");
    let read = entries(&view, "filesystem.allowRead");
    assert!(read.contains(&(".".into(), "default".into())), "{read:?}");
    assert!(
        read.contains(&("~/.cargo".into(), "global".into())),
        "{read:?}"
    );
    let write = entries(&view, "filesystem.allowWrite");
    assert!(
        write.contains(&("out".into(), "project".into())),
        "{write:?}"
    );
    let fields = view["effective"]["fields"].as_array().expect("fields");
    let network = fields
        .iter()
        .find(|f| f["field"] == "network.allowNetwork")
        .expect("allowNetwork");
    assert_eq!(
        (&network["value"], &network["source"]),
        (&json!(true), &json!("global"))
    );
    // "/" is flagged broad; "out" is covered by the default "." and flagged redundant.
    let lists = view["effective"]["lists"].as_array().unwrap();
    let allow_write = lists
        .iter()
        .find(|l| l["list"] == "filesystem.allowWrite")
        .unwrap();
    let slash = allow_write["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entry"] == "/")
        .expect("the / entry");
    assert!(!slash["broad"].is_null(), "{slash}");
    let out = allow_write["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entry"] == "out")
        .expect("the out entry");
    assert_eq!(out["redundantWith"], ".", "the default . covers it: {out}");

    // A relative directory is refused (the server has another cwd).
    let message = env.error(Request::Policy { dir: "rel".into() }).await;
    assert!(message.contains("absolute"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_remove_and_set_edit_the_file_minimally() {
    let env = start().await;
    let file = env.project_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = "{\n  \"filesystem\": {\n    \"allowWrite\": [\"a\"]\n  },\n  \"network\":   {\"allowNetwork\": false}\n}\n";
    std::fs::write(&file, original).unwrap();
    let project = PolicyFile::Project(env.project.clone());

    let Reply::PolicyChanged(changed) = env.change(project.clone(), add("allowWrite", "out")).await
    else {
        panic!("not a change reply")
    };
    assert!(changed.written, "{changed:?}");
    assert_eq!(changed.file, file);
    let text = std::fs::read_to_string(&file).unwrap();
    let overrides = parse_overrides(&text, &file).expect("still valid");
    let allow_write = overrides
        .filesystem
        .as_ref()
        .and_then(|f| f.allow_write.clone());
    assert_eq!(allow_write, Some(vec!["a".to_owned(), "out".to_owned()]));
    // Minimal: everything but the array kept its bytes.
    assert!(
        text.starts_with("{\n  \"filesystem\": {\n    \"allowWrite\": [\"a\""),
        "{text}"
    );
    assert!(
        text.ends_with("  },\n  \"network\":   {\"allowNetwork\": false}\n}\n"),
        "{text}"
    );

    // Adding it again writes nothing.
    let Reply::PolicyChanged(again) = env.change(project.clone(), add("allowWrite", "out")).await
    else {
        panic!("not a change reply")
    };
    assert!(!again.written, "{again:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    let Reply::PolicyChanged(set) = env
        .change(
            project.clone(),
            PolicyChange::Set {
                field: BoolField::AllowNetwork,
                value: true,
            },
        )
        .await
    else {
        panic!("not a change reply")
    };
    assert!(set.written);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("\"network\":   {\"allowNetwork\": true}"),
        "{text}"
    );
    parse_overrides(&text, &file).expect("still valid");

    let Reply::PolicyChanged(removed) = env
        .change(
            project.clone(),
            PolicyChange::Remove {
                list: "allowWrite".parse().unwrap(),
                entry: "a".into(),
            },
        )
        .await
    else {
        panic!("not a change reply")
    };
    assert!(removed.written);
    let text = std::fs::read_to_string(&file).unwrap();
    let overrides = parse_overrides(&text, &file).expect("still valid");
    assert_eq!(
        overrides.filesystem.and_then(|f| f.allow_write),
        Some(vec!["out".to_owned()])
    );

    // The global file does not exist yet: created by the first change saved into it.
    assert!(!env.global_file().exists());
    env.change(
        PolicyFile::Global,
        PolicyChange::Set {
            field: BoolField::Enabled,
            value: false,
        },
    )
    .await;
    let global = std::fs::read_to_string(env.global_file()).expect("the global file");
    let overrides = parse_overrides(&global, &env.global_file()).expect("valid");
    assert_eq!(overrides.enabled, Some(false));
    // And the project file was not touched by it.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_does_not_parse_is_never_written_and_unknown_lists_are_refused() {
    let env = start().await;
    let file = env.project_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let malformed = b"{\"filesystem\": {\"allowWrite\": [\"a\",]\n";
    std::fs::write(&file, malformed).unwrap();
    let message = env
        .error(Request::ChangePolicy {
            file: PolicyFile::Project(env.project.clone()),
            change: add("allowWrite", "out"),
            allow_broad: false,
        })
        .await;
    assert!(message.contains("nothing was written"), "{message}");
    assert!(
        message.contains("sandbox.json:1:"),
        "line and column: {message}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), malformed);

    // The view shows it invalid with its line and column.
    let Reply::Policy(view) = env
        .ok(Request::Policy {
            dir: env.project.clone(),
        })
        .await
    else {
        panic!("not a policy reply")
    };
    let view = wire(&view);
    let state = &view["projectFile"]["state"];
    assert_eq!(state["state"], "invalid", "{view}");
    assert!(
        state["line"].is_u64() && state["column"].is_u64(),
        "{state}"
    );
    assert!(view["effective"].is_null(), "{view}");

    // An unknown list over the wire: an error naming the known ones.
    let mut stream = within(UnixStream::connect(&env.socket))
        .await
        .expect("connect");
    let line = json!({"request": "change_policy", "file": "global", "op": "add",
        "list": "allowEverything", "entry": "x"});
    stream
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut reply = String::new();
    within(reader.read_line(&mut reply)).await.unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["result"], "error", "{reply}");
    let message = reply["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("allowEverything") && message.contains("allowWrite"),
        "{message}"
    );
    assert!(!env.global_file().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_add_answers_the_held_write_it_covers() {
    let mut env = start().await;
    let target = env.outside.join("held/a.txt");
    let mut run = env.write(&env.project.clone(), "1", &target).await;
    let prompt = env.next_prompt().await;
    let entry = env.outside.join("held").display().to_string();
    let Reply::PolicyChanged(changed) = env
        .change(
            PolicyFile::Project(env.project.clone()),
            add("allowWrite", &entry),
        )
        .await
    else {
        panic!("not a change reply")
    };
    assert_eq!(changed.also_answered, vec![prompt.id], "{changed:?}");
    assert_eq!(
        run.answer().await,
        json!({"query_id": "1", "action": "allow"})
    );
    assert!(env.service.broker().pending().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_are_listed_and_a_revoked_one_asks_again() {
    let mut env = start().await;
    let target = env.outside.join("g.txt");
    let mut run = env.write(&env.project.clone(), "1", &target).await;
    let prompt = env.next_prompt().await;
    let Reply::Answered(answered) = env
        .ok(Request::Answer {
            id: prompt.id,
            answer: AnswerRequest::session(),
        })
        .await
    else {
        panic!("not an answer reply")
    };
    let grant = answered.grant.expect("a session grant");
    assert_eq!(run.answer().await["action"], "allow");

    let Reply::Grants(grants) = env.ok(Request::Grants).await else {
        panic!("not a grants reply")
    };
    let grants = wire(&grants);
    let list = grants.as_array().expect("a list");
    assert_eq!(list.len(), 1, "{grants}");
    assert_eq!(list[0]["id"], grant);
    assert_eq!(list[0]["key"]["project"], env.project.display().to_string());
    assert_eq!(list[0]["scope"]["operation"], "write");

    // Covered while the grant lives: answered with no prompt.
    let mut covered = env.write(&env.project.clone(), "2", &target).await;
    assert_eq!(covered.answer().await["action"], "allow");
    assert!(env.service.broker().pending().is_empty());

    let Reply::Revoked(id) = env.ok(Request::Revoke { id: grant }).await else {
        panic!("not a revoke reply")
    };
    assert_eq!(id, grant);
    let Reply::Grants(grants) = env.ok(Request::Grants).await else {
        panic!("not a grants reply")
    };
    let grants = wire(&grants);
    assert_eq!(grants, json!([]));
    let _asks = env.write(&env.project.clone(), "3", &target).await;
    let again = env.next_prompt().await;
    assert_eq!(again.project, env.project);

    let message = env.error(Request::Revoke { id: grant }).await;
    assert!(message.contains(&grant.to_string()), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_is_read_from_the_log_file_and_filtered() {
    let mut env = start().await;
    // Allowed once and denied in the project, denied in the other project.
    let mut answers = Vec::new();
    for (project, id, name, answer) in [
        (
            env.project.clone(),
            "1",
            "allowed.txt",
            AnswerRequest::once(),
        ),
        (
            env.project.clone(),
            "2",
            "denied.txt",
            AnswerRequest::deny(),
        ),
        (
            env.other.clone(),
            "3",
            "elsewhere.txt",
            AnswerRequest::deny(),
        ),
    ] {
        let mut run = env.write(&project, id, &env.outside.join(name)).await;
        let prompt = env.next_prompt().await;
        env.ok(Request::Answer {
            id: prompt.id,
            answer,
        })
        .await;
        answers.push(run.answer().await);
    }
    let activity = |filter: ActivityFilter| Request::Activity { filter };
    let subjects = |reply: Reply| -> Vec<String> {
        let Reply::Activity(entries) = reply else {
            panic!("not an activity reply")
        };
        let entries = wire(&entries);
        entries
            .as_array()
            .expect("a list")
            .iter()
            .map(|e| e["subject"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let name = |n: &str| env.outside.join(n).display().to_string();

    let all = subjects(env.ok(activity(ActivityFilter::default())).await);
    assert_eq!(
        all,
        [
            name("allowed.txt"),
            name("denied.txt"),
            name("elsewhere.txt")
        ]
    );
    // It came from the file: the log on disk holds each of them.
    let on_disk = std::fs::read_to_string(&env.activity).expect("the activity log");
    assert!(on_disk.contains(&name("elsewhere.txt")), "{on_disk}");

    let denied = subjects(
        env.ok(activity(ActivityFilter {
            decision: Some(Decision::Deny),
            ..ActivityFilter::default()
        }))
        .await,
    );
    assert_eq!(denied, [name("denied.txt"), name("elsewhere.txt")]);
    let project = subjects(
        env.ok(activity(ActivityFilter {
            project: Some(env.project.clone()),
            ..ActivityFilter::default()
        }))
        .await,
    );
    assert_eq!(project, [name("allowed.txt"), name("denied.txt")]);
    let grep = subjects(
        env.ok(activity(ActivityFilter {
            grep: Some("ELSEWHERE".into()),
            ..ActivityFilter::default()
        }))
        .await,
    );
    assert_eq!(grep, [name("elsewhere.txt")]);
    let limit = subjects(
        env.ok(activity(ActivityFilter {
            limit: Some(1),
            ..ActivityFilter::default()
        }))
        .await,
    );
    assert_eq!(limit, [name("elsewhere.txt")]);
    let message = env
        .error(activity(ActivityFilter {
            project: Some("rel".into()),
            ..ActivityFilter::default()
        }))
        .await;
    assert!(message.contains("absolute"), "{message}");
}

/// The (hits, lastHitMs) of `entry` in the effective list `name` of a policy view.
fn hits_of(view: &Value, name: &str, entry: &str) -> (Option<u64>, Option<u64>) {
    let lists = view["effective"]["lists"]
        .as_array()
        .expect("effective lists");
    let found = lists
        .iter()
        .filter(|l| l["list"] == name)
        .flat_map(|l| l["entries"].as_array().into_iter().flatten())
        .find(|e| e["entry"] == entry)
        .unwrap_or_else(|| panic!("no {entry} in {name} of {view}"));
    (found["hits"].as_u64(), found["lastHitMs"].as_u64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_show_counts_the_logged_requests_each_entry_answered() {
    let env = start().await;
    std::fs::create_dir_all(env.global_file().parent().unwrap()).unwrap();
    std::fs::write(
        env.global_file(),
        json!({"filesystem": {"allowWrite": [env.outside]}}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(env.project.join("out")).unwrap();
    std::fs::create_dir_all(env.project_file().parent().unwrap()).unwrap();
    std::fs::write(
        env.project_file(),
        r#"{"filesystem": {"allowWrite": ["out", "/never/used"]}}"#,
    )
    .unwrap();
    let before = landstrip_tray_core::activity::now_ms();
    // Each write is allowed by the policy without a prompt.
    for (project, id, path) in [
        (&env.project, "1", env.outside.join("a")),
        (&env.project, "2", env.outside.join("b")),
        (&env.project, "3", env.project.join("out/x")),
        (&env.project, "4", env.project.join("y")),
        // Another project's request is not this project's hit.
        (&env.other, "5", env.outside.join("c")),
    ] {
        let mut run = env.write(project, id, &path).await;
        let answer = run.answer().await;
        assert_eq!(answer["action"], "allow", "{path:?}: {answer}");
    }
    // Each record is handed to the log just after its answer goes out: waited for.
    let recorded = || {
        let recent = env.service.broker().activity().recent();
        recent.iter().filter(|e| e.ts >= before).count()
    };
    within(async {
        while recorded() < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let Reply::Policy(view) = env
        .ok(Request::Policy {
            dir: env.project.clone(),
        })
        .await
    else {
        panic!("not a policy reply")
    };
    let view = wire(&view);
    let outside = env.outside.display().to_string();
    let write = "filesystem.allowWrite";
    let (count, last) = hits_of(&view, write, &outside);
    assert_eq!(count, Some(2), "{view}");
    assert!(
        last.is_some_and(|t| t >= before),
        "{last:?} before {before}"
    );
    // The most specific entry gets the hit: out/x is out's, y is the project's (".").
    assert_eq!(hits_of(&view, write, "out").0, Some(1), "{view}");
    assert_eq!(hits_of(&view, write, ".").0, Some(1), "{view}");
    assert_eq!(hits_of(&view, write, "/never/used"), (Some(0), None));
    // Network lists are not counted.
    let net = view["effective"]["lists"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| {
            !l["list"]
                .as_str()
                .unwrap_or_default()
                .starts_with("filesystem")
        })
        .flat_map(|l| l["entries"].as_array().into_iter().flatten())
        .find(|e| !e["hits"].is_null());
    assert!(net.is_none(), "{net:?}");
}
