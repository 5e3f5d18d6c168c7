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
use landstrip_tray_core::policy::project::Project;
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

/// How a round's two answers are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Both released at once by a barrier: the scheduler picks the winner.
    Race,
    /// `first` runs to completion, then `second`.
    FirstThenSecond,
    /// `second` runs to completion, then `first`.
    SecondThenFirst,
}

/// Every fourth round is forced, alternating sides, so each side's winning branch of
/// `check` runs however the scheduler leans in the free races.
fn order_of(round: usize) -> Order {
    match round % 8 {
        1 => Order::FirstThenSecond,
        5 => Order::SecondThenFirst,
        _ => Order::Race,
    }
}

/// Runs `rounds` races between `first` and `second` on one fresh prompt each and checks
/// the invariants after each round: exactly one answer succeeds, the other is told the
/// prompt is gone (or, while racing, being answered). Both sides win some rounds.
fn race(
    rounds: usize,
    first: impl Fn(&Broker, u64, &Path) -> Result<(), BrokerError> + Sync,
    second: impl Fn(&Broker, u64, &Path) -> Result<(), BrokerError> + Sync,
    check: impl Fn(&World, &Path, bool, Action),
) {
    let mut w = world();
    let mut tally = Tally::default();
    let mut raced = Tally::default();
    let started = Instant::now();
    for i in 1..=rounds {
        let (id, path) = w.held_write(i);
        let order = order_of(i);
        let (a, b) = match order {
            Order::Race => {
                let barrier = Barrier::new(2);
                thread::scope(|s| {
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
                })
            }
            Order::FirstThenSecond => {
                let a = first(&w.broker, id, &w.project);
                (a, second(&w.broker, id, &w.project))
            }
            Order::SecondThenFirst => {
                let b = second(&w.broker, id, &w.project);
                (first(&w.broker, id, &w.project), b)
            }
        };
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
        let (first_won, lost) = match (&a, &b) {
            (Ok(()), Err(lost)) => (true, lost),
            (Err(lost), Ok(())) => (false, lost),
            _ => panic!(
                "round {i} ({order:?}): not exactly one answer succeeded: first {a:?}, second {b:?}"
            ),
        };
        // Run after the winner finished, the loser finds the prompt gone; racing, it may
        // also find it claimed. Any other error (a rule, a policy write) is not losing.
        let told_gone = match lost {
            BrokerError::NotPending(p) => *p == id,
            BrokerError::Busy(p) => *p == id && order == Order::Race,
            _ => false,
        };
        assert!(
            told_gone,
            "round {i} ({order:?}): the losing answer got {lost:?}, not that prompt {id} was answered"
        );
        match order {
            Order::FirstThenSecond => assert!(first_won, "round {i}: ran first, yet lost"),
            Order::SecondThenFirst => assert!(!first_won, "round {i}: ran second, yet won"),
            Order::Race if first_won => raced.first += 1,
            Order::Race => raced.second += 1,
        }
        if first_won {
            tally.first += 1;
        } else {
            tally.second += 1;
        }
        check(&w, &path, first_won, answers[0]);
    }
    println!(
        "{rounds} rounds in {:?}: first won {}, second won {} (of the free races: {} and {})",
        started.elapsed(),
        tally.first,
        tally.second,
        raced.first,
        raced.second
    );
    assert!(
        tally.first > 0 && tally.second > 0,
        "one side never won, so its branch of the check never ran: {tally:?}"
    );
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
    race(400, session, deny, |w, path, session_won, action| {
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
        |broker, id, project| {
            // What quitting (or removing the project) does: deny everything held. Ok when
            // it denied this prompt, NotPending otherwise.
            if broker.deny_project(project) == 1 {
                Ok(())
            } else {
                Err(BrokerError::NotPending(id))
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
