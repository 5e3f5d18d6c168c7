//! Benchmark (not a test): what a person waits for and what the app costs while idle.
//!
//! Run it with the release build under a virtual display and a private session bus:
//!
//! ```sh
//! cargo build --release -p landstrip-tray
//! LANDSTRIP_TRAY_BIN=$CARGO_TARGET_DIR/release/landstrip-tray \
//!   xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench desktop
//! ```
//!
//! It starts Debian's dbusmock notification daemon on the session bus, the real app with
//! its own directories and one project, and then prints:
//! - idle memory (PSS of the app and every process it started: WebKit's too) after start;
//! - for 20 prompts, one after another: query → Notify call, and query → dialog rendered
//!   (the page showing that prompt; the deliberate input delay comes after), the first
//!   one cold (no webview yet) and the rest warm;
//! - idle memory again once those prompts have come and gone and the dialog is idle;
//! - the app's context switches over 10 idle seconds (periodic wake-ups show up here).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use landstrip_tray_tests::memory::pss_tree_kib;
use landstrip_tray_tests::real_app::AppWorld;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use zbus::message::Type;
use zbus::{Connection, MatchRule, MessageStream, OwnedVariant};

const PROMPTS: usize = 20;
const SETTLE: Duration = Duration::from_secs(3);

/// Context switches per thread of `pid` (voluntary + involuntary), by thread id.
fn context_switches(pid: u32) -> HashMap<String, u64> {
    let mut threads = HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            let switches = status
                .lines()
                .filter(|l| l.contains("ctxt_switches"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
            threads.insert(task.file_name().to_string_lossy().into_owned(), switches);
        }
    }
    threads
}

/// Switches between two samples, counting threads that came or went.
fn switches_between(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> u64 {
    after
        .iter()
        .map(|(tid, n)| n.saturating_sub(*before.get(tid).unwrap_or(&0)))
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "run under `xvfb-run -a dbus-run-session -- cargo bench -p landstrip-tray-tests --bench desktop`"
    );
    let mut mock = tokio::process::Command::new("/usr/bin/python3")
        .args([
            "-m",
            "dbusmock",
            "--session",
            "--template",
            "notification_daemon",
            "-p",
        ])
        .arg(r#"{"capabilities": "body actions sound"}"#)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python3-dbusmock");
    let waited = tokio::process::Command::new("gdbus")
        .args([
            "wait",
            "--session",
            "--timeout",
            "10",
            "org.freedesktop.Notifications",
        ])
        .status()
        .await
        .expect("gdbus");
    assert!(waited.success(), "the notification mock did not start");
    let bus = Connection::session().await.expect("session bus");
    let mut calls = MessageStream::for_match_rule(
        MatchRule::builder()
            .msg_type(Type::Signal)
            .interface("org.freedesktop.DBus.Mock")
            .member("MethodCalled")
            .build()
            .expect("match rule"),
        &bus,
        NonZeroUsize::new(4096),
    )
    .await
    .expect("subscribe");

    std::env::set_var(
        "LANDSTRIP_TRAY_APP_LOG",
        "info,landstrip_tray::app::dialog=debug",
    );
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    tokio::time::sleep(SETTLE).await;
    let (idle_start, procs_start) = pss_tree_kib(app.pid);

    let mut notify = Vec::new();
    let mut dialog = Vec::new();
    for i in 1..=PROMPTS {
        let mut peer = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let path = world.outside.join(format!("bench-{i}.txt"));
        let line = format!(
            "{{\"kind\":\"filesystem\",\"state\":\"query\",\"query_id\":\"{i}\",\"operation\":\"write\",\"path\":{:?},\"reason\":\"allow_miss\",\"process\":{{\"pid\":1,\"exe\":\"/usr/bin/python3\",\"cwd\":\"/\"}}}}\n",
            path.to_str().expect("utf-8")
        );
        let before = app.log().matches("dialog rendered").count();
        let sent = Instant::now();
        peer.write_all(line.as_bytes()).await.expect("send");
        let mut notified = None;
        let mut rendered = None;
        while notified.is_none() || rendered.is_none() {
            tokio::select! {
                msg = calls.next(), if notified.is_none() => {
                    let msg = msg.expect("stream").expect("message");
                    let (name, args): (String, Vec<OwnedVariant>) = msg.body().deserialize().expect("MethodCalled");
                    // The body names the path: skip other notifications (the start-up one).
                    if name == "Notify" && format!("{args:?}").contains(&format!("bench-{i}.txt")) {
                        notified = Some(sent.elapsed());
                    }
                }
                () = app.wait_for_log_count("dialog rendered", before + 1), if rendered.is_none() => {
                    rendered = Some(sent.elapsed());
                }
            }
        }
        notify.push(notified.expect("notified"));
        dialog.push(rendered.expect("rendered"));
        // The run ends: the prompt is withdrawn, the notification closed, the dialog idle.
        drop(peer);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(SETTLE).await;
    let (lingering, procs_lingering) = pss_tree_kib(app.pid);
    // The dialog keeps its webview a while after the last prompt (30 s), then lets it go.
    tokio::time::sleep(Duration::from_secs(20)).await;
    app.wait_for_log_count("destroying its webview", 1).await;
    tokio::time::sleep(SETTLE).await;
    let (idle_after, procs_after) = pss_tree_kib(app.pid);
    let before = context_switches(app.pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let wakeups = switches_between(&before, &context_switches(app.pid));

    println!("desktop figures (release build, {PROMPTS} prompts)");
    println!(
        "{:<44} {:>10}",
        "idle PSS after start (MB)",
        format!("{:.1}", idle_start as f64 / 1024.0)
    );
    println!("{:<44} {:>10}", "  processes counted", procs_start);
    println!(
        "{:<44} {:>10}",
        "query -> Notify p50 (ms)",
        format!("{:.1}", ms(median(notify.clone())))
    );
    println!(
        "{:<44} {:>10}",
        "query -> Notify max (ms)",
        format!("{:.1}", ms(*notify.iter().max().expect("some")))
    );
    println!(
        "{:<44} {:>10}",
        "query -> dialog rendered, cold (ms)",
        format!("{:.1}", ms(dialog[0]))
    );
    println!(
        "{:<44} {:>10}",
        "query -> dialog rendered, warm p50 (ms)",
        format!("{:.1}", ms(median(dialog[1..].to_vec())))
    );
    println!(
        "{:<44} {:>10}",
        "query -> dialog rendered, warm max (ms)",
        format!("{:.1}", ms(*dialog[1..].iter().max().expect("some")))
    );
    println!(
        "{:<44} {:>10}",
        "PSS while the idle dialog lingers (MB)",
        format!("{:.1}", lingering as f64 / 1024.0)
    );
    println!("{:<44} {:>10}", "  processes counted", procs_lingering);
    println!(
        "{:<44} {:>10}",
        "idle PSS after 20 prompts (MB)",
        format!("{:.1}", idle_after as f64 / 1024.0)
    );
    println!("{:<44} {:>10}", "  processes counted", procs_after);
    println!("{:<44} {:>10}", "context switches in 10 s idle", wakeups);
    let _ = app.terminate().await;
    let _ = mock.kill().await;
}
