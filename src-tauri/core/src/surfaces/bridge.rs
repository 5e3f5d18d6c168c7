//! `landstrip-tray ctl bridge`, the remote end of a desktop's SSH link (docs/ARCHITECTURE.md,
//! "Remote machines"): it speaks to this user's running instance over the control socket
//! and to its caller (the desktop's `ssh`) in JSON lines on stdin and stdout.
//!
//! Out: first `{"landstrip_tray_bridge":1,"version":…,"home":…}` (or `"error":"not_running"` /
//! `"refused"` and an exit), then `{"pending":[…]}` whenever this machine's own waiting
//! requests change, and `{"answered":{"seq","reply"}}` / `{"failed":{"seq","error"}}` for
//! each answer. In: `{"answer":{"seq","id","answer"}}` only, for a request it listed; the
//! answer goes through the instance's own answer path (`Request::Answer`), so its rules
//! (sensitive confirmation, Always roots, after a secret) decide and its files change.
//! Nothing else passes: no other control request can be sent through it. Its control
//! requests are refused inside a sandbox (`Request::Watch` changes state), so a sandboxed
//! program cannot serve as a bridge.

use std::collections::HashSet;
use std::path::Path;

use serde::Deserialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::control::{Client, ControlError, PendingItem, Reply, Request, Response, MAX_REQUEST};
use crate::decision::answer::AnswerRequest;
use crate::decision::broker::PromptId;
use crate::decision::scope::PolicyTarget;
use crate::serving::remote::wire::BRIDGE_PROTOCOL;

/// How the bridge ended.
#[derive(Debug, PartialEq, Eq)]
pub enum BridgeEnd {
    /// Its caller closed stdin.
    Done,
    /// It could not serve (its first line said why) or the instance went away.
    Failed,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum FromDesktop {
    Answer {
        seq: u64,
        id: PromptId,
        answer: AnswerRequest,
    },
    Preview {
        seq: u64,
        id: PromptId,
        target: PolicyTarget,
        #[serde(default)]
        never: bool,
    },
}

type Snapshot = Result<Vec<PendingItem>, String>;

/// Runs the bridge between the instance at `socket` and `input`/`output`; `home` is this
/// user's home, which the desktop judges this machine's paths by (a path under it may be
/// a sensitive location here that is not one there).
pub async fn run(
    socket: &Path,
    home: &Path,
    input: impl AsyncBufRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin,
) -> BridgeEnd {
    let hello = |extra: serde_json::Value| {
        let mut line = serde_json::json!({ "landstrip_tray_bridge": BRIDGE_PROTOCOL });
        if let (Some(line), Some(extra)) = (line.as_object_mut(), extra.as_object()) {
            line.extend(extra.clone());
        }
        line
    };
    let mut watcher = match Client::connect(socket).await {
        Ok(client) => client,
        Err(ControlError::NotRunning(_)) => {
            let _ = write(
                &mut output,
                &hello(serde_json::json!({"error": "not_running"})),
            )
            .await;
            return BridgeEnd::Failed;
        }
        Err(e) => {
            let refused = serde_json::json!({"error": "failed", "message": e.to_string()});
            let _ = write(&mut output, &hello(refused)).await;
            return BridgeEnd::Failed;
        }
    };
    let first = match watch(&mut watcher, None).await {
        Ok(items) => items,
        Err(message) => {
            let refused = serde_json::json!({"error": "refused", "message": message});
            let _ = write(&mut output, &hello(refused)).await;
            return BridgeEnd::Failed;
        }
    };
    let version = serde_json::json!({"version": env!("CARGO_PKG_VERSION"), "home": home});
    if write(&mut output, &hello(version)).await.is_err() {
        return BridgeEnd::Failed;
    }
    let Ok(mut answerer) = Client::connect(socket).await else {
        return BridgeEnd::Failed;
    };
    let mut listed = listed_ids(&first);
    if write(&mut output, &serde_json::json!({ "pending": first }))
        .await
        .is_err()
    {
        return BridgeEnd::Failed;
    }
    let (snap_tx, mut snapshots) = mpsc::channel::<Snapshot>(4);
    let known = first.iter().map(|i| i.id).collect();
    let watching = tokio::spawn(watch_loop(watcher, known, snap_tx));
    let (line_tx, mut lines) = mpsc::channel::<Vec<u8>>(16);
    let reading = tokio::spawn(read_lines(input, line_tx));
    let end = loop {
        tokio::select! {
            snapshot = snapshots.recv() => match snapshot {
                Some(Ok(items)) => {
                    listed = listed_ids(&items);
                    if write(&mut output, &serde_json::json!({ "pending": items })).await.is_err() {
                        break BridgeEnd::Failed;
                    }
                }
                Some(Err(_)) | None => break BridgeEnd::Failed,
            },
            line = lines.recv() => match line {
                Some(line) => {
                    // Only answers and their previews pass; anything else is dropped.
                    let (seq, id, request) = match serde_json::from_slice(&line) {
                        Ok(FromDesktop::Answer { seq, id, answer }) => (seq, id, Request::Answer { id, answer }),
                        Ok(FromDesktop::Preview { seq, id, target, never }) => {
                            (seq, id, Request::PromptPreview { id, target, never })
                        }
                        Err(_) => continue,
                    };
                    let reply = if listed.contains(&id) {
                        match answerer.request(&request).await {
                            Ok(Response::Ok(Reply::Answered(reply))) => serde_json::json!({"answered": {"seq": seq, "reply": reply}}),
                            Ok(Response::Ok(Reply::PromptPreview(preview))) => serde_json::json!({"previewed": {"seq": seq, "preview": preview}}),
                            Ok(Response::Error { message }) => serde_json::json!({"failed": {"seq": seq, "error": message}}),
                            Ok(Response::Ok(_)) => serde_json::json!({"failed": {"seq": seq, "error": "unexpected reply"}}),
                            Err(e) => serde_json::json!({"failed": {"seq": seq, "error": e.to_string()}}),
                        }
                    } else {
                        serde_json::json!({"failed": {"seq": seq, "error": format!("prompt {id} was not listed here (it may be answered already)")}})
                    };
                    if write(&mut output, &reply).await.is_err() {
                        break BridgeEnd::Failed;
                    }
                }
                None => break BridgeEnd::Done,
            },
        }
    };
    watching.abort();
    reading.abort();
    end
}

fn listed_ids(items: &[PendingItem]) -> HashSet<PromptId> {
    items.iter().map(|i| i.id).collect()
}

/// Asks the instance for its own pending prompts (the oldest [`crate::serving::remote::wire::MAX_ITEMS`]) once they
/// differ from `known`.
async fn watch(client: &mut Client, known: Option<Vec<PromptId>>) -> Snapshot {
    match client.request(&Request::Watch { known }).await {
        Ok(Response::Ok(Reply::Pending(items))) => Ok(items),
        Ok(Response::Error { message }) => Err(message),
        Ok(Response::Ok(_)) => Err("unexpected reply".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

async fn watch_loop(mut client: Client, mut known: Vec<PromptId>, out: mpsc::Sender<Snapshot>) {
    loop {
        let snapshot = watch(&mut client, Some(known.clone())).await;
        if let Ok(items) = &snapshot {
            known = items.iter().map(|i| i.id).collect();
        }
        let failed = snapshot.is_err();
        if out.send(snapshot).await.is_err() || failed {
            return;
        }
    }
}

/// The caller's lines, each at most [`MAX_REQUEST`] bytes (a longer one ends the bridge).
async fn read_lines(mut input: impl AsyncBufRead + Unpin, out: mpsc::Sender<Vec<u8>>) {
    loop {
        let mut line = Vec::new();
        let read = (&mut input)
            .take(MAX_REQUEST as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) if line.len() > MAX_REQUEST => return,
            Ok(_) => {
                if out.send(line).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn write(
    output: &mut (impl AsyncWrite + Unpin),
    line: &serde_json::Value,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    output.write_all(&bytes).await?;
    output.flush().await
}
