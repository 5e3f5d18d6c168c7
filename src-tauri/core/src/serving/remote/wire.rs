//! The bridge's lines as the desktop reads them (`landstrip-tray ctl bridge` writes them,
//! `surfaces/bridge.rs`). Everything here came from another machine: untrusted. A line is
//! bounded ([`MAX_LINE`], by the reader), a list too ([`MAX_ITEMS`]); every text is made
//! printable and shortened as a local command line is (`origin::text`), secrets masked
//! again; a request is rebuilt through the query decoder landstrip's own lines go through,
//! so what it cannot hold (an unknown kind, a path too long) is dropped.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::decision::after_secret::SecretRead;
use crate::decision::broker::{Answered, LeftWaiting, PendingPrompt, PromptId, RemotePrompt};
use crate::origin::mask::mask_text;
use crate::origin::text::{printable, shorten_middle};
use crate::origin::{ChainLink, OpencodeCall, Origin};
use crate::wire::protocol::{decode_line, Action, Line};
use crate::words::Shown;

/// The protocol's number, the first line's `landstrip_tray_bridge`.
pub const BRIDGE_PROTOCOL: u64 = 1;

/// The longest line read from a bridge, in bytes.
pub const MAX_LINE: usize = 1 << 20;

/// At most this many of a remote's requests are taken from one list.
pub const MAX_ITEMS: usize = 256;

/// The longest text kept of one field.
pub const MAX_TEXT: usize = 4096;

/// At most this many links of a command's chain are kept.
const MAX_CHAIN: usize = 32;

/// What the bridge's first line said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    /// Ready: the remote app's version and its user's home (an absolute path).
    Ready {
        /// The remote app's version.
        version: String,
        /// The remote user's home, which that machine's paths are judged by.
        home: PathBuf,
    },
    /// The remote app is not running.
    NotRunning,
    /// The bridge could not serve (refused inside a sandbox, say): its words.
    Refused(String),
    /// Another protocol number.
    Mismatch(u64),
    /// Not a bridge's first line at all.
    Garbled,
}

#[derive(Deserialize)]
struct WireHello {
    landstrip_tray_bridge: u64,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Reads the bridge's first line.
pub fn hello(line: &[u8]) -> Hello {
    let Ok(hello) = serde_json::from_slice::<WireHello>(line) else {
        return Hello::Garbled;
    };
    if hello.landstrip_tray_bridge != BRIDGE_PROTOCOL {
        return Hello::Mismatch(hello.landstrip_tray_bridge);
    }
    // A home that is not a plain absolute path would judge nothing sensitive: no link.
    let home = hello
        .home
        .filter(|h| h.len() <= MAX_TEXT && clean(h) == *h)
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    match (hello.error.as_deref(), hello.version, home) {
        (Some("not_running"), _, _) => Hello::NotRunning,
        (Some(error), _, _) => Hello::Refused(clean(hello.message.as_deref().unwrap_or(error))),
        (None, Some(version), Some(home)) => Hello::Ready {
            version: clean(&version),
            home,
        },
        (None, _, _) => Hello::Garbled,
    }
}

/// One later line from the bridge.
#[derive(Debug)]
pub enum FromBridge {
    /// The remote's waiting requests now (at most [`MAX_ITEMS`]).
    Pending(Vec<RemotePrompt>),
    /// The remote answered request `seq`.
    Answered {
        /// The desktop's sequence number.
        seq: u64,
        /// What the remote did.
        answered: Answered,
    },
    /// The remote's preview for request `seq`, as it came (the dialog reads it as a
    /// `GrantPreview` and cleans its text, `surfaces/preview.rs`).
    Previewed {
        /// The desktop's sequence number.
        seq: u64,
        /// The preview.
        preview: serde_json::Value,
    },
    /// The remote refused request `seq`.
    Failed {
        /// The desktop's sequence number.
        seq: u64,
        /// Why, in the remote's words (cleaned).
        error: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireLine {
    Pending(Vec<serde_json::Value>),
    Answered {
        seq: u64,
        reply: WireReply,
    },
    Previewed {
        seq: u64,
        preview: serde_json::Value,
    },
    Failed {
        seq: u64,
        error: String,
    },
}

#[derive(Deserialize)]
struct WireReply {
    action: Action,
    #[serde(default)]
    persisted: Option<WirePersisted>,
    #[serde(default)]
    left_waiting: Vec<LeftWaiting>,
}

#[derive(Deserialize)]
struct WirePersisted {
    file: PathBuf,
    entry: String,
}

/// Reads a line after the first; None when it is not one the protocol has.
pub fn from_bridge(line: &[u8]) -> Option<FromBridge> {
    Some(match serde_json::from_slice::<WireLine>(line).ok()? {
        WireLine::Pending(items) => FromBridge::Pending(
            items
                .into_iter()
                .take(MAX_ITEMS)
                .filter_map(|v| serde_json::from_value::<WireItem>(v).ok())
                .filter_map(WireItem::into_prompt)
                .collect(),
        ),
        WireLine::Answered { seq, reply } => FromBridge::Answered {
            seq,
            answered: Answered {
                action: reply.action,
                grant: None,
                persisted: reply.persisted.map(|p| {
                    let file = PathBuf::from(clean(&p.file.to_string_lossy()));
                    (file, clean(&p.entry))
                }),
                also_answered: Vec::new(),
                left_waiting: reply
                    .left_waiting
                    .into_iter()
                    .take(MAX_ITEMS)
                    .map(|l| LeftWaiting {
                        id: l.id,
                        reason: clean(&l.reason),
                    })
                    .collect(),
            },
        },
        WireLine::Previewed { seq, preview } => FromBridge::Previewed { seq, preview },
        WireLine::Failed { seq, error } => FromBridge::Failed {
            seq,
            error: clean(&error),
        },
    })
}

/// A remote's `PendingItem`, as far as the desktop reads it.
#[derive(Deserialize)]
struct WireItem {
    id: PromptId,
    project: String,
    #[serde(default)]
    session: Option<String>,
    kind: String,
    operation: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    requested_path: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    syscall: Option<String>,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default)]
    exe: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    session_scope: Option<String>,
    #[serde(default)]
    received_ms: u64,
    #[serde(default)]
    origin: Option<Origin>,
    #[serde(default)]
    after_secret: Option<SecretRead>,
}

impl WireItem {
    /// The prompt to show, every text cleaned, its query rebuilt by the query decoder;
    /// None when it does not make a query.
    fn into_prompt(self) -> Option<RemotePrompt> {
        let opt = |t: &Option<String>| t.as_deref().map(clean);
        let process = serde_json::json!({
            "pid": self.pid, "exe": opt(&self.exe), "cwd": opt(&self.cwd),
        });
        let line = match self.kind.as_str() {
            "filesystem" => serde_json::json!({
                "kind": "filesystem", "state": "query", "query_id": self.id,
                "operation": self.operation, "path": clean(self.path.as_deref()?),
                "requested_path": opt(&self.requested_path), "reason": opt(&self.reason),
                "syscall": opt(&self.syscall), "process": process,
            }),
            "network" => serde_json::json!({
                "kind": "network", "state": "query", "query_id": self.id,
                "operation": self.operation, "target": clean(self.target.as_deref()?),
                "syscall": opt(&self.syscall), "process": process,
            }),
            _ => return None,
        };
        let Line::Query(query) = decode_line(line.to_string().as_bytes()) else {
            return None;
        };
        Some(RemotePrompt {
            remote_id: self.id,
            prompt: PendingPrompt {
                id: 0,
                connection: 0,
                project: PathBuf::from(clean(&self.project)),
                session: opt(&self.session),
                query: Arc::new(query),
                received_ms: self.received_ms,
                session_scope: opt(&self.session_scope).map(PathBuf::from),
                origin: self.origin.map(|o| Arc::new(clean_origin(o))),
                after_secret: self.after_secret.map(|r| SecretRead {
                    path: clean(&r.path),
                    what: clean(&r.what),
                    at_ms: r.at_ms,
                }),
                host: None,
            },
        })
    }
}

/// Text from another machine as a local command line's words are shown: every control or
/// text-reordering character written as an escape, at most [`MAX_TEXT`] characters.
pub fn clean(text: &str) -> String {
    // Shortened first, so the work done on a huge field is bounded.
    shorten_middle(&printable(&shorten_middle(text, MAX_TEXT * 2)), MAX_TEXT)
}

/// A command line or free text (a description, a title) from another machine: [`clean`]
/// with its secrets masked again, as a local command's are.
pub fn clean_command(text: &str) -> String {
    clean(&mask_text(&shorten_middle(text, MAX_TEXT * 2)))
}

fn clean_shown(shown: Shown) -> Shown {
    Shown {
        text: clean_command(&shown.text),
        full: clean_command(&shown.full),
    }
}

fn clean_origin(origin: Origin) -> Origin {
    let chain_cut = origin.chain_cut || origin.chain.len() > MAX_CHAIN;
    let skip = origin.chain.len().saturating_sub(MAX_CHAIN);
    Origin {
        // The links nearest the asking process are kept.
        chain: origin
            .chain
            .into_iter()
            .skip(skip)
            .map(|l| ChainLink {
                pid: l.pid,
                exe: l.exe.as_deref().map(clean),
                program: clean(&l.program),
                argv: clean_shown(l.argv),
                command: clean_shown(l.command),
            })
            .collect(),
        chain_cut,
        opencode: origin.opencode.map(|c| OpencodeCall {
            session: clean(&c.session),
            title: c.title.as_deref().map(clean_command),
            description: c.description.as_deref().map(clean_command),
            command: c.command.as_deref().map(clean_command),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::protocol::QueryKind;

    #[test]
    fn the_first_line_is_checked() {
        assert_eq!(
            hello(br#"{"landstrip_tray_bridge":1,"version":"0.9","home":"/home/bob"}"#),
            Hello::Ready {
                version: "0.9".into(),
                home: "/home/bob".into()
            }
        );
        // Without the remote's home, or with one that is not a plain absolute path, its
        // paths could not be judged: no link.
        for line in [
            &br#"{"landstrip_tray_bridge":1,"version":"0.9"}"#[..],
            br#"{"landstrip_tray_bridge":1,"version":"0.9","home":"bob"}"#,
            br#"{"landstrip_tray_bridge":1,"version":"0.9","home":"/home/b\u001bob"}"#,
        ] {
            assert_eq!(hello(line), Hello::Garbled);
        }
        assert_eq!(
            hello(br#"{"landstrip_tray_bridge":1,"error":"not_running"}"#),
            Hello::NotRunning
        );
        assert_eq!(
            hello(br#"{"landstrip_tray_bridge":2,"version":"9"}"#),
            Hello::Mismatch(2)
        );
        assert_eq!(hello(b"Welcome to my server"), Hello::Garbled);
    }

    #[test]
    fn items_are_cleaned_capped_and_rebuilt_as_queries() {
        let item = |id: u64, path: &str| {
            serde_json::json!({"id": id, "connection": 1, "project": "/home/r/p",
                "kind": "filesystem", "operation": "write", "path": path,
                "reason": "allow_miss", "exe": "/bin/\u{202e}sh", "received_ms": 5, "age_ms": 1,
                "origin": {"chain": [{"pid": 3, "program": "curl\u{1b}[2J",
                    "argv": {"text": "curl -H 'Authorization: Bearer abcdefghijklmnop'", "full": "x"},
                    "command": {"text": "c", "full": "c"}}], "chain_cut": false}})
        };
        let mut items: Vec<_> = (0..(MAX_ITEMS as u64 + 10))
            .map(|i| item(i, "/home/r/p/out"))
            .collect();
        items[0] = item(0, &format!("/home/r/{}\u{7}", "x".repeat(10 * MAX_TEXT)));
        items[1] = serde_json::json!({"id": 1, "kind": "launch", "operation": "x", "project": "/"});
        let line = serde_json::to_vec(&serde_json::json!({ "pending": items })).unwrap();
        let Some(FromBridge::Pending(list)) = from_bridge(&line) else {
            panic!("not a list")
        };
        assert_eq!(list.len(), MAX_ITEMS - 1, "capped, the bad kind dropped");
        let QueryKind::Filesystem(fs) = &list[0].prompt.query.kind else {
            panic!()
        };
        assert!(fs.path.chars().count() <= MAX_TEXT, "shortened");
        assert!(
            fs.path.contains("\\x07"),
            "{}",
            &fs.path[fs.path.len() - 10..]
        );
        let second = &list[1].prompt;
        let exe = second
            .query
            .process
            .as_ref()
            .unwrap()
            .exe
            .as_deref()
            .unwrap();
        assert_eq!(exe, "/bin/\\u{202e}sh");
        let link = &second.origin.as_ref().unwrap().chain[0];
        assert_eq!(link.program, "curl\\x1b[2J");
        assert!(
            !link.argv.text.contains("abcdefghijklmnop"),
            "{}",
            link.argv.text
        );
        assert!(from_bridge(b"{\"frob\":1}").is_none());
    }

    #[test]
    fn answers_and_refusals_are_read() {
        let ok = br#"{"answered":{"seq":3,"reply":{"id":4,"action":"allow","grant":1,"persisted":{"file":"/home/r/p/sandbox.json","entry":"out"},"also_answered":[5],"left_waiting":[]}}}"#;
        match from_bridge(ok) {
            Some(FromBridge::Answered { seq: 3, answered }) => {
                assert_eq!(answered.action, Action::Allow);
                assert_eq!(answered.grant, None);
                assert!(answered.also_answered.is_empty());
                assert_eq!(answered.persisted.unwrap().1, "out");
            }
            other => panic!("{other:?}"),
        }
        match from_bridge(br#"{"failed":{"seq":4,"error":"no\nway"}}"#) {
            Some(FromBridge::Failed { seq: 4, error }) => assert_eq!(error, "no\\nway"),
            other => panic!("{other:?}"),
        }
    }
}
