//! One remote's connection: a child `ssh … -- DESTINATION landstrip-tray ctl bridge`, its
//! lines read (bounded) and handed to the broker, answers written to it and their replies
//! waited for; when it ends, the state told from `ssh`'s words and the next attempt after
//! the backoff. While connected and idle nothing wakes: the task waits on the child's
//! output, the answers to send and the stop signal only (`ssh`'s own keep-alive finds a
//! dead connection).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, watch};

use super::state::{classify, Backoff, RemoteState, MAX_STDERR};
use super::wire::{self, FromBridge, Hello, MAX_LINE};
use super::Status;
use crate::app_settings::remote::RemoteConfig;
use crate::decision::answer::AnswerRequest;
use crate::decision::broker::{Answered, Broker, BrokerError, PromptId, RemoteHost, RemoteLink};
use crate::decision::scope::PolicyTarget;

/// How long an answer waits for the remote's reply before it is reported not delivered.
pub const ANSWER_WAIT: Duration = Duration::from_secs(20);

/// How long the bridge may take to say hello once `ssh` runs.
const HELLO_WAIT: Duration = Duration::from_secs(60);

/// `ssh`'s keep-alive, in seconds: a dead connection is found after three missed.
const ALIVE_SECS: u32 = 15;

/// The program run on the remote.
pub const REMOTE_COMMAND: [&str; 3] = ["landstrip-tray", "ctl", "bridge"];

/// `ssh`'s arguments for a remote: keys or the agent only, no prompt of any kind, host
/// keys checked strictly, the destination after `--`.
pub fn ssh_args(config: &RemoteConfig) -> Vec<String> {
    let mut args: Vec<String> = [
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "KbdInteractiveAuthentication=no",
        "-o",
        "ConnectTimeout=20",
    ]
    .map(str::to_owned)
    .into();
    args.push("-o".into());
    args.push(format!("ServerAliveInterval={ALIVE_SECS}"));
    if let Some(port) = config.port {
        args.push("-p".into());
        args.push(port.to_string());
    }
    if let Some(identity) = &config.identity {
        args.push("-i".into());
        args.push(identity.to_string_lossy().into_owned());
        args.push("-o".into());
        args.push("IdentitiesOnly=yes".into());
    }
    if let Some(known) = &config.known_hosts {
        args.push("-o".into());
        args.push(format!("UserKnownHostsFile={}", known.to_string_lossy()));
    }
    args.push("--".into());
    args.push(config.destination.clone());
    args.extend(REMOTE_COMMAND.map(str::to_owned));
    args
}

/// What came back for one request: an answer's outcome or a preview.
enum Back {
    Answered(Answered),
    Previewed(serde_json::Value),
}

type Reply = Result<Back, BrokerError>;

/// One connection's way to the remote, as the broker's remote prompts hold it.
pub(super) struct Link {
    host: RemoteHost,
    out: mpsc::UnboundedSender<String>,
    waiting: Mutex<Waiting>,
    next_seq: AtomicU64,
}

/// The answers waiting for their replies, and whether the connection has ended (after
/// which none waits: under one lock, so none can slip in after the end was told).
#[derive(Default)]
struct Waiting {
    closed: bool,
    replies: HashMap<u64, std_mpsc::SyncSender<Reply>>,
}

impl Link {
    fn new(host: RemoteHost, out: mpsc::UnboundedSender<String>) -> Self {
        Self {
            host,
            out,
            waiting: Mutex::new(Waiting::default()),
            next_seq: AtomicU64::new(1),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lost(&self) -> BrokerError {
        BrokerError::NotDelivered(format!("the connection to {} was lost", self.host.name))
    }

    /// The connection ended (or the remote was removed): every answer still waiting hears
    /// at once that it was not delivered, and so does every later one.
    fn close(&self) {
        let waiting: Vec<_> = {
            let mut waiting = self.waiting();
            waiting.closed = true;
            waiting.replies.drain().collect()
        };
        for (_, tx) in waiting {
            let _ = tx.try_send(Err(self.lost()));
        }
    }

    fn reply(&self, seq: u64, reply: Reply) {
        let tx = self.waiting().replies.remove(&seq);
        if let Some(tx) = tx {
            let _ = tx.try_send(reply);
        }
    }
}

/// Closes its link when dropped: however a connection ends — the bridge gone, or its task
/// dropped because the remote was removed or the app quits — no answer waits out
/// [`ANSWER_WAIT`] on it.
struct CloseOnDrop(Arc<Link>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Link {
    /// Sends one request line (`{KIND: {"seq", …body}}`) and waits, at most
    /// [`ANSWER_WAIT`], for what comes back for it.
    fn ask(&self, kind: &str, mut body: serde_json::Value) -> Reply {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        body["seq"] = seq.into();
        let line = serde_json::json!({ kind: body });
        let (tx, rx) = std_mpsc::sync_channel(1);
        {
            let mut waiting = self.waiting();
            if waiting.closed {
                return Err(self.lost());
            }
            waiting.replies.insert(seq, tx);
        }
        if self.out.send(line.to_string()).is_err() {
            self.reply(seq, Err(self.lost()));
        }
        let reply = rx.recv_timeout(ANSWER_WAIT).unwrap_or_else(|_| {
            Err(BrokerError::NotDelivered(format!(
                "{} did not reply within {}s",
                self.host.name,
                ANSWER_WAIT.as_secs()
            )))
        });
        self.waiting().replies.remove(&seq);
        reply
    }
}

impl RemoteLink for Link {
    fn answer(
        &self,
        remote_id: PromptId,
        request: &AnswerRequest,
    ) -> Result<Answered, BrokerError> {
        let body = serde_json::json!({"id": remote_id, "answer": request});
        match self.ask("answer", body)? {
            Back::Answered(answered) => Ok(answered),
            Back::Previewed(_) => Err(BrokerError::NotDelivered("a reply out of turn".into())),
        }
    }

    fn preview(
        &self,
        remote_id: PromptId,
        target: PolicyTarget,
        never: bool,
    ) -> Result<serde_json::Value, BrokerError> {
        let body = serde_json::json!({"id": remote_id, "target": target, "never": never});
        match self.ask("preview", body)? {
            Back::Previewed(preview) => Ok(preview),
            Back::Answered(_) => Err(BrokerError::NotDelivered("a reply out of turn".into())),
        }
    }
}

/// Keeps one remote connected until `stop` turns true.
pub(super) async fn run(
    config: RemoteConfig,
    broker: Broker,
    status: Arc<Status>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::default();
    loop {
        status.set(RemoteState::Connecting, "starting ssh".to_owned());
        let connected = tokio::select! {
            worked = attempt(&config, &broker, &status) => worked,
            _ = stop.wait_for(|s| *s) => false,
        };
        broker.drop_host(&config.name);
        status.changed();
        if *stop.borrow() {
            return;
        }
        if connected {
            backoff.reset();
        }
        let wait = backoff.next_wait();
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One connection, start to end; true when the bridge said hello (a connection that
/// worked resets the backoff). The state is left saying how it ended.
async fn attempt(config: &RemoteConfig, broker: &Broker, status: &Status) -> bool {
    let mut child = match Command::new("ssh")
        .args(ssh_args(config))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            status.set(RemoteState::Failed, format!("cannot run ssh: {e}"));
            return false;
        }
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        status.set(RemoteState::Failed, "ssh's pipes are missing".to_owned());
        return false;
    };
    let stderr = tokio::spawn(read_bounded(stderr));
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    let first = tokio::time::timeout(HELLO_WAIT, read_line(&mut lines, &mut line)).await;
    let hello = match first {
        Ok(Ok(true)) => wire::hello(&line),
        Ok(Ok(false)) | Ok(Err(_)) => {
            let (state, detail) = ended(child, stderr, &config.destination).await;
            status.set(state, detail);
            return false;
        }
        Err(_) => {
            status.set(
                RemoteState::Unreachable,
                format!("no answer within {}s", HELLO_WAIT.as_secs()),
            );
            return false;
        }
    };
    let home = match hello {
        Hello::Ready { version, home } => {
            status.set(
                RemoteState::Connected,
                format!("connected (landstrip-tray {version} there)"),
            );
            home
        }
        Hello::NotRunning => {
            status.set(
                RemoteState::NotRunning,
                "landstrip-tray is not running there: start it (`landstrip-tray --headless`)"
                    .to_owned(),
            );
            return false;
        }
        Hello::Mismatch(n) => {
            status.set(
                RemoteState::ProtocolMismatch,
                format!(
                    "its bridge speaks version {n}, this app {}: update one of them",
                    wire::BRIDGE_PROTOCOL
                ),
            );
            return false;
        }
        Hello::Refused(words) => {
            status.set(RemoteState::Failed, format!("its bridge refused: {words}"));
            return false;
        }
        Hello::Garbled => {
            status.set(
                RemoteState::Failed,
                "it did not answer as a landstrip-tray bridge (does the login print text?)"
                    .to_owned(),
            );
            return false;
        }
    };
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let link = Arc::new(Link::new(
        RemoteHost {
            name: config.name.clone(),
            home,
        },
        out_tx,
    ));
    let closing = CloseOnDrop(link.clone());
    // Lines are read by a task of their own: a read is never cut short by an answer
    // going out (a line half read would be lost).
    let (line_tx, line_rx) = mpsc::channel(16);
    let reader = tokio::spawn(async move {
        let mut line = Vec::new();
        loop {
            let read = match read_line(&mut lines, &mut line).await {
                Ok(true) => Ok(std::mem::take(&mut line)),
                // The end: the channel closing says so.
                Ok(false) => return,
                Err(e) => Err(e),
            };
            let failed = read.is_err();
            if line_tx.send(read).await.is_err() || failed {
                return;
            }
        }
    });
    let why = serve(&link, broker, status, line_rx, stdin, out_rx).await;
    reader.abort();
    drop(closing);
    drop(child);
    status.set(
        RemoteState::Unreachable,
        format!("the connection was lost: {why}"),
    );
    true
}

/// Reads the bridge's lines and writes the answers until either side ends; what ended it.
async fn serve(
    link: &Arc<Link>,
    broker: &Broker,
    status: &Status,
    mut lines: mpsc::Receiver<Result<Vec<u8>, String>>,
    mut stdin: tokio::process::ChildStdin,
    mut out: mpsc::UnboundedReceiver<String>,
) -> String {
    let as_link: Arc<dyn RemoteLink> = link.clone();
    loop {
        tokio::select! {
            read = lines.recv() => match read {
                Some(Ok(line)) => match wire::from_bridge(&line) {
                    Some(FromBridge::Pending(list)) => {
                        broker.sync_remote(&link.host, list, &as_link);
                        status.changed();
                    }
                    Some(FromBridge::Answered { seq, answered }) => {
                        link.reply(seq, Ok(Back::Answered(answered)));
                    }
                    Some(FromBridge::Previewed { seq, preview }) => {
                        link.reply(seq, Ok(Back::Previewed(preview)));
                    }
                    Some(FromBridge::Failed { seq, error }) => {
                        link.reply(seq, Err(BrokerError::RemoteRefused(error)));
                    }
                    // A line of a newer bridge: ignored.
                    None => {}
                },
                Some(Err(e)) => return e,
                None => return "the bridge ended".to_owned(),
            },
            Some(mut text) = out.recv() => {
                text.push('\n');
                if let Err(e) = stdin.write_all(text.as_bytes()).await {
                    return format!("writing to ssh: {e}");
                }
            }
        }
    }
}

/// Reads one line into `line` (without its newline), at most [`MAX_LINE`] bytes; false at
/// the end. A longer line is an error: the connection is dropped.
async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> Result<bool, String> {
    line.clear();
    let n = reader
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', line)
        .await
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > MAX_LINE {
        return Err(format!("a line longer than {MAX_LINE} bytes"));
    }
    Ok(true)
}

/// At most [`MAX_STDERR`] bytes of `ssh`'s standard error (the rest read and dropped, so
/// `ssh` never blocks on it).
async fn read_bounded(mut from: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_STDERR.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// `ssh` ended before the bridge spoke: its exit and its words say why.
async fn ended(
    mut child: Child,
    stderr: tokio::task::JoinHandle<String>,
    destination: &str,
) -> (RemoteState, String) {
    let exit = match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        Ok(Ok(status)) => status.code(),
        _ => None,
    };
    let words = tokio::time::timeout(Duration::from_secs(5), stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    classify(&words, exit, destination)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_gets_no_way_to_prompt_and_the_destination_after_dashes() {
        let config = RemoteConfig {
            name: "d".into(),
            destination: "u@h".into(),
            port: Some(2222),
            identity: Some("/k/id".into()),
            known_hosts: Some("/k/known".into()),
        };
        let args = ssh_args(&config);
        let text = args.join(" ");
        assert!(text.starts_with("-T -o BatchMode=yes -o StrictHostKeyChecking=yes"));
        assert!(
            text.contains("-p 2222 -i /k/id -o IdentitiesOnly=yes -o UserKnownHostsFile=/k/known")
        );
        assert!(text.ends_with("-- u@h landstrip-tray ctl bridge"), "{text}");
    }

    #[test]
    fn an_answer_on_its_way_hears_at_once_when_the_connection_is_dropped() {
        let (out, mut sent) = mpsc::unbounded_channel();
        let host = RemoteHost {
            name: "devbox".into(),
            home: "/home/r".into(),
        };
        let link = Arc::new(Link::new(host, out));
        let closing = CloseOnDrop(link.clone());
        let (done_tx, done) = std_mpsc::channel();
        let answering = link.clone();
        std::thread::spawn(move || {
            let _ = done_tx.send(answering.answer(3, &AnswerRequest::once()));
        });
        // The answer went out and waits for its reply; then the connection's task is
        // dropped (the remote removed, the app quitting).
        assert!(sent.blocking_recv().expect("sent").contains("\"answer\""));
        drop(closing);
        // Well inside ANSWER_WAIT (20 s): without the close it would wait that out.
        let result = done
            .recv_timeout(ANSWER_WAIT / 4)
            .expect("the answer returned at once");
        assert!(
            matches!(&result, Err(BrokerError::NotDelivered(w)) if w.contains("lost")),
            "{result:?}"
        );
        // A later answer does not wait either.
        assert!(matches!(
            link.answer(4, &AnswerRequest::once()),
            Err(BrokerError::NotDelivered(_))
        ));
    }

    #[tokio::test]
    async fn lines_are_bounded() {
        let mut long = vec![b'x'; MAX_LINE + 10];
        long.push(b'\n');
        let mut reader = BufReader::new(&long[..]);
        let mut line = Vec::new();
        assert!(read_line(&mut reader, &mut line).await.is_err());
        let mut reader = BufReader::new(&b"{}\nlast"[..]);
        assert_eq!(read_line(&mut reader, &mut line).await, Ok(true));
        assert_eq!(line, b"{}");
        assert_eq!(read_line(&mut reader, &mut line).await, Ok(true));
        assert_eq!(line, b"last");
        assert_eq!(read_line(&mut reader, &mut line).await, Ok(false));
    }
}
