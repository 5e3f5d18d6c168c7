//! Quitting while a project answer's policy write fails: the answer has claimed its prompt
//! (so quitting leaves it to the answer), its write then fails (another process holds the
//! policy directory's lock past the editor's wait), and giving the prompt back finds the
//! app quitting: the run gets exactly one deny, recorded once as decided by the quit; no
//! entry is written. Real listener, real TCP run, a real `flock` process, real files.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bounded, write_query, Run, Setup};
use landstrip_tray_core::activity::{Decider, Outcome};
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::{BrokerError, BrokerEvent};
use landstrip_tray_core::policy::store::DIR_LOCK_WAIT;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// Bounds every wait; generous for a loaded machine.
const WAIT: Duration = Duration::from_secs(30);

/// How often another surface looks whether the prompt is being answered (the claim has no
/// event of its own; it is seen as "busy").
const PROBE_EVERY: Duration = Duration::from_millis(5);

/// Another process holding `dir`'s lock (`flock`, as another editor's write holds it) until
/// its stdin closes; returns once it holds it.
async fn hold_lock(dir: &Path) -> tokio::process::Child {
    let mut child = Command::new("flock")
        .arg(dir)
        .args(["-c", "echo locked; read _"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn flock");
    let mut line = String::new();
    bounded(
        WAIT,
        "flock taking the lock",
        BufReader::new(child.stdout.as_mut().expect("stdout")).read_line(&mut line),
    )
    .await
    .expect("read flock's output");
    assert_eq!(line.trim(), "locked");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_while_a_failing_project_answer_holds_its_prompt_denies_it_once() {
    let mut served = Setup {
        serve_project: true,
        ..Setup::default()
    }
    .start()
    .await;
    let port = served.port_of(&served.project);
    let target = served.outside.join("d/f.txt");
    let mut run = Run::connect(port, WAIT).await;
    run.send(&write_query("1", &target)).await;
    let prompt = served.next_prompt().await;
    let broker = served.service.broker().clone();

    let policy_dir = served.project.join(".opencode");
    std::fs::create_dir_all(&policy_dir).expect("mkdir .opencode");
    let mut holder = hold_lock(&policy_dir).await;

    // The project answer: it claims the prompt, then waits DIR_LOCK_WAIT for the lock and
    // fails.
    let answering = std::thread::spawn({
        let broker = broker.clone();
        move || broker.answer(prompt.id, &AnswerRequest::new(ChoiceKey::Project))
    });
    // Another surface's answer that the rules refuse (an entry with Once): it claims
    // nothing, and finds the prompt busy once the project answer has claimed it.
    let probe = AnswerRequest {
        entry: Some("x".into()),
        ..AnswerRequest::once()
    };
    let started = Instant::now();
    loop {
        match broker.answer(prompt.id, &probe) {
            Err(BrokerError::Busy(_)) => break,
            Err(BrokerError::Rules(_)) => {}
            other => panic!("the probe: {other:?}"),
        }
        assert!(
            !answering.is_finished() && started.elapsed() < DIR_LOCK_WAIT,
            "the project answer never held the prompt while it waited for the lock"
        );
        tokio::time::sleep(PROBE_EVERY).await;
    }
    eprintln!(
        "the project answer held the prompt {:?} after it began",
        started.elapsed()
    );

    // The app quits meanwhile: a claimed prompt is left to its answer.
    assert_eq!(
        broker.shutdown(),
        0,
        "quitting denied the prompt the answer held"
    );
    let answered = answering.join().expect("the answering thread");
    eprintln!(
        "the project answer failed {:?} after it began: {answered:?}",
        started.elapsed()
    );
    assert!(
        matches!(answered, Err(BrokerError::Policy(_))),
        "the project answer did not fail on the held lock: {answered:?}"
    );

    // Given back to an app that quits: settled, not pending again.
    let left: Vec<_> = broker.pending().into_iter().map(|p| p.id).collect();
    assert!(
        left.is_empty(),
        "prompts still pending after the quit and the failed answer: {left:?}"
    );

    // Exactly one answer on the wire, a deny; then nothing more until the run is closed.
    assert_eq!(
        run.answer().await,
        serde_json::json!({"query_id": "1", "action": "deny"})
    );
    served
        .service
        .remove_project(&served.project, false)
        .await
        .expect("stop serving");
    let rest = run.rest().await;
    assert!(rest.is_empty(), "more answers after the deny: {rest:?}");

    // Settled once, by the quit.
    let mut resolved = Vec::new();
    while let Ok(event) = served.events.try_recv() {
        if let BrokerEvent::Resolved { id, outcome, by } = event {
            if id == prompt.id {
                resolved.push((outcome, by));
            }
        }
    }
    assert_eq!(resolved, [(Outcome::Deny, Decider::Quit)]);
    let subject = target.display().to_string();
    let recorded: Vec<_> = broker
        .activity()
        .recent()
        .into_iter()
        .filter(|e| e.subject == subject)
        .map(|e| (e.outcome, e.by))
        .collect();
    assert_eq!(recorded, [(Outcome::Deny, Decider::Quit)]);
    assert!(
        !policy_dir.join("sandbox.json").exists(),
        "the failed answer wrote an entry"
    );

    holder
        .stdin
        .take()
        .expect("stdin")
        .shutdown()
        .await
        .expect("release the lock");
    bounded(WAIT, "flock exiting", holder.wait())
        .await
        .expect("flock");
}
