//! The phone page's HTTPS server: a TCP listener, rustls (ring) for each connection and
//! hyper's HTTP/1 serving an axum router, on the app's tokio runtime. Stopping it ends the
//! accept loop and every open connection at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use super::cert::Cert;

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once; more wait in the kernel's backlog until one ends.
const MAX_CONNECTIONS: usize = 64;

/// The address a request came from, set on each request for the handlers.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the address failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// rustls refused the certificate or key.
    #[error("the phone page's certificate cannot be served: {0}")]
    Tls(#[from] rustls::Error),
}

/// A running server.
#[derive(Debug)]
pub struct WebServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl WebServer {
    /// Listens on `bind` and serves `router` over TLS with `cert`. Must be called inside
    /// the tokio runtime.
    pub async fn start(bind: SocketAddr, cert: &Cert, router: Router) -> Result<Self, ServeError> {
        let (chain, key) = cert.for_rustls();
        // ring, as the issue asks (no C toolchain build for aws-lc); rustls deprecates its
        // default list only for lacking post-quantum key exchange.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(bind)
            .await
            .map_err(|source| ServeError::Bind { addr: bind, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr: bind, source })?;
        let task = tokio::spawn(accept_loop(listener, acceptor, router));
        Ok(Self { addr, task })
    }

    /// The address it listens on (the port chosen when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and ends every connection.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections until aborted; the connections are its JoinSet's, so aborting it
/// ends them too.
async fn accept_loop(listener: TcpListener, acceptor: TlsAcceptor, router: Router) {
    let mut connections = JoinSet::new();
    loop {
        // Finished connections are reaped first, so the bound counts live ones.
        while connections.try_join_next().is_some() {}
        if connections.len() >= MAX_CONNECTIONS {
            let _ = connections.join_next().await;
            continue;
        }
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tracing::warn!("phone page: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let router = router.clone();
        connections.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!("phone page: TLS handshake from {peer} failed: {e}");
                    return;
                }
                Err(_) => return,
            };
            let service = hyper::service::service_fn(move |mut request| {
                request.extensions_mut().insert(Peer(peer));
                let service = TowerToHyperService::new(router.clone());
                hyper::service::Service::call(&service, request)
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("phone page: connection from {peer}: {e}");
            }
        });
    }
}
