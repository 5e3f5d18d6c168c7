//! The phone page: an approval page served over HTTPS on the local network (off by
//! default). This module holds its operations, which `ctl web` and the windows reach
//! through `surfaces/operations.rs`; `routes.rs` is the HTTP side and `page.rs` the HTML.

mod page;
mod routes;

use std::net::{SocketAddr, UdpSocket};

use serde::{Deserialize, Serialize};

use crate::app_settings::{SettingsError, WebSetting};
use crate::serving::service::Service;
use crate::serving::web::{Cert, DeviceInfo, Running, WebServer, WebStateError};

pub use page::escape;

/// The default address: loopback only, so reaching it from the network is a choice.
const DEFAULT_HOST: &str = "127.0.0.1";

/// Why a phone page operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// Its state (files, certificate, devices, server).
    #[error(transparent)]
    State(#[from] WebStateError),
    /// The settings file.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The instance has no settings file to keep the switch in.
    #[error("this instance has no settings file")]
    NoSettings,
    /// `--bind` is not ADDRESS:PORT.
    #[error("{0:?} is not an address to listen on: ADDRESS:PORT, e.g. 0.0.0.0:8443")]
    BadBind(String),
    /// Pairing needs the page on.
    #[error("the phone page is off: turn it on with `landstrip-tray ctl web on`")]
    Off,
    /// The QR code could not be made.
    #[error("cannot draw the pairing URL as a QR code: {0}")]
    Qr(String),
    /// A blocking task did not finish (the app is quitting).
    #[error("internal error: {0}")]
    Internal(String),
}

/// The phone page now (`ctl web`, `--json` of `ctl web on`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebStatus {
    /// Whether it serves.
    pub on: bool,
    /// Its base URL, when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The address it listens (or will listen) on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// The SHA-256 of its certificate's DER bytes, colon-separated hex, when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// A pairing token minted (`ctl web pair`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebPairing {
    /// The URL to open on the phone (holds the single-use token).
    pub pairing_url: String,
    /// When the token expires (ms since the epoch).
    pub expires_ms: u64,
    /// The certificate's fingerprint, to compare on the phone.
    pub fingerprint: String,
    /// The URL as a QR code: one string per row, `1` dark, `0` light (no quiet zone).
    pub qr: Vec<String>,
}

/// The phone page's state. Never blocks.
pub fn status(service: &Service) -> WebStatus {
    let saved = service
        .settings_file()
        .and_then(|f| f.load().ok())
        .and_then(|s| s.web)
        .and_then(|w| w.bind);
    match service.web().running().as_ref() {
        Some(running) => WebStatus {
            on: true,
            url: Some(base_url(running.server.addr())),
            bind: Some(running.server.addr().to_string()),
            fingerprint: Some(running.fingerprint.clone()),
        },
        None => WebStatus {
            on: false,
            url: None,
            bind: saved,
            fingerprint: None,
        },
    }
}

/// Turns the page on at `bind` (or the saved address, or loopback on a port chosen now
/// and kept), and saves it on, so it starts with the app. Already on at that address: as
/// it is. Blocking file work runs on the blocking pool.
pub async fn turn_on(service: &Service, bind: Option<String>) -> Result<WebStatus, WebError> {
    let file = service.settings_file().ok_or(WebError::NoSettings)?.clone();
    let saved = {
        let file = file.clone();
        blocking(move || file.load()).await??
    };
    let wanted = bind
        .or_else(|| saved.web.as_ref().and_then(|w| w.bind.clone()))
        .unwrap_or_else(|| format!("{DEFAULT_HOST}:0"));
    let addr: SocketAddr = wanted
        .parse()
        .map_err(|_| WebError::BadBind(wanted.clone()))?;
    let same = service
        .web()
        .running()
        .as_ref()
        .is_some_and(|running| running.server.addr() == addr);
    if same {
        save(&file, true, addr.to_string()).await?;
        return Ok(status(service));
    }
    // The certificate and the devices are read (or made) before anything listens: a
    // devices file that does not parse keeps the page off.
    let web_service = service.clone();
    let cert = blocking(move || -> Result<Cert, WebStateError> {
        let web = web_service.web();
        drop(web.devices()?);
        Ok(Cert::load_or_make(web.dir()?)?)
    })
    .await??;
    if let Some(old) = service.web().running().take() {
        old.server.stop();
    }
    let server = WebServer::start(addr, &cert, routes::router(service.clone()))
        .await
        .map_err(WebStateError::from)?;
    let bound = server.addr();
    *service.web().running() = Some(Running {
        server,
        fingerprint: cert.fingerprint(),
    });
    // The port chosen is kept, so the phone's bookmark goes on working.
    save(&file, true, bound.to_string()).await?;
    tracing::info!("phone page on at {}", base_url(bound));
    Ok(status(service))
}

/// Turns the page off and saves it off (its address is kept).
pub async fn turn_off(service: &Service) -> Result<WebStatus, WebError> {
    let file = service.settings_file().ok_or(WebError::NoSettings)?.clone();
    let running = service.web().running().take();
    let bind = match running {
        Some(running) => {
            let addr = running.server.addr().to_string();
            running.server.stop();
            tracing::info!("phone page off");
            Some(addr)
        }
        None => None,
    };
    let file2 = file.clone();
    blocking(move || {
        file2.update(|s| {
            let web = s.web.get_or_insert_with(WebSetting::default);
            web.enabled = false;
            if let Some(bind) = bind {
                web.bind = Some(bind);
            }
        })
    })
    .await??;
    Ok(status(service))
}

/// Mints a pairing token: the URL to open, its expiry, the fingerprint and the QR code.
pub async fn pair(service: &Service) -> Result<WebPairing, WebError> {
    let (url, fingerprint) = {
        let running = service.web().running();
        let running = running.as_ref().ok_or(WebError::Off)?;
        (base_url(running.server.addr()), running.fingerprint.clone())
    };
    let service = service.clone();
    let (token, expires_ms) = blocking(move || -> Result<(String, u64), WebStateError> {
        let mut devices = service.web().devices()?;
        Ok(devices.mint_token(crate::activity::now_ms()))
    })
    .await??;
    let pairing_url = format!("{url}pair?token={token}");
    let qr = qr_rows(&pairing_url)?;
    Ok(WebPairing {
        pairing_url,
        expires_ms,
        fingerprint,
        qr,
    })
}

/// The paired devices.
pub async fn devices(service: &Service) -> Result<Vec<DeviceInfo>, WebError> {
    let service = service.clone();
    Ok(
        blocking(move || -> Result<_, WebStateError> { Ok(service.web().devices()?.list()) })
            .await??,
    )
}

/// Ends a device (by id or name): its next request is refused.
pub async fn revoke(service: &Service, device: String) -> Result<DeviceInfo, WebError> {
    let service = service.clone();
    Ok(blocking(move || -> Result<_, WebStateError> {
        Ok(service.web().devices()?.revoke(&device)?)
    })
    .await??)
}

/// At start: serves the page again if the settings say it is on. Failures are logged.
pub async fn start_saved(service: &Service) {
    let Some(file) = service.settings_file().cloned() else {
        return;
    };
    let on = blocking(move || file.load())
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|s| s.web)
        .is_some_and(|w| w.enabled);
    if on {
        if let Err(e) = turn_on(service, None).await {
            tracing::error!("phone page: {e}");
        }
    }
}

/// The page's base URL for `addr`: an unspecified address (0.0.0.0, ::) is shown as the
/// address this machine reaches the network by, which is what a phone can open.
fn base_url(addr: SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        outward_ip(addr).unwrap_or(addr.ip())
    } else {
        addr.ip()
    };
    format!("https://{}/", SocketAddr::new(ip, addr.port()))
}

/// The local address of the route outwards (a UDP connect sends nothing).
fn outward_ip(addr: SocketAddr) -> Option<std::net::IpAddr> {
    let (local, probe) = if addr.is_ipv4() {
        ("0.0.0.0:0", "192.0.2.1:9")
    } else {
        ("[::]:0", "[2001:db8::1]:9")
    };
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(probe).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

/// The QR code of `text` as rows of `1` (dark) and `0` (light).
pub fn qr_rows(text: &str) -> Result<Vec<String>, WebError> {
    let code = qrcode::QrCode::new(text.as_bytes()).map_err(|e| WebError::Qr(e.to_string()))?;
    let width = code.width();
    let colors = code.to_colors();
    Ok(colors
        .chunks(width)
        .map(|row| {
            row.iter()
                .map(|c| match c {
                    qrcode::Color::Dark => '1',
                    qrcode::Color::Light => '0',
                })
                .collect()
        })
        .collect())
}

async fn save(
    file: &crate::app_settings::SettingsFile,
    enabled: bool,
    bind: String,
) -> Result<(), WebError> {
    let file = file.clone();
    blocking(move || {
        file.update(|s| {
            s.web = Some(WebSetting {
                enabled,
                bind: Some(bind),
            })
        })
    })
    .await??;
    Ok(())
}

/// Runs blocking file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, WebError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| WebError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qr_code_is_square_rows_of_ones_and_zeros() {
        let rows = qr_rows("https://127.0.0.1:8443/pair?token=00ff").unwrap();
        assert!(rows.len() >= 21);
        assert!(rows.iter().all(|r| r.len() == rows.len()));
        assert!(rows.iter().all(|r| r.chars().all(|c| c == '0' || c == '1')));
        // The finder pattern's top row.
        assert!(rows[0].starts_with("1111111"));
    }

    #[test]
    fn an_unspecified_address_is_shown_as_a_reachable_one() {
        let url = base_url("127.0.0.1:8443".parse().unwrap());
        assert_eq!(url, "https://127.0.0.1:8443/");
        // The route outwards when there is one; with none (no network), the address as it is.
        let url = base_url("0.0.0.0:8443".parse().unwrap());
        match outward_ip("0.0.0.0:1".parse().unwrap()) {
            Some(ip) => {
                assert!(!ip.is_unspecified(), "{ip}");
                assert_eq!(url, format!("https://{ip}:8443/"));
            }
            None => assert_eq!(url, "https://0.0.0.0:8443/"),
        }
    }
}
