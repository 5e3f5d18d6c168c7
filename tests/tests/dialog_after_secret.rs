//! The prompt dialog's red state after a secret (README "After a secret"), driven through
//! WebDriver like `dialog.rs`: the real app under tauri-driver on the test's X display and
//! a real landstrip 0.19.2 run that reads a (fake) credentials file, answered once in the
//! dialog, then connects to a loopback listener of this test. The connect's prompt is drawn
//! in red with the earlier read, defaults to Deny and offers Once, "This run" (this
//! address until the run ends) and Deny only; choosing the run's address lets this connect and the run's next one
//! to it through. Tests connect to loopback addresses only.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::webdriver::Session;
use landstrip_tray_tests::{finish, until, EVENT_TIMEOUT, PYTHON};

/// Reads argv[1], then connects to 127.0.0.1:argv[2] twice; prints "STEP ok" or "STEP
/// ERRNO-NAME" for each.
const READ_THEN_CONNECT: &str = r#"
import errno, socket, sys
steps = [("read", lambda: open(sys.argv[1]).read())] + [
    ("connect", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=5).close())
] * 2
for name, step in steps:
    try:
        step()
        print(name, "ok", flush=True)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, repr(e)), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_after_a_secret_read_is_red_names_the_read_and_defaults_to_deny() {
    let world = AppWorld::new();
    // Reads of the home ask, as the bundled /home makes them for a real home.
    world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
    let secret = world.home.join(".aws/credentials");
    std::fs::create_dir(world.home.join(".aws")).expect("mkdir .aws");
    std::fs::write(
        &secret,
        "[default]\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\n",
    )
    .expect("write the fake credentials");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("addr").port().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let session = Session::start(&world, &[]).await;
    let run = world.launch(
        world.published_port(),
        None,
        &[PYTHON, "-c", READ_THEN_CONNECT, path_str(&secret), &port],
    );

    let read_id = session.wait_prompt(None).await;
    assert_eq!(
        session.attr("body", "data-after-secret").await.as_deref(),
        Some("false"),
        "the read itself is not after a secret"
    );
    // A sensitive read: Deny is the default; Once answers it without a second step.
    session.choose("once").await;

    let connect_id = session.wait_prompt(Some(&read_id)).await;
    assert_eq!(
        session.attr("body", "data-after-secret").await.as_deref(),
        Some("true"),
        "{}",
        session.attributes().await
    );
    assert!(
        session.displayed("#after-secret").await,
        "the read is not shown"
    );
    let said = session.text("#after-secret-text").await;
    assert!(
        said.starts_with("This run read ~/.aws/credentials (AWS credentials) ")
            // WebDriver's text makes the no-break space before the unit a space.
            && said.contains(" s ago."),
        "{said}"
    );
    // Red: the badge takes the sensitive colour, and the dialog its red edge.
    let style = session
        .script_until(
            "the red state's colours",
            "const s = (q) => getComputedStyle(document.querySelector(q)); \
             return [s('.badge').backgroundColor, s('.dialog').boxShadow];",
            EVENT_TIMEOUT,
            |_| true,
        )
        .await;
    assert_eq!(style[0], "rgb(224, 27, 36)", "{style}");
    assert!(
        style[1]
            .as_str()
            .is_some_and(|s| s.contains("rgb(224, 27, 36)")),
        "{style}"
    );
    assert_eq!(
        session.offered().await,
        ["session", "deny", "once"],
        "the answers of a connect after a secret"
    );
    let deny_class = session
        .attr("#actions-main button[data-choice='deny']", "class")
        .await
        .unwrap_or_default();
    assert!(
        deny_class.contains("suggested"),
        "Deny is not the default: {deny_class}"
    );
    assert!(
        !session.displayed("#limits").await,
        "a duration chooser beside This run (this address)"
    );
    assert_eq!(
        session
            .text("#actions-main button[data-choice='session'] .label")
            .await,
        "This run"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 0);

    // This address for this run: this connect and the run's next one go through.
    session.choose("session").await;
    let done = finish(run).await;
    assert_eq!(
        done.stdout.lines().collect::<Vec<_>>(),
        ["read ok", "connect ok", "connect ok"],
        "{done:?}"
    );
    until("both connects reached the loopback listener", || {
        accepted.load(Ordering::SeqCst) == 2
    })
    .await;
    let target = format!("127.0.0.1:{port}");
    let answered = world
        .activity_entry("the connect answered in the dialog", |e| {
            e["subject"] == target.as_str() && e["by"] == "user"
        })
        .await;
    assert_eq!(
        answered["detail"],
        format!(
            "session grant {target} for this run; after a secret: its run read {}",
            path_str(&secret)
        )
        .as_str(),
        "prompt {connect_id}: {answered}"
    );
    world
        .activity_entry("the run's next connect, by that grant", |e| {
            e["subject"] == target.as_str() && e["by"] == "session_grant"
        })
        .await;
    session.finish().await;
}

/// Not a test of behaviour: writes docs/dialog-after-secret-{light,dark}.png, the red
/// prompt of a connect after a secret read (scripts/dialog-screenshots.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots; run by scripts/dialog-screenshots.sh"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("addr").port().to_string();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        // The project in the home directory, as it usually is: paths read as ~/….
        let world = AppWorld::with_project("home/src/webapp");
        world.write_project_policy(&serde_json::json!({"filesystem": {"denyRead": ["~"]}}));
        std::fs::create_dir(world.home.join(".aws")).expect("mkdir .aws");
        let secret = world.home.join(".aws/credentials");
        std::fs::write(&secret, "[default]\n").expect("write the fake credentials");
        let session = Session::start(&world, &env).await;
        let run = world.launch(
            world.published_port(),
            Some("ses_4f2a9c1e7b"),
            &[PYTHON, "-c", READ_THEN_CONNECT, path_str(&secret), &port],
        );
        let read = session.wait_prompt(None).await;
        session.choose("once").await;
        let connect = session.wait_prompt(Some(&read)).await;
        session
            .screenshot(&out.join(format!("dialog-after-secret-{theme}.png")))
            .await;
        // The run connects twice: both denied.
        session.choose("deny").await;
        session.wait_prompt(Some(&connect)).await;
        session.choose("deny").await;
        finish(run).await;
        session.finish().await;
    }
}
