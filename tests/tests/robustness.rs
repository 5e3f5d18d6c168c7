//! The core's listener and broker against hostile or unusual peers, through real TCP
//! sockets to the real listener: framing, garbage, duplicates, overlong lines, session
//! grants and their keys, the prompt timeout, policy files edited or broken on disk,
//! malformed queries, and many connections at once. Nothing here is mocked, and nothing
//! waits by sleeping: every wait is an awaited event or answer with a bound.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use landstrip_tray_core::activity::{ActivityEntry, Decider, Outcome};
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::broker::{BrokerError, BrokerEvent, PendingPrompt};
use landstrip_tray_core::wire::protocol::{FsOperation, QueryKind, MAX_LINE};
use landstrip_tray_tests::{TestEnv, EVENT_TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One peer of the query socket, as landstrip would be: writes trap lines, reads answers.
struct Peer {
    stream: TcpStream,
    /// Bytes read but not yet returned as a line.
    buf: Vec<u8>,
}

impl Peer {
    async fn connect(port: u16) -> Self {
        let stream = tokio::time::timeout(EVENT_TIMEOUT, TcpStream::connect(("127.0.0.1", port)))
            .await
            .expect("connect in time")
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes `bytes` in one `write_all`.
    async fn send(&mut self, bytes: &[u8]) {
        tokio::time::timeout(EVENT_TIMEOUT, self.stream.write_all(bytes))
            .await
            .expect("write in time")
            .expect("write");
        self.stream.flush().await.expect("flush");
    }

    /// Writes `bytes` cut at `cuts` (offsets), one write per piece, yielding to the
    /// runtime in between so the listener gets to read each piece on its own.
    async fn send_in_pieces(&mut self, bytes: &[u8], cuts: &BTreeSet<usize>) {
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            if cut <= start || cut > bytes.len() {
                continue;
            }
            self.send(&bytes[start..cut]).await;
            tokio::task::yield_now().await;
            start = cut;
        }
    }

    /// The next answer line (with its `\n`), failing after [`EVENT_TIMEOUT`].
    async fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                return String::from_utf8(line).expect("answers are UTF-8");
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(EVENT_TIMEOUT, self.stream.read(&mut chunk))
                .await
                .expect("no answer line in time")
                .expect("read");
            assert!(
                n > 0,
                "EOF before an answer line (have {:?})",
                String::from_utf8_lossy(&self.buf)
            );
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Asserts that the next answer line is exactly `expected`.
    async fn expect_line(&mut self, expected: &str) {
        assert_eq!(self.line().await, expected);
    }

    /// Asserts that the listener closed the connection without writing anything more.
    async fn expect_eof(&mut self) {
        assert!(
            self.buf.is_empty(),
            "unexpected bytes: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(EVENT_TIMEOUT, self.stream.read(&mut chunk))
            .await
            .expect("the listener did not close the connection in time")
            .expect("a clean EOF, not an error");
        assert_eq!(
            n,
            0,
            "expected EOF, got {:?}",
            String::from_utf8_lossy(&chunk[..n])
        );
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// A landstrip 0.19 filesystem write query with a string id, without its newline.
fn write_query(id: &str, path: &Path) -> String {
    serde_json::json!({
        "kind": "filesystem",
        "code": "FILESYSTEM_DENIED",
        "state": "query",
        "query_id": id,
        "operation": "write",
        "path": path_str(path),
        "requested_path": path_str(path),
        "syscall": "openat",
        "errno": "EACCES",
        "flags": ["O_WRONLY", "O_CREAT", "O_TRUNC"],
        "reason": "allow_miss",
        "process": {"pid": 4242, "exe": "/usr/bin/dash", "cwd": "/"},
        "mechanism": "seccomp",
    })
    .to_string()
}

/// The same, newline-terminated.
fn write_query_line(id: &str, path: &Path) -> String {
    format!("{}\n", write_query(id, path))
}

/// `{"query_id":"<id>","action":"<action>"}\n`.
fn answer(id: &str, action: &str) -> String {
    format!("{{\"query_id\":\"{id}\",\"action\":\"{action}\"}}\n")
}

const HELLO_A: &str = "{\"kind\":\"opencode-landstrip-session\",\"sessionID\":\"ses_A\"}\n";
const HELLO_B: &str = "{\"kind\":\"opencode-landstrip-session\",\"sessionID\":\"ses_B\"}\n";

/// The next prompt, which must be for string id `id` and a write of `path`.
async fn expect_prompt(env: &mut TestEnv, id: &str, path: &Path) -> PendingPrompt {
    let prompt = env.next_prompt().await;
    assert_eq!(
        prompt.query.id.raw(),
        format!("\"{id}\""),
        "prompt for another query: {prompt:?}"
    );
    match &prompt.query.kind {
        QueryKind::Filesystem(fs) => {
            assert_eq!(fs.operation, FsOperation::Write);
            assert_eq!(Path::new(&fs.path), path);
        }
        other => panic!("expected a filesystem query, got {other:?}"),
    }
    prompt
}

/// The next event, which must be `id` resolved with `outcome` by `by`.
async fn expect_resolved(env: &mut TestEnv, id: u64, outcome: Outcome, by: Decider) {
    match env.next_event().await {
        BrokerEvent::Resolved {
            id: got,
            outcome: got_outcome,
            by: got_by,
        } => assert_eq!((got, got_outcome, got_by), (id, outcome, by)),
        other => panic!("expected prompt {id} resolved, got {other:?}"),
    }
}

/// Drains the events announced so far; none of them may be a new prompt.
fn assert_no_prompt_queued(env: &mut TestEnv) {
    while let Ok(event) = env.events.try_recv() {
        assert!(
            !matches!(event, BrokerEvent::Added(_)),
            "an unexpected prompt: {event:?}"
        );
    }
}

/// The most recent activity entry about `path`. The answer goes out first and the entry
/// is recorded just after it, with no event to await: looked for again, bounded.
fn last_entry_for(env: &TestEnv, path: &Path) -> ActivityEntry {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let found = env
            .broker()
            .activity()
            .recent()
            .into_iter()
            .rev()
            .find(|e| e.subject == path_str(path));
        if let Some(entry) = found {
            return entry;
        }
        assert!(
            Instant::now() < deadline,
            "no activity entry for {} within {EVENT_TIMEOUT:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn project_file(env: &TestEnv) -> PathBuf {
    env.project.join(".opencode/sandbox.json")
}

fn global_file(env: &TestEnv) -> PathBuf {
    env.home.join(".config/opencode/sandbox.json")
}

#[tokio::test]
async fn framing_garbage_and_duplicates_on_one_connection() {
    let mut env = TestEnv::start().await;
    let mut peer = Peer::connect(env.discovered_port()).await;

    // A query written in many small pieces: cut every 7 bytes, inside the two bytes of
    // "é", and between the CR and the LF of its CRLF terminator.
    let split_path = env.outside.join("split/é-file.txt");
    let line = format!("{}\r\n", write_query("1", &split_path));
    let bytes = line.as_bytes();
    let e_acute = bytes
        .windows(2)
        .position(|w| w == "é".as_bytes())
        .expect("é in the line");
    let mut cuts: BTreeSet<usize> = (7..bytes.len()).step_by(7).collect();
    cuts.insert(e_acute + 1);
    cuts.insert(bytes.len() - 1);
    peer.send_in_pieces(bytes, &cuts).await;
    let p1 = expect_prompt(&mut env, "1", &split_path).await;
    env.broker()
        .answer(p1.id, &AnswerRequest::once())
        .expect("answer 1");
    peer.expect_line("{\"query_id\":\"1\",\"action\":\"allow\"}\n")
        .await;

    // One write: blank lines, a CRLF query, invalid UTF-8, garbage, truncated JSON, JSON
    // that is not a trap, a terminal trap, and a last query. Only the two queries prompt.
    let q2 = env.outside.join("two/f");
    let q3 = env.outside.join("three/f");
    let mut batch: Vec<u8> = Vec::new();
    batch.extend_from_slice(b"\n\r\n   \t\n\r\n");
    batch.extend_from_slice(write_query("2", &q2).as_bytes());
    batch.extend_from_slice(b"\r\n");
    batch.extend_from_slice(b"\xff\xfe\x80{\"kind\":\"filesystem\"} not utf-8\n");
    batch.extend_from_slice(b"this is not json at all\n");
    batch.extend_from_slice(b"{\"kind\":\"filesystem\",\"state\":\"query\",\"query_id\":\"97\"\n");
    batch.extend_from_slice(b"[1,2]\n");
    batch.extend_from_slice(b"{\"kind\":\"nope\"}\n");
    batch.extend_from_slice(b"null\n42\n\"a string\"\n{}\n");
    batch.extend_from_slice(
        b"{\"kind\":\"filesystem\",\"state\":\"info\",\"query_id\":\"0\",\"operation\":\"write\",\"path\":\"/x\"}\n",
    );
    batch.extend_from_slice(write_query_line("3", &q3).as_bytes());
    peer.send(&batch).await;
    let p2 = expect_prompt(&mut env, "2", &q2).await;
    let p3 = expect_prompt(&mut env, "3", &q3).await;
    assert_eq!(
        env.broker()
            .pending()
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![p2.id, p3.id],
        "only the two queries are pending"
    );
    // Answered out of order: the answers arrive in the order given, and nothing came
    // before them (an answer to a garbage line would have been written at once).
    env.broker()
        .answer(p3.id, &AnswerRequest::deny())
        .expect("answer 3");
    env.broker()
        .answer(p2.id, &AnswerRequest::once())
        .expect("answer 2");
    peer.expect_line("{\"query_id\":\"3\",\"action\":\"deny\"}\n")
        .await;
    peer.expect_line("{\"query_id\":\"2\",\"action\":\"allow\"}\n")
        .await;

    // A duplicate id while its prompt is open: one prompt. Answered "for session", so a
    // duplicate that slipped through would now be auto-allowed and answered again.
    let q4 = env.outside.join("four/f");
    peer.send(
        format!(
            "{}{}",
            write_query_line("4", &q4),
            write_query_line("4", &q4)
        )
        .as_bytes(),
    )
    .await;
    let p4 = expect_prompt(&mut env, "4", &q4).await;
    let answered = env
        .broker()
        .answer(p4.id, &AnswerRequest::session())
        .expect("answer 4");
    assert!(
        answered.also_answered.is_empty(),
        "the duplicate became a prompt of its own: {answered:?}"
    );
    peer.expect_line("{\"query_id\":\"4\",\"action\":\"allow\"}\n")
        .await;

    // The same id again after it was answered (and an old one), then a new query: the
    // next prompt and the next answer are the new query's, not a second answer for 4.
    let q5 = env.outside.join("five/f");
    let dup = format!(
        "{}{}{}",
        write_query_line("4", &q4),
        write_query_line("1", &split_path),
        write_query_line("5", &q5)
    );
    peer.send(dup.as_bytes()).await;
    let p5 = expect_prompt(&mut env, "5", &q5).await;
    env.broker()
        .answer(p5.id, &AnswerRequest::deny())
        .expect("answer 5");
    peer.expect_line("{\"query_id\":\"5\",\"action\":\"deny\"}\n")
        .await;
    assert!(env.broker().pending().is_empty());
    assert_no_prompt_queued(&mut env);
}

#[tokio::test]
async fn an_overlong_line_drops_only_its_own_connection() {
    let mut env = TestEnv::start().await;
    let port = env.discovered_port();

    // B connects first and holds a prompt.
    let mut b = Peer::connect(port).await;
    let b1 = env.outside.join("b/one");
    b.send(write_query_line("b1", &b1).as_bytes()).await;
    let pb1 = expect_prompt(&mut env, "b1", &b1).await;

    // A holds a prompt, then sends 1 MiB + 1 byte without a newline.
    let mut a = Peer::connect(port).await;
    let a1 = env.outside.join("a/one");
    a.send(write_query_line("a1", &a1).as_bytes()).await;
    let pa1 = expect_prompt(&mut env, "a1", &a1).await;
    a.send(&vec![b'x'; MAX_LINE + 1]).await;
    a.expect_eof().await;
    expect_resolved(&mut env, pa1.id, Outcome::Withdrawn, Decider::RunEnded).await;
    let entry = last_entry_for(&env, &a1);
    assert_eq!(
        (entry.outcome, entry.by),
        (Outcome::Withdrawn, Decider::RunEnded)
    );

    // B is untouched: its prompt still pending, and it still asks and gets answers.
    assert_eq!(
        env.broker()
            .pending()
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![pb1.id]
    );
    let b2 = env.outside.join("b/two/x");
    b.send(write_query_line("b2", &b2).as_bytes()).await;
    let pb2 = expect_prompt(&mut env, "b2", &b2).await;
    env.broker()
        .answer(pb2.id, &AnswerRequest::deny())
        .expect("answer b2");
    env.broker()
        .answer(pb1.id, &AnswerRequest::once())
        .expect("answer b1");
    b.expect_line(&answer("b2", "deny")).await;
    b.expect_line(&answer("b1", "allow")).await;
}

#[tokio::test]
async fn a_session_answer_settles_the_other_pending_queries_it_covers() {
    let mut env = TestEnv::start().await;
    let port = env.discovered_port();
    let mut c1 = Peer::connect(port).await;
    let mut c2 = Peer::connect(port).await;
    let (a, b, c) = (
        env.outside.join("d/a"),
        env.outside.join("d/b"),
        env.outside.join("e/c"),
    );
    c1.send(write_query_line("1", &a).as_bytes()).await;
    let pa = expect_prompt(&mut env, "1", &a).await;
    assert_eq!(
        pa.session_scope.as_deref(),
        Some(env.outside.join("d").as_path())
    );
    // Ids are per connection: the same "1" on the other connection is another query.
    c2.send(write_query_line("1", &b).as_bytes()).await;
    let pb = expect_prompt(&mut env, "1", &b).await;
    c1.send(write_query_line("2", &c).as_bytes()).await;
    let pc = expect_prompt(&mut env, "2", &c).await;

    let answered = env
        .broker()
        .answer(pa.id, &AnswerRequest::session())
        .expect("answer for session");
    assert!(answered.grant.is_some());
    assert_eq!(answered.also_answered, vec![pb.id]);
    expect_resolved(&mut env, pa.id, Outcome::Allow, Decider::User).await;
    expect_resolved(&mut env, pb.id, Outcome::Allow, Decider::SessionGrant).await;
    c1.expect_line(&answer("1", "allow")).await;
    c2.expect_line(&answer("1", "allow")).await;
    let entry = last_entry_for(&env, &b);
    assert_eq!(
        (entry.outcome, entry.by),
        (Outcome::Allow, Decider::SessionGrant)
    );

    // e/c is outside d: still pending.
    assert_eq!(
        env.broker()
            .pending()
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![pc.id]
    );
    // A new query under d on either connection is answered at once.
    let later = env.outside.join("d/deeper/new");
    c2.send(write_query_line("2", &later).as_bytes()).await;
    c2.expect_line(&answer("2", "allow")).await;
    env.broker()
        .answer(pc.id, &AnswerRequest::deny())
        .expect("answer c");
    c1.expect_line(&answer("2", "deny")).await;
    assert_no_prompt_queued(&mut env);
}

#[tokio::test]
async fn session_grants_are_keyed_by_the_hello_session_id() {
    let mut env = TestEnv::start().await;
    let port = env.discovered_port();
    let scope = env.outside.join("s");

    // A: hello ses_A, a query, answered for session.
    let mut a = Peer::connect(port).await;
    let a1 = scope.join("a1");
    a.send(format!("{HELLO_A}{}", write_query_line("1", &a1)).as_bytes())
        .await;
    let pa = expect_prompt(&mut env, "1", &a1).await;
    assert_eq!(pa.session.as_deref(), Some("ses_A"));
    assert_eq!(pa.session_scope.as_deref(), Some(scope.as_path()));
    env.broker()
        .answer(pa.id, &AnswerRequest::session())
        .expect("answer a1");
    a.expect_line(&answer("1", "allow")).await;

    // Another run of the same session is covered at once.
    let mut a2 = Peer::connect(port).await;
    let a2_path = scope.join("sub/a2");
    a2.send(format!("{HELLO_A}{}", write_query_line("1", &a2_path)).as_bytes())
        .await;
    a2.expect_line(&answer("1", "allow")).await;
    let entry = last_entry_for(&env, &a2_path);
    assert_eq!(
        (entry.by, entry.session.as_deref()),
        (Decider::SessionGrant, Some("ses_A"))
    );
    assert_no_prompt_queued(&mut env);

    // B: another session, same scope: asked.
    let mut b = Peer::connect(port).await;
    let b1 = scope.join("b1");
    b.send(format!("{HELLO_B}{}", write_query_line("1", &b1)).as_bytes())
        .await;
    let pb = expect_prompt(&mut env, "1", &b1).await;
    assert_eq!(pb.session.as_deref(), Some("ses_B"));
    env.broker()
        .answer(pb.id, &AnswerRequest::deny())
        .expect("answer b1");
    b.expect_line(&answer("1", "deny")).await;

    // C: its first line is a query, so a later hello naming ses_A does not re-key it.
    let mut c = Peer::connect(port).await;
    let c1 = scope.join("c1");
    c.send(write_query_line("1", &c1).as_bytes()).await;
    let pc1 = expect_prompt(&mut env, "1", &c1).await;
    assert_eq!(pc1.session, None);
    env.broker()
        .answer(pc1.id, &AnswerRequest::once())
        .expect("answer c1");
    c.expect_line(&answer("1", "allow")).await;
    let c2 = scope.join("c2");
    c.send(format!("{HELLO_A}{}", write_query_line("2", &c2)).as_bytes())
        .await;
    let pc2 = expect_prompt(&mut env, "2", &c2).await;
    assert_eq!(pc2.session, None, "a late hello re-keyed the connection");
    env.broker()
        .answer(pc2.id, &AnswerRequest::deny())
        .expect("answer c2");
    c.expect_line(&answer("2", "deny")).await;

    let grants = env.broker().grants();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].key.session.as_deref(), Some("ses_A"));
}

#[tokio::test]
async fn the_prompt_timeout_denies_once_and_persists_nothing() {
    let mut env = TestEnv::start().await;
    let timeout = Duration::from_millis(200);
    env.broker().set_prompt_timeout(Some(timeout));
    let mut peer = Peer::connect(env.discovered_port()).await;
    let target = env.outside.join("slow/f");
    let sent = Instant::now();
    peer.send(write_query_line("1", &target).as_bytes()).await;
    let p1 = expect_prompt(&mut env, "1", &target).await;
    expect_resolved(&mut env, p1.id, Outcome::Deny, Decider::Timeout).await;
    peer.expect_line(&answer("1", "deny")).await;
    assert!(
        sent.elapsed() >= timeout,
        "denied after {:?}, before the timeout",
        sent.elapsed()
    );
    assert!(matches!(
        env.broker().answer(p1.id, &AnswerRequest::once()),
        Err(BrokerError::NotPending(id)) if id == p1.id
    ));
    let entry = last_entry_for(&env, &target);
    assert_eq!((entry.outcome, entry.by), (Outcome::Deny, Decider::Timeout));

    // Denied once, not remembered: the same request asks again.
    env.broker().set_prompt_timeout(None);
    peer.send(write_query_line("2", &target).as_bytes()).await;
    let p2 = expect_prompt(&mut env, "2", &target).await;
    env.broker()
        .answer(p2.id, &AnswerRequest::once())
        .expect("answer 2");
    peer.expect_line(&answer("2", "allow")).await;

    assert!(!project_file(&env).exists(), "project sandbox.json written");
    assert!(!global_file(&env).exists(), "global sandbox.json written");
    assert!(env.broker().grants().is_empty());
}

#[tokio::test]
async fn sandbox_disabled_and_policy_edits_on_disk_answer_without_a_prompt() {
    let mut env = TestEnv::start().await;
    let mut peer = Peer::connect(env.discovered_port()).await;

    env.write_project_policy(r#"{"enabled": false}"#);
    let anywhere = env.outside.join("anywhere/f");
    peer.send(write_query_line("1", &anywhere).as_bytes()).await;
    peer.expect_line(&answer("1", "allow")).await;
    let entry = last_entry_for(&env, &anywhere);
    assert_eq!(
        (entry.outcome, entry.by),
        (Outcome::Allow, Decider::SandboxDisabled)
    );

    // The sandbox back on, with a new allowWrite: covered paths pass by policy.
    let granted = env.outside.join("granted");
    env.write_project_policy(&format!(
        r#"{{"filesystem": {{"allowWrite": [{:?}]}}}}"#,
        path_str(&granted)
    ));
    let inside = granted.join("sub/f");
    peer.send(write_query_line("2", &inside).as_bytes()).await;
    peer.expect_line(&answer("2", "allow")).await;
    let entry = last_entry_for(&env, &inside);
    assert_eq!((entry.outcome, entry.by), (Outcome::Allow, Decider::Policy));
    assert_no_prompt_queued(&mut env);

    // Anything else asks again (enabled is true once more).
    let elsewhere = env.outside.join("elsewhere/f");
    peer.send(write_query_line("3", &elsewhere).as_bytes())
        .await;
    let p3 = expect_prompt(&mut env, "3", &elsewhere).await;
    env.broker()
        .answer(p3.id, &AnswerRequest::deny())
        .expect("answer 3");
    peer.expect_line(&answer("3", "deny")).await;
}

#[tokio::test]
async fn a_broken_sandbox_json_still_prompts_and_is_never_modified() {
    let mut env = TestEnv::start().await;
    let mut peer = Peer::connect(env.discovered_port()).await;
    // Broken JSON that would disable the sandbox if it were half-read.
    let broken = "{\"enabled\": false,\n  \"filesystem\": {\"allowWrite\": [\"/\"]\n";
    env.write_project_policy(broken);
    let file = project_file(&env);

    let target = env.outside.join("x/f");
    peer.send(write_query_line("1", &target).as_bytes()).await;
    let p1 = expect_prompt(&mut env, "1", &target).await;
    // A project grant cannot be written into a file that does not parse: the prompt stays.
    assert!(matches!(
        env.broker()
            .answer(p1.id, &AnswerRequest::new(ChoiceKey::Project)),
        Err(BrokerError::Policy(_))
    ));
    assert_eq!(
        env.broker()
            .pending()
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![p1.id]
    );
    env.broker()
        .answer(p1.id, &AnswerRequest::session())
        .expect("answer 1");
    peer.expect_line(&answer("1", "allow")).await;

    // The file has not parsed since the app started: no session grant allows what it
    // governs, so the grant's scope asks too (ARCHITECTURE.md, "Decision rules").
    let covered = env.outside.join("x/g");
    peer.send(write_query_line("2", &covered).as_bytes()).await;
    let p2 = expect_prompt(&mut env, "2", &covered).await;
    env.broker()
        .answer(p2.id, &AnswerRequest::once())
        .expect("answer 2");
    peer.expect_line(&answer("2", "allow")).await;
    let other = env.outside.join("y/f");
    peer.send(write_query_line("3", &other).as_bytes()).await;
    let p3 = expect_prompt(&mut env, "3", &other).await;
    env.broker()
        .answer(p3.id, &AnswerRequest::deny())
        .expect("answer 3");
    peer.expect_line(&answer("3", "deny")).await;

    assert_eq!(std::fs::read_to_string(&file).expect("still there"), broken);
    let names: Vec<String> = std::fs::read_dir(file.parent().expect("parent"))
        .expect("read .opencode")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["sandbox.json"], "temp files left behind");
    assert!(!global_file(&env).exists());
}

#[tokio::test]
async fn a_query_with_an_unusable_body_is_denied_at_once() {
    let mut env = TestEnv::start().await;
    let mut peer = Peer::connect(env.discovered_port()).await;
    let lines = concat!(
        // Unknown filesystem operation.
        r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"exec","path":"/tmp/x"}"#,
        "\n",
        // No path.
        r#"{"kind":"filesystem","state":"query","query_id":"2","operation":"write"}"#,
        "\n",
        // Network without a target.
        r#"{"kind":"network","state":"query","query_id":"3","operation":"connect"}"#,
        "\n",
        // A numeric id gets a numeric answer.
        r#"{"kind":"filesystem","state":"query","query_id":4,"operation":7,"path":"/tmp/x"}"#,
        "\n",
        // An id that cannot be echoed: nothing to answer.
        r#"{"kind":"filesystem","state":"query","query_id":true,"operation":"write","path":"/tmp/x"}"#,
        "\n",
        // The same unusable query again: answered once only.
        r#"{"kind":"filesystem","state":"query","query_id":"1","operation":"exec","path":"/tmp/x"}"#,
        "\n",
    );
    let good = env.outside.join("good/f");
    peer.send(format!("{lines}{}", write_query_line("5", &good)).as_bytes())
        .await;
    peer.expect_line(&answer("1", "deny")).await;
    peer.expect_line(&answer("2", "deny")).await;
    peer.expect_line(&answer("3", "deny")).await;
    peer.expect_line("{\"query_id\":4,\"action\":\"deny\"}\n")
        .await;
    // The first prompt is the good query's: none of the above became one.
    let p5 = expect_prompt(&mut env, "5", &good).await;
    env.broker()
        .answer(p5.id, &AnswerRequest::once())
        .expect("answer 5");
    peer.expect_line(&answer("5", "allow")).await;
    assert!(env.broker().pending().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_connections_under_a_session_grant_are_all_answered() {
    const CONNECTIONS: usize = 200;
    const QUERIES: usize = 5;
    let mut env = TestEnv::start().await;
    let port = env.discovered_port();
    let scope = env.outside.join("bulk");

    let mut seed = Peer::connect(port).await;
    let seed_path = scope.join("seed");
    seed.send(write_query_line("1", &seed_path).as_bytes())
        .await;
    let prompt = expect_prompt(&mut env, "1", &seed_path).await;
    env.broker()
        .answer(prompt.id, &AnswerRequest::session())
        .expect("answer seed");
    seed.expect_line(&answer("1", "allow")).await;

    let started = Instant::now();
    let mut peers = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        peers.push(Peer::connect(port).await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (i, mut peer) in peers.into_iter().enumerate() {
        let scope = scope.clone();
        tasks.spawn(async move {
            let batch: String = (1..=QUERIES)
                .map(|j| write_query_line(&j.to_string(), &scope.join(format!("c{i}/f{j}"))))
                .collect();
            peer.send(batch.as_bytes()).await;
            for j in 1..=QUERIES {
                peer.expect_line(&answer(&j.to_string(), "allow")).await;
            }
            i
        });
    }
    let mut done = BTreeSet::new();
    tokio::time::timeout(EVENT_TIMEOUT, async {
        while let Some(finished) = tasks.join_next().await {
            done.insert(finished.expect("a connection's task failed"));
        }
    })
    .await
    .expect("not every connection was answered in time");
    let elapsed = started.elapsed();
    assert_eq!(done.len(), CONNECTIONS);
    assert!(env.broker().pending().is_empty());
    assert_no_prompt_queued(&mut env);
    eprintln!("{CONNECTIONS} connections x {QUERIES} queries answered in {elapsed:?}");
}
