//! A byte pump between a real landstrip run and the app (real TCP on both sides): it
//! reports the first query landstrip sends, records every byte the app sends back, and
//! can be cut so the run's connection closes while its query is held.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::EVENT_TIMEOUT;

/// The first query line that passed the tap.
#[derive(Debug, Clone)]
pub struct SeenQuery {
    /// When it reached the tap, before it was passed on to the app.
    pub at: Instant,
    /// The line as JSON.
    pub trap: serde_json::Value,
}

/// The pump: landstrip connects to [`Tap::port`], the tap to the app.
pub struct Tap {
    /// The port to give landstrip instead of the app's.
    pub port: u16,
    query: Option<oneshot::Receiver<SeenQuery>>,
    replies: Arc<Mutex<Vec<u8>>>,
    cut: Option<oneshot::Sender<()>>,
}

impl Tap {
    /// Listens on a port of its own; the first connection there is pumped to `upstream`.
    pub async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (query_tx, query) = oneshot::channel();
        let (cut, cut_rx) = oneshot::channel::<()>();
        let replies = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(pump(listener, upstream, query_tx, replies.clone(), cut_rx));
        Self {
            port,
            query: Some(query),
            replies,
            cut: Some(cut),
        }
    }

    /// The first query landstrip sent (bounded); once per tap.
    pub async fn first_query(&mut self) -> SeenQuery {
        let query = self
            .query
            .take()
            .expect("first_query is awaited once per tap");
        tokio::time::timeout(EVENT_TIMEOUT, query)
            .await
            .unwrap_or_else(|_| panic!("landstrip sent no query within {EVENT_TIMEOUT:?}"))
            .expect("the tap closed before a query")
    }

    /// Everything the app has sent back so far (recorded before landstrip can see it).
    pub fn replies(&self) -> String {
        String::from_utf8_lossy(&self.replies.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }

    /// The app's answers so far, one JSON object a line.
    pub fn answers(&self) -> Vec<serde_json::Value> {
        self.replies()
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("the app's answer {l:?}: {e}"))
            })
            .collect()
    }

    /// The app's one answer on the wire, to `query`: its action. Fails if the app sent
    /// none, more than one, or one for another query.
    pub fn only_answer(&self, query: &serde_json::Value) -> String {
        let answers = self.answers();
        assert_eq!(
            answers.len(),
            1,
            "not one answer on the wire: {:?}",
            self.replies()
        );
        assert_eq!(answers[0]["query_id"], query["query_id"], "{answers:?}");
        answers[0]["action"]
            .as_str()
            .unwrap_or_else(|| panic!("an answer without an action: {answers:?}"))
            .to_owned()
    }

    /// Closes both connections: the run's connection ends while its query is held.
    pub fn cut(&mut self) {
        self.cut
            .take()
            .expect("a tap is cut once")
            .send(())
            .expect("cut the run's connection: the pump is gone");
    }
}

async fn pump(
    listener: TcpListener,
    upstream: u16,
    query_tx: oneshot::Sender<SeenQuery>,
    record: Arc<Mutex<Vec<u8>>>,
    cut: oneshot::Receiver<()>,
) {
    let (down, _) = listener.accept().await.expect("accept");
    let up = TcpStream::connect(("127.0.0.1", upstream))
        .await
        .expect("connect to the app");
    let (mut down_r, mut down_w) = down.into_split();
    let (mut up_r, mut up_w) = up.into_split();
    let to_app = async move {
        let mut query_tx = Some(query_tx);
        let mut pending = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = down_r.read(&mut buf).await {
            let mut seen = None;
            if query_tx.is_some() {
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let Ok(trap) = serde_json::from_slice::<serde_json::Value>(&line) else {
                        continue;
                    };
                    if trap["state"] == "query" {
                        seen = Some(SeenQuery {
                            at: Instant::now(),
                            trap,
                        });
                        break;
                    }
                }
            }
            if up_w.write_all(&buf[..n]).await.is_err() {
                break;
            }
            if let Some(seen) = seen {
                if let Some(tx) = query_tx.take() {
                    let _ = tx.send(seen);
                }
            }
        }
        let _ = up_w.shutdown().await;
    };
    let to_landstrip = async move {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = up_r.read(&mut buf).await {
            record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(&buf[..n]);
            if down_w.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = down_w.shutdown().await;
    };
    tokio::select! {
        _ = async { tokio::join!(to_app, to_landstrip) } => {}
        // Dropping both halves closes both connections.
        Ok(()) = cut => {}
    }
}
