//! The real app binary killed with SIGKILL while ten real landstrip runs each hold a write:
//! every sandboxed program gets EACCES (within [`RELEASED_WITHIN`]) and exits (the kernel closes the
//! app's sockets, and landstrip denies what it holds when its socket closes); the app's
//! discovery file is left behind, stale; a restart replaces it and serves again (a new
//! run's write is asked and answered). Nothing is mocked. Run under
//! `xvfb-run -a dbus-run-session --`, after `cargo build -p landstrip-tray`.

use std::time::{Duration, Instant};

use landstrip_tray_tests::real_app::AppWorld;
use landstrip_tray_tests::EVENT_TIMEOUT;
use serde_json::Value;

/// The promise: a run whose presenter died is not left hanging. The kernel closes the
/// app's sockets and landstrip denies what it holds at once (well under a second here,
/// printed below); the bound is generous for a loaded machine, and is a bound on "never
/// hangs", not a speed figure.
const RELEASED_WITHIN: Duration = Duration::from_secs(5);

/// How many held writes `ctl pending --json` lists now.
async fn pending(world: &AppWorld) -> usize {
    let out = world.ctl_ok(&["pending", "--json"]).await;
    let items: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ctl pending --json: {e}: {out}"));
    items.as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_app_fails_its_held_runs_closed_and_a_restart_serves_again() {
    const RUNS: usize = 10;
    let world = AppWorld::new();
    let mut app = world.start(&[&world.project]);
    app.wait_for_control().await;
    let port = app.serving(&world, &world.project).await;
    let killed_pid = app.pid;

    let targets: Vec<_> = (0..RUNS)
        .map(|i| world.outside.join(format!("held-{i}.txt")))
        .collect();
    let mut runs: Vec<_> = targets.iter().map(|t| world.write(port, t)).collect();
    // Every run's write is held: the first through `pending --wait`, then the count (no
    // event says "ten"; each look is bounded and so is the whole wait).
    world.ctl_ok(&["pending", "--wait", "--json"]).await;
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while pending(&world).await < RUNS {
        assert!(
            Instant::now() < deadline,
            "only {} of {RUNS} writes were held within {EVENT_TIMEOUT:?}",
            pending(&world).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let killed = Instant::now();
    let code = app.signal("KILL").await;
    assert_eq!(code, None, "the app was not killed by the signal");
    let mut slowest = Duration::ZERO;
    for (i, run) in runs.iter_mut().enumerate() {
        let status =
            tokio::time::timeout(RELEASED_WITHIN.saturating_sub(killed.elapsed()), run.wait())
                .await
                .unwrap_or_else(|_| {
                    panic!("run {i} still held {RELEASED_WITHIN:?} after the app was killed")
                })
                .expect("wait");
        slowest = slowest.max(killed.elapsed());
        assert_eq!(status.code(), Some(13), "run {i} did not fail with EACCES");
    }
    for (run, target) in runs.into_iter().zip(&targets) {
        let out = run.wait_with_output().await.expect("output");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "EACCES");
        assert!(!target.exists(), "{} was written", target.display());
    }
    eprintln!("{RUNS} held runs all failed with EACCES within {slowest:?} of SIGKILL");

    // The killed app's discovery file is still there, naming a dead pid.
    let stale = world
        .record(&world.project)
        .expect("the stale discovery file");
    assert_eq!(stale.pid, killed_pid);

    // A restart replaces it and serves: a new run's write is asked and answered.
    let mut again = world.start(&[&world.project]);
    again.wait_for_control().await;
    let new_port = again.serving(&world, &world.project).await;
    let record = world.record(&world.project).expect("discovery file");
    assert_eq!(
        record.pid, again.pid,
        "the stale discovery file was not replaced"
    );
    let target = world.outside.join("after-restart.txt");
    let run = world.write(new_port, &target);
    let answered = world.answer_once(1).await;
    assert_eq!(answered, [target.to_str().expect("utf-8")]);
    let done = landstrip_tray_tests::finish(run).await;
    assert_eq!((done.stdout.trim(), done.code), ("ok", Some(0)), "{done:?}");
    again.quit().await;
}
