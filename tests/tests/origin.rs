//! The command behind a request, end to end: a real landstrip 0.19.2 run whose sandboxed
//! command forks (`sh -c '… python3 -c "open(…)" …; true'`, writing outside the project)
//! is held by the real app under tauri-driver, with Debian's dbusmock notification server
//! on a private bus. The asking process's command and its chain (sh, then python3) must
//! show in the dialog, the notification, `ctl pending` and the activity record, and the
//! secrets in the command line (`API_TOKEN=…`, `--password …`) nowhere: not in the page,
//! the notification, ctl's output or the activity file. Nothing is mocked.

use serde_json::{json, Value};

use landstrip_tray_tests::notification_server::{NotificationServer, Notify};
use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, PYTHON};

const WRITE_TITLE: &str = "Sandbox write blocked";

/// The secrets the sandboxed command line carries; none may be shown anywhere.
const SECRETS: [&str; 2] = ["hunter2-secret-value", "hunter2-password"];

/// The forking command: sh runs python3 (which asks to write `target`) and then `true`,
/// so sh stays as python's parent. Secrets sit in sh's command string and python's
/// arguments.
fn forking_command(target: &str) -> String {
    format!(
        "API_TOKEN={} {PYTHON} -c 'open(\"{target}\", \"w\").write(\"hi\")' --password {}; true",
        SECRETS[0], SECRETS[1]
    )
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows {secret}: {text}");
    }
    assert!(
        !text.contains("hunter2"),
        "{what} shows part of a secret: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_and_its_chain_show_everywhere_and_secrets_nowhere() {
    let world = AppWorld::new();
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let session = Session::start(&world, &server.app_env()).await;
    let target = world.outside.join("f.txt");
    let command = forking_command(path_str(&target));
    let child = world.launch(session.port(&world), None, &["sh", "-c", &command]);

    // The notification: the command first, then its chain, shortened; no secret.
    let log = || session.log();
    let args = server
        .next_call_logged(log, "Notify", |a| a.get(3) == Some(&json!(WRITE_TITLE)))
        .await;
    let notify = Notify::parse(&args);
    assert_no_secret("the notification", &notify.body);
    assert!(
        notify.body.contains("\nCommand: python3 -c "),
        "{}",
        notify.body
    );
    assert!(notify.body.contains("--password ***"), "{}", notify.body);
    assert!(
        notify.body.contains("\nChain: sh -c ") && notify.body.contains("API_TOKEN=*** "),
        "{}",
        notify.body
    );
    assert!(
        notify.body.contains(" → /usr/bin/python3 -c "),
        "{}",
        notify.body
    );

    // The dialog: the sentence starts with the command, the chain below it, the whole
    // command lines one key away.
    session.wait_prompt(None).await;
    let summary = session.text("#summary").await;
    assert!(summary.starts_with("python3 -c "), "{summary}");
    assert!(
        summary.contains(&format!(
            " in {} wants to write {}.",
            world.project.display(),
            target.display()
        )),
        "{summary}"
    );
    assert!(
        session
            .text("#summary code.command")
            .await
            .starts_with("python3 -c"),
        "the command is set apart"
    );
    let chain = session.text("#chain").await;
    assert!(
        chain.starts_with("sh -c ") && chain.contains("API_TOKEN=*** "),
        "{chain}"
    );
    assert!(chain.contains("→ /usr/bin/python3 -c "), "{chain}");
    let lines = session
        .bounded(
            "the chain's lines",
            session.client().execute(
                "return document.querySelectorAll('#chain .link').length",
                vec![],
            ),
        )
        .await;
    assert_eq!(lines, json!(2), "one line per process");
    assert_eq!(
        session
            .attr("#command-toggle", "aria-expanded")
            .await
            .as_deref(),
        Some("false")
    );
    session.press('c').await;
    session.wait_css("#command-full:not([hidden])").await;
    assert_eq!(
        session
            .attr("#command-toggle", "aria-expanded")
            .await
            .as_deref(),
        Some("true")
    );
    let full = session.text("#command-list").await;
    assert!(
        full.contains(&format!(
            "open(\"{}\", \"w\").write(\"hi\")",
            target.display()
        )),
        "the whole python code is one key away: {full}"
    );
    assert!(full.contains("pid "), "{full}");
    let page = session
        .bounded(
            "the page's HTML",
            session
                .client()
                .execute("return document.documentElement.outerHTML", vec![]),
        )
        .await;
    assert_no_secret("the dialog", page.as_str().unwrap_or_default());
    session.press('c').await;
    session.wait_css("#command-full[hidden]").await;
    assert_eq!(
        session.focused("data-choice").await.as_deref(),
        Some("once"),
        "closing the command lines gives the focus back to the default choice"
    );

    // ctl pending: a COMMAND column; --json has the chain whole.
    let table = world.ctl_ok(&["pending"]).await;
    assert_no_secret("ctl pending", &table);
    assert!(
        table.lines().next().unwrap_or_default().contains("COMMAND"),
        "{table}"
    );
    assert!(table.contains("python3 -c"), "{table}");
    let json_text = world.ctl_ok(&["pending", "--json"]).await;
    assert_no_secret("ctl pending --json", &json_text);
    let items: Value = serde_json::from_str(&json_text).expect("pending JSON");
    let chain = items[0]["origin"]["chain"].as_array().expect("a chain");
    assert_eq!(chain.len(), 2, "{json_text}");
    assert_eq!(chain[0]["program"], "python3", "{json_text}");
    assert!(
        chain[0]["argv"]["full"]
            .as_str()
            .is_some_and(|a| a.starts_with("sh -c ") && a.contains("API_TOKEN=*** ")),
        "{json_text}"
    );
    assert_eq!(chain[1]["program"], "python3 -c", "{json_text}");
    assert_eq!(
        chain[1]["pid"], items[0]["pid"],
        "the asking process is last"
    );

    // Denied from the dialog; the activity record carries the command and the chain.
    session.press('d').await;
    let done = finish(child).await;
    assert!(done.stderr.contains("PermissionError"), "{done:?}");
    let entry = world
        .activity_entry("for the denied write", |e| {
            e["subject"] == json!(path_str(&target)) && e["by"] == json!("user")
        })
        .await;
    assert!(
        entry["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("python3 -c ") && c.contains("--password ***")),
        "{entry}"
    );
    assert_eq!(entry["chain"].as_array().map(Vec::len), Some(2), "{entry}");
    let log = std::fs::read_to_string(world.activity_file()).expect("the activity file");
    assert_no_secret("the activity file", &log);
    let grep = world
        .ctl_ok(&["activity", "--grep", "python3 -c", "--json"])
        .await;
    let found: Value = serde_json::from_str(&grep).expect("activity JSON");
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{grep}");
    session.finish().await;
}

/// The opencode session the runs below say they belong to (the plugin's hello).
const OPENCODE_SESSION: &str = "ses_h2origin";

/// An opencode 2 store (`session_v2`, `session_message`; the schema facts) at
/// `path` whose session [`OPENCODE_SESSION`] is titled `title` and runs the shell call
/// `command`.
fn opencode2_store(path: &std::path::Path, title: &str, command: &str) {
    let db = rusqlite::Connection::open(path).expect("create the store");
    let call = json!({"content": [{"type": "tool", "id": "call_1", "name": "shell",
        "state": {"status": "running", "input": {"command": command}, "metadata": {}}}]});
    db.execute_batch(
        "CREATE TABLE session_v2 (id TEXT PRIMARY KEY, title TEXT, time_created INTEGER);
         CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT, type TEXT,
             seq INTEGER, time_created INTEGER, time_updated INTEGER, data TEXT);",
    )
    .expect("opencode 2's tables");
    db.execute(
        "INSERT INTO session_v2 (id, title, time_created) VALUES (?1, ?2, 0)",
        [OPENCODE_SESSION, title],
    )
    .expect("the session");
    db.execute(
        "INSERT INTO session_message (id, session_id, type, seq, data) \
         VALUES ('msg_1', ?1, 'assistant', 1, ?2)",
        [OPENCODE_SESSION, &call.to_string()],
    )
    .expect("the running call");
}

/// Nothing of the forged store (its path is in the chain's command line, rightly).
fn assert_nothing_forged(what: &str, text: &str) {
    assert!(
        !text.contains("A forged title") && !text.contains("forged command"),
        "{what} shows the forged store's words: {text}"
    );
}

/// Where opencode's store is comes from the environment of the landstrip process that
/// connected (`OPENCODE_DB`, as opencode's shell tool passes its own on), never from the
/// sandboxed command: one that points `OPENCODE_DB` at a store of its own before it asks
/// does not get to title the prompt. The real landstrip 0.19.2 runs
/// `sh -c 'export OPENCODE_DB=FORGED; python3 …'` with `OPENCODE_DB=REAL` in its own
/// environment; the app's own data directory has no store, so only a store named by an
/// environment can title it. The dialog, the notification and `ctl pending --json` show
/// the real store's title and the agent's command (opencode 2), nothing of the forged one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencodes_store_is_the_one_landstrips_environment_names() {
    let world = AppWorld::new();
    let real = world.base.join("real-opencode.db");
    let forged = world.outside.join("forged-opencode.db");
    opencode2_store(&real, "The real title", "make probe");
    opencode2_store(&forged, "A forged title", "forged command");
    let mut server = NotificationServer::start(&world.base.join("bus"), "body actions sound").await;
    let session = Session::start(&world, &server.app_env()).await;
    let target = world.outside.join("f.txt");
    let command = format!(
        "export OPENCODE_DB='{}'; {PYTHON} -c 'open(\"{}\", \"w\").write(\"hi\")'; true",
        path_str(&forged),
        path_str(&target)
    );
    let child = world.launch_with_env(
        session.port(&world),
        Some(OPENCODE_SESSION),
        &[("OPENCODE_DB", path_str(&real))],
        &["sh", "-c", &command],
    );

    let log = || session.log();
    let args = server
        .next_call_logged(log, "Notify", |a| a.get(3) == Some(&json!(WRITE_TITLE)))
        .await;
    let body = Notify::parse(&args).body;
    assert!(
        body.contains(&format!("\nSession: The real title ({OPENCODE_SESSION})"))
            && body.contains("\nAgent's command: make probe"),
        "{body}"
    );
    assert_nothing_forged("the notification", &body);

    session.wait_prompt(None).await;
    let said = session.text("#session").await;
    assert!(said.starts_with("The real title"), "{said}");
    assert_eq!(session.text("#agent").await, "runs make probe");
    let page = session
        .bounded(
            "the page's HTML",
            session
                .client()
                .execute("return document.documentElement.outerHTML", vec![]),
        )
        .await;
    assert_nothing_forged("the dialog", page.as_str().unwrap_or_default());

    let json_text = world.ctl_ok(&["pending", "--json"]).await;
    let items: Value = serde_json::from_str(&json_text).expect("pending JSON");
    let call = &items[0]["origin"]["opencode"];
    assert_eq!(call["title"], "The real title", "{json_text}");
    assert_eq!(call["command"], "make probe", "{json_text}");
    assert_nothing_forged("ctl pending --json", &json_text);

    session.press('d').await;
    let done = finish(child).await;
    assert!(done.stderr.contains("PermissionError"), "{done:?}");
    session.finish().await;
}
