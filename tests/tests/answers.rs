//! The answers beyond once/session/project/global, through `ctl` against the real app
//! binary (under the test's X display) with real landstrip 0.19.2 runs: session grants
//! limited in time, to one run or to one program; "never" (a deny entry the real
//! opencode-landstrip 0.19.1 accepts); and deny for the session. Nothing is mocked.

use std::path::Path;
use std::time::Duration;

use landstrip_tray_tests::plugin::PluginInvocation;
use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{
    finish, launch_landstrip_with_policy, Landstrip, PYTHON, READ, SH_WRITE, WRITE,
};
use serde_json::Value;
use tokio::process::Child;

/// How long the time-limited grant lasts (`ctl answer … --for`): long enough for what the
/// test checks while it holds (a few `ctl` calls and a landstrip run) on a loaded machine;
/// the time those take is printed and checked against it.
const GRANT_SECS: u64 = 15;

/// What a loaded machine may add to the grant's end before the app is seen to drop it.
const LAPSE_MARGIN: Duration = Duration::from_secs(10);

/// The next held request, through `ctl pending --wait --json`: its id and its item.
async fn next_held(world: &AppWorld) -> (String, Value) {
    let waited = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: Value = serde_json::from_str(&waited)
        .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {waited:?}"));
    let item = items[0].clone();
    let id = item["id"].as_u64().expect("a prompt id").to_string();
    (id, item)
}

/// Polls `ctl grants --json` (every 100 ms, at most `within`) until `done` holds.
async fn grants_until(
    world: &AppWorld,
    within: Duration,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let list = world.grants().await;
        if done(&list) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {within:?}: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn sh_write(world: &AppWorld, port: u16, target: &Path) -> Child {
    world.launch(
        port,
        None,
        &["/bin/sh", "-c", SH_WRITE, "sh", path_str(target)],
    )
}

async fn started(world: &AppWorld) -> (RunningApp, u16) {
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(world, &world.project).await;
    (app, port)
}

async fn assert_nothing_pending(world: &AppWorld) {
    assert_eq!(world.ctl_ok(&["pending"]).await, "No requests waiting.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_for_a_duration_answers_at_once_and_lapses() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;
    let out = world.outside.join("out");
    std::fs::create_dir(&out).expect("mkdir");

    let child = world.write(port, &out.join("a.txt"));
    let (id, _) = next_held(&world).await;
    let grant = format!("{GRANT_SECS}s");
    // Before the answer: the grant starts after this, so it cannot end before this + its
    // time.
    let asked_at = tokio::time::Instant::now();
    let answered = world
        .ctl_ok(&["answer", &id, "session", "--for", &grant])
        .await;
    let granted_at = tokio::time::Instant::now();
    let lasts = Duration::from_secs(GRANT_SECS);
    assert!(
        answered.starts_with(&format!("allowed request {id}")),
        "{answered}"
    );
    assert_eq!(finish(child).await.stdout.trim(), "ok");

    let listed = world.grants().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["for"], grant.as_str(), "{listed:?}");
    assert!(
        listed[0]["remaining_ms"]
            .as_u64()
            .is_some_and(|ms| ms <= GRANT_SECS * 1000),
        "{listed:?}"
    );
    let table = world.ctl_ok(&["grants"]).await;
    assert!(table.contains(&format!("left of {grant}")), "{table}");

    // The next run's write under the same scope: no prompt.
    let done = finish(world.write(port, &out.join("b.txt"))).await;
    let used = granted_at.elapsed();
    eprintln!("the checks under the {grant} grant took {used:?}");
    assert!(
        used < lasts,
        "the checks under the grant took {used:?}, past its {grant}: too loaded a machine for this test's grant"
    );
    assert_eq!(done.stdout.trim(), "ok", "{done:?}\n{}", app.log());
    assert_nothing_pending(&world).await;

    // Lapsed: it leaves the list, and the next write asks again.
    let left =
        (granted_at + lasts + LAPSE_MARGIN).saturating_duration_since(tokio::time::Instant::now());
    grants_until(&world, left, "the grant lapsing", |l| l.is_empty()).await;
    let lapsed = asked_at.elapsed();
    eprintln!(
        "the {grant} grant left the list {lapsed:?} after it was asked for (bound: margin {LAPSE_MARGIN:?})"
    );
    assert!(lapsed >= lasts, "the {grant} grant lapsed after {lapsed:?}");
    let child = world.write(port, &out.join("c.txt"));
    let (id, item) = next_held(&world).await;
    assert_eq!(item["path"], path_str(&out.join("c.txt")));
    world.ctl_ok(&["answer", &id, "deny"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_for_the_run_covers_that_run_and_not_the_next() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;
    let out = world.outside.join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let (a, b, c) = (out.join("a"), out.join("b"), out.join("c"));

    let child = world.write_each(port, "ses_run", &[&a, &b]);
    let (id, _) = next_held(&world).await;
    world
        .ctl_ok(&["answer", &id, "session", "--for", "run"])
        .await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout, "ok\nok\n",
        "the run's second write asked: {done:?}"
    );
    // The run ended: its grant with it.
    grants_until(
        &world,
        Duration::from_secs(10),
        "the run's grant ending",
        |l| l.is_empty(),
    )
    .await;

    // The same session's next run asks again.
    let child = world.write_each(port, "ses_run", &[&c]);
    let (id, item) = next_held(&world).await;
    assert_eq!(item["path"], path_str(&c));
    world.ctl_ok(&["answer", &id, "deny"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_for_one_program_does_not_cover_another_under_the_same_folder() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;
    let out = world.outside.join("out");
    std::fs::create_dir(&out).expect("mkdir");

    let child = world.write(port, &out.join("py1"));
    let (id, item) = next_held(&world).await;
    let python = item["exe"]
        .as_str()
        .expect("landstrip names the program")
        .to_owned();
    world
        .ctl_ok(&["answer", &id, "session", "--program", "--for", "1h"])
        .await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    let listed = world.grants().await;
    assert_eq!(listed[0]["program"], python.as_str(), "{listed:?}");
    let table = world.ctl_ok(&["grants"]).await;
    assert!(table.contains(&format!("only {python}")), "{table}");

    // Python again, another run: no prompt.
    let done = finish(world.write(port, &out.join("py2"))).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    // The shell, same folder: asked, and denied.
    let child = sh_write(&world, port, &out.join("sh"));
    let (id, item) = next_held(&world).await;
    assert_ne!(item["exe"], python.as_str(), "{item}");
    assert_eq!(item["path"], path_str(&out.join("sh")));
    world.ctl_ok(&["answer", &id, "deny"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
    assert_eq!(app.terminate().await, Some(0));
}

/// "never" for a write and for a read: the entry lands in denyWrite / denyRead of the
/// project's file, the real plugin builds its policy from that file (so accepts it) with the
/// entry in, the held call fails with EACCES, and a later run's same request is denied
/// without a prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_writes_a_deny_entry_and_later_requests_are_denied_without_asking() {
    let world = AppWorld::new();
    // Reads of the home folder ask (the bundled /home does not cover this home).
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
    let docs = world.home.join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(docs.join("secret.txt"), "top secret").expect("write");
    std::fs::write(docs.join("other.txt"), "other").expect("write");
    let (mut app, port) = started(&world).await;
    let target = world.outside.join("never.txt");

    let child = world.write(port, &target);
    let (id, _) = next_held(&world).await;
    let answered = world.ctl_ok(&["answer", &id, "never"]).await;
    assert!(
        answered.starts_with(&format!(
            "denied request {id} and added {:?}",
            path_str(&target)
        )) && answered.contains(path_str(&world.project_policy())),
        "{answered}"
    );
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!target.exists());

    let secret = docs.join("secret.txt");
    let child = world.launch(port, None, &[PYTHON, "-c", READ, path_str(&secret)]);
    let (id, item) = next_held(&world).await;
    assert_eq!(item["operation"], "read", "{item}");
    world.ctl_ok(&["answer", &id, "never"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");

    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(world.project_policy()).expect("the project file"),
    )
    .expect("JSON");
    assert_eq!(
        file["filesystem"]["denyWrite"],
        serde_json::json!([path_str(&target)])
    );
    assert_eq!(
        file["filesystem"]["denyRead"],
        serde_json::json!(["~", "~/docs/secret.txt"])
    );

    // The real plugin reads the file (it rejects a file it does not accept) and its
    // landstrip policy carries both entries.
    let scratch = world.base.join("scratch");
    std::fs::create_dir(&scratch).expect("mkdir");
    let policy = PluginInvocation::new(&world.home, &world.project, &scratch)
        .policy_file()
        .unwrap_or_else(|e| panic!("{e}"));
    let built: Value =
        serde_json::from_slice(&std::fs::read(&policy).expect("policy")).expect("JSON");
    let has = |list: &str, entry: &Path| {
        built["filesystem"][list]
            .as_array()
            .is_some_and(|l| l.iter().any(|e| e == path_str(entry)))
    };
    assert!(has("denyWrite", &target), "{built}");
    assert!(has("denyRead", &secret), "{built}");

    // Later runs with that policy: denied by the app without a prompt.
    for (program, path) in [(WRITE, &target), (READ, &secret)] {
        let child = launch_landstrip_with_policy(
            Landstrip::V0_19,
            &policy,
            &world.project,
            &world.home,
            port,
            None,
            &[PYTHON, "-c", program, path_str(path)],
        );
        let done = finish(child).await;
        assert_eq!(done.stdout.trim(), "EACCES", "{done:?}\n{}", app.log());
    }
    assert_nothing_pending(&world).await;
    world
        .activity_entry("the later read denied by the never entry", |e| {
            e["by"] == "hard_denial" && e["subject"] == path_str(&secret)
        })
        .await;
    // Another file under the same home boundary still asks.
    let other = docs.join("other.txt");
    let child = world.launch(port, None, &[PYTHON, "-c", READ, path_str(&other)]);
    let (id, _) = next_held(&world).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "other");
    assert_eq!(app.terminate().await, Some(0));
}

/// A project or global answer to a real read lands in `allowRead` of that file, never in
/// `allowWrite`: the held read goes through, and a later run built from the file reads
/// without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_or_global_answer_to_a_read_lands_in_allow_read() {
    let world = AppWorld::new();
    // Reads of the home folder ask (the bundled /home does not cover this home).
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
    let (mut app, port) = started(&world).await;
    for (choice, file) in [
        ("project", world.project_policy()),
        ("global", world.global_policy()),
    ] {
        let docs = world.home.join(format!("docs-{choice}"));
        std::fs::create_dir(&docs).expect("mkdir");
        let note = docs.join("note.txt");
        std::fs::write(&note, format!("read by {choice}")).expect("write");
        let child = world.launch(port, None, &[PYTHON, "-c", READ, path_str(&note)]);
        let (id, item) = next_held(&world).await;
        assert_eq!(item["operation"], "read", "{item}");
        world.ctl_ok(&["answer", &id, choice]).await;
        assert_eq!(
            finish(child).await.stdout.trim(),
            format!("read by {choice}")
        );

        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("file")).expect("JSON");
        let entry = format!("~/docs-{choice}");
        assert!(
            json["filesystem"]["allowRead"]
                .as_array()
                .is_some_and(|l| l.iter().any(|e| e == entry.as_str())),
            "{choice}: {json}"
        );
        assert!(
            json["filesystem"].get("allowWrite").is_none(),
            "{choice}: {json}"
        );
        // A later run, its policy built from the files now: read without asking.
        let child = world.launch(port, None, &[PYTHON, "-c", READ, path_str(&note)]);
        assert_eq!(
            finish(child).await.stdout.trim(),
            format!("read by {choice}")
        );
        assert_nothing_pending(&world).await;
    }
    assert_eq!(app.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_for_the_session_denies_its_scope_without_asking_and_writes_nothing() {
    let world = AppWorld::new();
    let (mut app, port) = started(&world).await;
    let out = world.outside.join("out");
    std::fs::create_dir(&out).expect("mkdir");

    let child = world.write(port, &out.join("a"));
    let (id, _) = next_held(&world).await;
    let answered = world.ctl_ok(&["answer", &id, "deny", "--session"]).await;
    assert!(
        answered.starts_with(&format!(
            "denied request {id} and the same scope for the session"
        )),
        "{answered}"
    );
    assert_eq!(finish(child).await.stdout.trim(), "EACCES");
    let listed = world.grants().await;
    assert_eq!(listed[0]["effect"], "deny", "{listed:?}");

    let done = finish(world.write(port, &out.join("b"))).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_nothing_pending(&world).await;
    assert!(
        !world.project_policy().exists(),
        "a policy file was written"
    );
    assert!(!world.global_policy().exists(), "a policy file was written");

    // Revoked: the next one asks.
    let grant = listed[0]["id"].as_u64().expect("id").to_string();
    world.ctl_ok(&["revoke", &grant]).await;
    let child = world.write(port, &out.join("c"));
    let (id, _) = next_held(&world).await;
    world.ctl_ok(&["answer", &id, "once"]).await;
    assert_eq!(finish(child).await.stdout.trim(), "ok");
    assert_eq!(app.terminate().await, Some(0));
}
