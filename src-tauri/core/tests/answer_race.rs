//! Two answer paths racing on the same prompt, many times over: whoever wins, the prompt is
//! answered exactly once on the wire, and when the recorded decision is deny no session
//! grant and no policy entry remains (an answer claims its prompt before its side effect).
//! Real threads, a real broker, real policy files in a temporary directory; the wire is the
//! broker's outbound channel (what the listener writes to the socket).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use landstrip_tray_core::activity::{ActivityLog, Decider, Outcome};
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::{Broker, BrokerError, Connection, Outbound};
use landstrip_tray_core::serving::project::Project;
use landstrip_tray_core::wire::protocol::{Action, FsOperation};
use tokio::sync::mpsc;

struct World {
    _root: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
    broker: Broker,
    conn: Connection,
    rx: mpsc::UnboundedReceiver<Outbound>,
}

fn world() -> World {
    let root = tempfile::tempdir().expect("tempdir");
    let base = root.path().canonicalize().expect("canonical");
    let project = base.join("project");
    let home = base.join("home");
    let outside = base.join("outside");
    for dir in [&project, &home, &outside] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
    let (tx, rx) = mpsc::unbounded_channel();
    let conn = broker.connect(Arc::new(Project::new(project.clone(), home)), tx);
    World {
        _root: root,
        project,
        outside,
        broker,
        conn,
        rx,
    }
}

impl World {
    /// Holds a write of a fresh path (its own directory, so no earlier grant covers it).
    fn held_write(&mut self, i: usize) -> (u64, PathBuf) {
        let path = self.outside.join(format!("d{i}")).join("f");
        let line = format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"{i}","operation":"write","path":"{}","reason":"allow_miss"}}"#,
            path.display()
        );
        let mut out = Vec::new();
        self.conn.on_line(line.as_bytes(), &mut out);
        assert!(out.is_empty(), "query {i} was answered at once: {out:?}");
        let prompt = self
            .broker
            .pending()
            .into_iter()
            .find(|p| p.query.id.raw() == format!("\"{i}\""))
            .expect("the query is pending");
        (prompt.id, path)
    }

    /// The answers sent for query `i` since the last call.
    fn answers_for(&mut self, i: usize) -> Vec<Action> {
        let want = format!("\"{i}\"");
        let mut found = Vec::new();
        while let Ok(Outbound::Answer(id, action)) = self.rx.try_recv() {
            assert_eq!(id.raw(), want, "an answer for another query");
            found.push(action);
        }
        found
    }

    fn recorded(&self, path: &Path) -> Vec<(Outcome, Decider)> {
        let subject = path.display().to_string();
        self.broker
            .activity()
            .recent()
            .into_iter()
            .filter(|e| e.subject == subject)
            .map(|e| (e.outcome, e.by))
            .collect()
    }

    fn granted(&self, path: &Path) -> bool {
        self.broker
            .grants()
            .iter()
            .any(|g| g.scope.covers_path(FsOperation::Write, path))
    }

    fn policy_text(&self) -> String {
        std::fs::read_to_string(self.project.join(".opencode/sandbox.json")).unwrap_or_default()
    }
}

/// Who won each round.
#[derive(Default, Debug)]
struct Tally {
    first: usize,
    second: usize,
}

/// Runs `rounds` races between `first` and `second` on one fresh prompt each and checks
/// the invariants after each round. Returns the tally.
fn race(
    rounds: usize,
    first: impl Fn(&Broker, u64, &Path) -> Result<(), BrokerError> + Sync,
    second: impl Fn(&Broker, u64, &Path) -> Result<(), BrokerError> + Sync,
    check: impl Fn(&World, &Path, bool, Action),
) -> Tally {
    let mut w = world();
    let mut tally = Tally::default();
    let started = Instant::now();
    for i in 1..=rounds {
        let (id, path) = w.held_write(i);
        let barrier = Barrier::new(2);
        let (a, b) = thread::scope(|s| {
            let one = s.spawn(|| {
                barrier.wait();
                first(&w.broker, id, &w.project)
            });
            let two = s.spawn(|| {
                barrier.wait();
                second(&w.broker, id, &w.project)
            });
            (
                one.join().expect("first thread"),
                two.join().expect("second thread"),
            )
        });
        let answers = w.answers_for(i);
        assert_eq!(
            answers.len(),
            1,
            "round {i}: answered {answers:?} (first {a:?}, second {b:?})"
        );
        assert!(w.broker.pending().is_empty(), "round {i}: still pending");
        let recorded = w.recorded(&path);
        assert_eq!(recorded.len(), 1, "round {i}: recorded {recorded:?}");
        let (outcome, _) = recorded[0];
        assert_eq!(
            Outcome::from(answers[0]),
            outcome,
            "round {i}: the wire and the record disagree"
        );
        let first_won = a.is_ok();
        assert!(
            first_won != b.is_ok() || b.is_err(),
            "round {i}: both answers claimed success"
        );
        if first_won {
            tally.first += 1;
        } else {
            tally.second += 1;
        }
        check(&w, &path, first_won, answers[0]);
    }
    println!(
        "{rounds} rounds in {:?}: first won {}, second won {}",
        started.elapsed(),
        tally.first,
        tally.second
    );
    tally
}

fn session(broker: &Broker, id: u64, _: &Path) -> Result<(), BrokerError> {
    broker.answer(id, &AnswerRequest::session()).map(drop)
}

fn deny(broker: &Broker, id: u64, _: &Path) -> Result<(), BrokerError> {
    broker.answer(id, &AnswerRequest::deny()).map(drop)
}

fn project(broker: &Broker, id: u64, _: &Path) -> Result<(), BrokerError> {
    broker
        .answer(id, &AnswerRequest::new(ChoiceKey::Project))
        .map(drop)
}

#[test]
fn a_session_answer_racing_a_deny_leaves_no_grant_when_deny_wins() {
    let tally = race(400, session, deny, |w, path, session_won, action| {
        if session_won {
            assert_eq!(action, Action::Allow);
            assert!(w.granted(path), "the session answer won but left no grant");
        } else {
            assert_eq!(action, Action::Deny);
            assert!(
                !w.granted(path),
                "denied, yet a session grant covers {path:?}"
            );
        }
    });
    assert_eq!(tally.first + tally.second, 400);
}

#[test]
fn a_project_answer_racing_a_deny_leaves_no_entry_when_deny_wins() {
    race(120, project, deny, |w, path, project_won, action| {
        let entry = path
            .parent()
            .expect("parent")
            .display()
            .to_string()
            .replace('\\', "\\\\");
        let listed = w.policy_text().contains(&format!("\"{entry}\""));
        if project_won {
            assert_eq!(action, Action::Allow);
            assert!(
                listed,
                "the project answer won but {entry} is not in the file"
            );
        } else {
            assert_eq!(action, Action::Deny);
            assert!(
                !listed,
                "denied, yet {entry} was written to the project file"
            );
        }
    });
}

#[test]
fn a_session_answer_racing_quit_leaves_no_grant_when_quit_wins() {
    race(
        300,
        session,
        |broker, _, project| {
            // What quitting (or removing the project) does: deny everything held. Ok when
            // it denied this prompt, NotPending otherwise.
            if broker.deny_project(project) == 1 {
                Ok(())
            } else {
                Err(BrokerError::NotPending(0))
            }
        },
        |w, path, session_won, action| {
            if session_won {
                assert_eq!(action, Action::Allow);
                assert!(w.granted(path));
            } else {
                assert_eq!(action, Action::Deny);
                assert!(!w.granted(path), "quit denied, yet a grant covers {path:?}");
                assert_eq!(w.recorded(path)[0].1, Decider::Quit);
            }
        },
    );
}
