//! Pieces the core's integration tests share: a landstrip-like run on a query listener
//! (real TCP) and the query trap it sends.

// Each test file compiles this module on its own and uses only some of it.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Runs `work` within `bound`, failing the test with `what` otherwise.
pub async fn bounded<T>(
    bound: Duration,
    what: &str,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(bound, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {bound:?}"))
}

/// One run's connection to a project's query listener, speaking landstrip's side.
pub struct Run {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    bound: Duration,
}

impl Run {
    /// Connects to the listener on `port`; every wait on this run is bounded by `bound`.
    pub async fn connect(port: u16, bound: Duration) -> Self {
        let stream = bounded(
            bound,
            "the query listener",
            TcpStream::connect(("127.0.0.1", port)),
        )
        .await
        .expect("connect to the query listener");
        let (read, writer) = stream.into_split();
        Self {
            reader: BufReader::new(read),
            writer,
            bound,
        }
    }

    /// Sends one trap line.
    pub async fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("send a trap");
    }

    /// The next answer the listener writes back.
    pub async fn answer(&mut self) -> Value {
        let mut line = String::new();
        let n = bounded(
            self.bound,
            "an answer on the run",
            self.reader.read_line(&mut line),
        )
        .await
        .expect("read an answer");
        assert!(n > 0, "the listener closed the run without an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer {line:?}: {e}"))
    }
}

/// A landstrip 0.19 write query for `path`.
pub fn write_query(id: &str, path: &Path) -> String {
    serde_json::json!({
        "kind": "filesystem", "code": "FILESYSTEM_DENIED", "state": "query", "query_id": id,
        "operation": "write", "path": path, "requested_path": path, "syscall": "openat",
        "errno": "EACCES", "flags": ["O_WRONLY", "O_CREAT"], "reason": "allow_miss",
        "process": {"pid": 2434, "exe": "/usr/bin/dash", "cwd": "/"}, "mechanism": "seccomp"
    })
    .to_string()
}
