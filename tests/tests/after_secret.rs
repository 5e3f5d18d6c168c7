//! After a secret (README "After a secret", ARCHITECTURE "After a secret"), through the
//! real binary in `--headless` mode and real landstrip 0.19.2 runs: a run that was allowed
//! to read a credential file, then connects to a **loopback** port (a real listener of
//! this test) and writes outside the project, has both requests held and marked with the
//! read in `ctl pending --json`; `ctl answer` refuses what could send the secret on beyond
//! that run and address; "this address for this run" lets it through; the write keeps its
//! answers; `afterSecret deny` denies without a prompt; a run that read nothing is not
//! marked. Tests connect to loopback addresses only.

use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use landstrip_tray_tests::real_app::{path_str, AppWorld, RunningApp};
use landstrip_tray_tests::{finish, until, Finished, PYTHON};
use serde_json::Value;
use tokio::process::Child;

/// Runs its arguments as steps, in order: `read PATH`, `write PATH`, `connect HOST PORT`;
/// prints "STEP ok" or "STEP ERRNO-NAME" for each (flushed, so a held step shows where
/// the run is).
const STEPS: &str = r#"
import errno, socket, sys
args, steps = sys.argv[1:], []
while args:
    n = 3 if args[0] == "connect" else 2
    steps.append(args[:n]); args = args[n:]
for step in steps:
    try:
        if step[0] == "read":
            open(step[1]).read()
        elif step[0] == "write":
            with open(step[1], "w") as f:
                f.write("hello")
        else:
            socket.create_connection((step[1], int(step[2])), timeout=5).close()
        print(step[0], "ok", flush=True)
    except OSError as e:
        print(step[0], errno.errorcode.get(e.errno, repr(e)), flush=True)
"#;

/// A loopback listener of this test, counting the connections that reach it.
struct Loopback {
    port: String,
    accepted: Arc<AtomicUsize>,
}

impl Loopback {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("addr").port().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        // Ends with the test process (it blocks in accept); never connects anywhere.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stream.is_ok() {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Self { port, accepted }
    }

    fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// A world whose home's reads ask (as the bundled /home does for a real home), with a
/// (fake) AWS credentials file; the app `--headless` serving its project; its port.
async fn world_and_app() -> (AppWorld, RunningApp, u16) {
    let world = AppWorld::new();
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
    let aws = world.home.join(".aws");
    std::fs::create_dir(&aws).expect("mkdir .aws");
    std::fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\n",
    )
    .expect("write the fake credentials");
    std::fs::write(world.home.join("notes.txt"), "nothing secret").expect("write notes");
    let mut app = world.start_without_display(&[
        "--headless".as_ref(),
        "--project".as_ref(),
        world.project.as_os_str(),
    ]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    (world, app, port)
}

fn secret(world: &AppWorld) -> std::path::PathBuf {
    world.home.join(".aws/credentials")
}

/// A run of [`STEPS`] with `steps`.
fn steps(world: &AppWorld, port: u16, session: Option<&str>, steps: &[&str]) -> Child {
    let mut program = vec![PYTHON, "-c", STEPS];
    program.extend_from_slice(steps);
    world.launch(port, session, &program)
}

/// The next held request, through `ctl pending --wait --json`: its id and its item.
async fn next_held(world: &AppWorld) -> (String, Value) {
    let waited = world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let items: Value = serde_json::from_str(&waited)
        .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {waited:?}"));
    let item = items[0].clone();
    let id = item["id"].as_u64().expect("a prompt id").to_string();
    (id, item)
}

/// Holds the run's read of the secret and answers it once; checks it carries no mark.
async fn allow_the_read(world: &AppWorld, path: &Path) {
    let (id, item) = next_held(world).await;
    assert_eq!(
        (&item["operation"], &item["path"]),
        (&Value::from("read"), &Value::from(path_str(path))),
        "{item}"
    );
    assert!(item.get("after_secret").is_none(), "{item}");
    world.ctl_ok(&["answer", &id, "once"]).await;
}

/// `ctl answer ARGS…` must be refused (exit 1) saying why; the request stays waiting.
async fn refused(world: &AppWorld, args: &[&str], says: &str) {
    let mut all = vec!["answer"];
    all.extend_from_slice(args);
    let out = world.ctl(&all).await;
    assert_eq!(out.code, Some(1), "ctl {all:?} was not refused: {out:?}");
    assert!(out.stderr.contains(says), "ctl {all:?}: {out:?}");
}

fn lines(done: &Finished) -> Vec<&str> {
    done.stdout.lines().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_secret_read_the_runs_connect_and_outside_write_are_held_and_marked() {
    let (world, mut app, port) = world_and_app().await;
    let server = Loopback::start();
    let other = Loopback::start();
    let secret = secret(&world);
    let outside = world.outside.join("cache.txt");
    let run = steps(
        &world,
        port,
        None,
        &[
            "connect",
            "127.0.0.1",
            &server.port,
            "read",
            path_str(&secret),
            "connect",
            "127.0.0.1",
            &server.port,
            "connect",
            "127.0.0.1",
            &server.port,
            "connect",
            "127.0.0.1",
            &other.port,
            "write",
            path_str(&outside),
        ],
    );
    // Before the read: a connect, allowed for the session (until the app quits).
    let (id, item) = next_held(&world).await;
    assert_eq!(item["target"], server.target().as_str(), "{item}");
    assert!(
        item.get("after_secret").is_none(),
        "marked before the read: {item}"
    );
    world.ctl_ok(&["answer", &id, "session"]).await;
    allow_the_read(&world, &secret).await;

    // After it: the same connect is held again, the earlier grant notwithstanding, and
    // marked with the read.
    let (id, item) = next_held(&world).await;
    assert_eq!(
        (&item["kind"], &item["operation"], &item["target"]),
        (
            &Value::from("network"),
            &Value::from("connect"),
            &Value::from(server.target())
        ),
        "{item}"
    );
    let mark = &item["after_secret"];
    assert_eq!(mark["path"], path_str(&secret), "{item}");
    assert!(
        mark["at_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0 && ms <= item["received_ms"].as_u64().unwrap_or(0)),
        "{item}"
    );
    for (args, says) in [
        (vec!["session"], "--for run"),
        (vec!["session", "--for", "1h"], "--for run"),
        (vec!["project"], "never for the project"),
        (vec!["global"], "never everywhere"),
        (vec!["once"], "--confirm-after-secret"),
    ] {
        let mut all = vec![id.as_str()];
        all.extend(args);
        refused(&world, &all, says).await;
    }
    let waiting: Value =
        serde_json::from_str(&world.ctl_ok(&["pending", "--json"]).await).expect("JSON");
    assert_eq!(waiting[0]["id"].to_string(), id, "still waiting: {waiting}");
    assert_eq!(
        server.accepted(),
        1,
        "only the connect before the read got through"
    );

    // "This address for this run": allowed, and so is the run's next connect to it.
    world
        .ctl_ok(&["answer", &id, "session", "--for", "run"])
        .await;
    let grant = world
        .grants()
        .await
        .into_iter()
        .find(|g| g["after_secret"] == true)
        .expect("a grant made with the read in view");
    assert_eq!(
        (&grant["for"], &grant["scope"]["target"]),
        (&Value::from("run"), &Value::from(server.target())),
        "{grant}"
    );

    // Another address is not covered by that grant: held, marked, and allowed once with
    // the read in view.
    let (id, item) = next_held(&world).await;
    assert_eq!(item["target"], other.target().as_str(), "{item}");
    assert_eq!(item["after_secret"]["path"], path_str(&secret), "{item}");
    world
        .ctl_ok(&["answer", &id, "once", "--confirm-after-secret"])
        .await;

    // The write outside the project: marked, and its usual answers stand.
    let (id, item) = next_held(&world).await;
    assert_eq!(item["path"], path_str(&outside), "{item}");
    assert_eq!(item["after_secret"]["path"], path_str(&secret), "{item}");
    world.ctl_ok(&["answer", &id, "session"]).await;

    let done = finish(run).await;
    assert_eq!(
        lines(&done),
        [
            "connect ok",
            "read ok",
            "connect ok",
            "connect ok",
            "connect ok",
            "write ok"
        ],
        "{done:?}"
    );
    until(
        "three connects reached the loopback server, one the other",
        || server.accepted() == 3 && other.accepted() == 1,
    )
    .await;
    assert_eq!(std::fs::read_to_string(&outside).expect("written"), "hello");
    let second = world
        .activity_entry("the second connect after the read", |e| {
            e["subject"] == server.target().as_str() && e["by"] == "session_grant"
        })
        .await;
    assert_eq!(second["outcome"], "allow", "{second}");
    app.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_secret_deny_denies_the_connect_without_asking_and_a_run_that_read_nothing_asks() {
    let (world, mut app, port) = world_and_app().await;
    let server = Loopback::start();
    let secret = secret(&world);
    let changed = world
        .ctl_ok(&["config", "set", "afterSecret", "deny"])
        .await;
    assert!(
        changed.contains("afterSecret") || changed.contains("after a secret"),
        "{changed}"
    );
    assert!(world.ctl_ok(&["config"]).await.contains("deny"));

    let run = steps(
        &world,
        port,
        Some("ses_after"),
        &[
            "read",
            path_str(&secret),
            "connect",
            "127.0.0.1",
            &server.port,
        ],
    );
    allow_the_read(&world, &secret).await;
    let done = finish(run).await;
    assert_eq!(lines(&done)[0], "read ok", "{done:?}");
    assert_ne!(lines(&done)[1], "connect ok", "{done:?}");
    let entry = world
        .activity_entry("the connect denied after the secret", |e| {
            e["subject"] == server.target().as_str()
        })
        .await;
    assert_eq!(
        (&entry["outcome"], &entry["by"]),
        (&Value::from("deny"), &Value::from("after_secret")),
        "{entry}"
    );
    // A later run of the same opencode session is after the same secret.
    let later = steps(
        &world,
        port,
        Some("ses_after"),
        &["connect", "127.0.0.1", &server.port],
    );
    let done = finish(later).await;
    assert_ne!(lines(&done)[0], "connect ok", "{done:?}");
    assert_eq!(server.accepted(), 0);

    // A run that read nothing (another session, a harmless file read) asks, unmarked.
    let notes = world.home.join("notes.txt");
    let plain = steps(
        &world,
        port,
        Some("ses_plain"),
        &[
            "read",
            path_str(&notes),
            "connect",
            "127.0.0.1",
            &server.port,
        ],
    );
    allow_the_read(&world, &notes).await;
    let (id, item) = next_held(&world).await;
    assert_eq!(item["target"], server.target().as_str(), "{item}");
    assert!(item.get("after_secret").is_none(), "{item}");
    world.ctl_ok(&["answer", &id, "once"]).await;
    let done = finish(plain).await;
    assert_eq!(lines(&done), ["read ok", "connect ok"], "{done:?}");
    app.assert_running();
}
