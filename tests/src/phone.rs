//! A client for the phone page that trusts exactly one certificate: the one whose SHA-256
//! (of its DER bytes) `ctl web on --json` printed, as a person comparing the fingerprint
//! on their phone does. rustls (ring) with a verifier that compares the fingerprint and
//! checks the handshake's signature with the certificate's key, and hyper's HTTP/1 client
//! over it: real TLS, real HTTP, one connection a request.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::EVENT_TIMEOUT;

/// Colon-separated uppercase hex SHA-256 of `der`, as the app prints it.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<CryptoProvider>,
    /// The fingerprint of the certificate each handshake was offered.
    seen: Arc<Mutex<Option<String>>>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = fingerprint(end_entity);
        *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(seen.clone());
        if seen == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "certificate {seen} is not the pinned {}",
                self.fingerprint
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A reply: status, headers, body.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Reply {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTPS client pinned to one certificate fingerprint.
pub struct PinnedClient {
    addr: SocketAddr,
    connector: TlsConnector,
    seen: Arc<Mutex<Option<String>>>,
}

impl PinnedClient {
    /// A client for the page at `url` (`https://ADDR:PORT/…`) trusting only `fingerprint`.
    pub fn new(url: &str, fingerprint: &str) -> Self {
        let host = url
            .strip_prefix("https://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("not an https URL: {url}"));
        let addr: SocketAddr = host
            .parse()
            .unwrap_or_else(|e| panic!("{host} is not ADDR:PORT: {e}"));
        #[allow(deprecated)] // ring, as the app serves with (see serving/web/server.rs)
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let seen = Arc::new(Mutex::new(None));
        let verifier = Arc::new(Pinned {
            fingerprint: fingerprint.to_owned(),
            provider: provider.clone(),
            seen: seen.clone(),
        });
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Self {
            addr,
            connector: TlsConnector::from(Arc::new(config)),
            seen,
        }
    }

    /// The fingerprint of the certificate the server last offered.
    pub fn seen(&self) -> Option<String> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// GET `path` (with its query), sending `cookie` if given.
    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Result<Reply, String> {
        self.send("GET", path, cookie, &[], None).await
    }

    /// POST a form body to `path`, with `cookie` and extra headers.
    pub async fn post_form(
        &self,
        path: &str,
        cookie: Option<&str>,
        headers: &[(&str, &str)],
        form: &str,
    ) -> Result<Reply, String> {
        self.send("POST", path, cookie, headers, Some(form)).await
    }

    /// One request on its own connection, bounded by [`EVENT_TIMEOUT`].
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        headers: &[(&str, &str)],
        form: Option<&str>,
    ) -> Result<Reply, String> {
        tokio::time::timeout(
            EVENT_TIMEOUT,
            self.send_untimed(method, path, cookie, headers, form),
        )
        .await
        .map_err(|_| format!("{method} {path}: no reply within {EVENT_TIMEOUT:?}"))?
    }

    async fn send_untimed(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        headers: &[(&str, &str)],
        form: Option<&str>,
    ) -> Result<Reply, String> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|e| format!("connect {}: {e}", self.addr))?;
        let name = ServerName::try_from("landstrip-tray").map_err(|e| e.to_string())?;
        let tls = self
            .connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP handshake: {e}"))?;
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header(
                "user-agent",
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36",
            );
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        if form.is_some() {
            request = request.header("content-type", "application/x-www-form-urlencoded");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = Full::new(Bytes::from(form.unwrap_or("").to_owned()));
        let request = request.body(body).map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{method} {path}: body: {e}"))?
            .to_bytes();
        Ok(Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

/// The `name=value` of a `set-cookie` header, and its attributes.
pub fn cookie_pair(set_cookie: &str) -> (String, Vec<String>) {
    let mut parts = set_cookie.split(';').map(|p| p.trim().to_owned());
    let pair = parts.next().unwrap_or_default();
    (pair, parts.collect())
}

/// The value of the first `name="…"` hidden input's `value` after `name=\"name\"` in `html`.
pub fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')?;
    Some(html[start..start + end].to_owned())
}
