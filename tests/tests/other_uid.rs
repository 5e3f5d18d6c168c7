//! A real landstrip run of another uid (`nobody`, through `setpriv`) is refused on every
//! listener of the app's core, and its write fails closed (EACCES, never a prompt, never
//! decided); the same run as our own uid on the same listener is asked. Real landstrip
//! 0.19.2, real sockets; nothing is mocked. Needs root (to run a client as nobody).

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use landstrip_tray_core::decision::answer::AnswerRequest;
use landstrip_tray_tests::{write_landstrip_policy, Landstrip, TestEnv, EVENT_TIMEOUT, PYTHON};
use tokio::process::Command;

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// Runs [`landstrip_tray_tests::WRITE`] of `target` under the real landstrip as `nobody`
/// (uid and gid 65534, no groups), fd 3 connected to `port`, in `world` (nobody's own
/// home and project); returns the program's stdout and exit code.
async fn nobody_run(
    world: &Path,
    landstrip: &Path,
    port: u16,
    target: &Path,
) -> (String, Option<i32>) {
    let policy = write_landstrip_policy(world, world, world);
    std::os::unix::fs::chown(&policy, Some(NOBODY), Some(NOBODY)).expect("chown the policy");
    let wrapper = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && exec \"$@\"");
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "bash",
        "-c",
        &wrapper,
        "bash",
    ]);
    cmd.arg(landstrip)
        .args(["run", "--trap", "3", "-p"])
        .arg(&policy)
        .arg("--")
        .args([PYTHON, "-c", landstrip_tray_tests::WRITE])
        .arg(target)
        .current_dir(world)
        .env("HOME", world)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(EVENT_TIMEOUT, cmd.output())
        .await
        .expect("nobody's run did not end: was its query held?")
        .expect("run setpriv");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        out.status.code(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_run_of_another_uid_is_refused_on_every_listener_and_fails_closed() {
    assert_eq!(
        landstrip_tray_core::uid(),
        0,
        "running a client as nobody needs root (setpriv)"
    );
    let mut env = TestEnv::start().await;
    let second = env.root.path().join("second");
    std::fs::create_dir_all(&second).expect("mkdir");
    let second = std::fs::canonicalize(&second).expect("canonical");
    env.service
        .add_project(&second, false)
        .await
        .expect("serve a second project");
    let second_port = match env.discovery.read(&second) {
        landstrip_tray_core::serving::discovery::ReadOutcome::Record(r) => r.port,
        other => panic!("no discovery record for the second project: {other:?}"),
    };
    let ports = [env.discovered_port(), second_port];
    assert_ne!(ports[0], ports[1]);

    // Nobody's own world, so that only the sandbox (and our answer) stands in its way.
    let world = tempfile::Builder::new()
        .prefix("nobody-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    std::os::unix::fs::chown(world.path(), Some(NOBODY), Some(NOBODY)).expect("chown");
    let outside = world.path().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    std::os::unix::fs::chown(&outside, Some(NOBODY), Some(NOBODY)).expect("chown");
    let world_dir = world.path().join("home");
    std::fs::create_dir(&world_dir).expect("mkdir");
    std::os::unix::fs::chown(&world_dir, Some(NOBODY), Some(NOBODY)).expect("chown");
    // The checkout may sit where nobody cannot reach (root's 0700 home): nobody runs a link
    // to the same binary (or a copy across file systems) in its own world.
    let landstrip = world.path().join("landstrip");
    std::fs::hard_link(Landstrip::V0_19.binary(), &landstrip)
        .or_else(|_| std::fs::copy(Landstrip::V0_19.binary(), &landstrip).map(drop))
        .expect("landstrip where nobody can run it");

    for (n, port) in ports.into_iter().enumerate() {
        let target = outside.join(format!("theirs-{n}.txt"));
        let asked = Instant::now();
        let (stdout, code) = nobody_run(&world_dir, &landstrip, port, &target).await;
        assert_eq!(
            (stdout.as_str(), code),
            ("EACCES", Some(13)),
            "nobody's write on listener {n} was not refused"
        );
        assert!(!target.exists(), "nobody's write went through");
        assert!(
            env.broker().pending().is_empty(),
            "nobody's query became a prompt"
        );
        // Not even decided by a rule: a refused connection's queries are never read.
        let subject = target.to_str().expect("utf-8");
        assert!(
            !env.broker()
                .activity()
                .recent()
                .iter()
                .any(|e| e.subject == subject),
            "nobody's query was read and decided"
        );
        eprintln!(
            "listener {n}: nobody's run refused, its write failed with EACCES in {:?}",
            asked.elapsed()
        );
    }
    // Nothing reached the broker: no prompt was ever added.
    while let Ok(event) = env.events.try_recv() {
        assert!(
            !matches!(
                event,
                landstrip_tray_core::decision::broker::BrokerEvent::Added(_)
            ),
            "nobody's query was offered: {event:?}"
        );
    }

    // The same run as our own uid on the same listener is asked: the refusal above was
    // the uid check, not a broken setup.
    let target = env.outside.join("ours.txt");
    let mut ours = env.launch(
        Landstrip::V0_19,
        None,
        &[
            PYTHON,
            "-c",
            landstrip_tray_tests::WRITE,
            target.to_str().expect("utf-8"),
        ],
    );
    let prompt = env.next_prompt().await;
    env.broker()
        .answer(prompt.id, &AnswerRequest::once())
        .expect("answer ours");
    let status = tokio::time::timeout(EVENT_TIMEOUT, ours.wait())
        .await
        .expect("our run did not end")
        .expect("wait");
    assert!(status.success(), "our run: {status}");
    assert!(target.exists());
}
