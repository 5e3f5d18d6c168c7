//! The phone page's machinery, below the surfaces: its certificate, its HTTPS server, the
//! paired devices and pairing tokens, and the anti-forgery tokens of its forms. What the
//! page shows and does is `surfaces/web`.

pub mod cert;
pub mod devices;
pub mod server;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub use cert::{fingerprint_of, Cert, CertError};
pub use devices::{DeviceInfo, Devices, DevicesError, PairError};
pub use server::{Peer, ServeError, WebServer};

use devices::hex;

/// The devices file's name in the web directory.
const DEVICES_FILE: &str = "devices.json";

/// The server as it runs.
#[derive(Debug)]
pub struct Running {
    /// The server.
    pub server: WebServer,
    /// Its certificate's fingerprint.
    pub fingerprint: String,
}

/// The phone page's state in the service: where its files live, the server when it runs,
/// the devices once read. Every part is behind its own lock, held briefly.
#[derive(Debug)]
pub struct WebState {
    dir: OnceLock<PathBuf>,
    running: Mutex<Option<Running>>,
    devices: Mutex<Option<Devices>>,
    /// Signs the page's anti-forgery tokens; new at each start of the app, so a page
    /// from an earlier run must be loaded again.
    form_key: ring::hmac::Key,
}

impl Default for WebState {
    fn default() -> Self {
        Self::new()
    }
}

/// The phone page has no directory (the app did not say where its data lives).
#[derive(Debug, thiserror::Error)]
#[error("the phone page has no data directory in this instance")]
pub struct NoWebDir;

impl WebState {
    /// No directory yet, not running.
    pub fn new() -> Self {
        let secret = devices::random_hex();
        Self {
            dir: OnceLock::new(),
            running: Mutex::new(None),
            devices: Mutex::new(None),
            form_key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()),
        }
    }

    /// Sets the directory its certificate and devices live in (once; later calls are
    /// ignored): `$XDG_DATA_HOME/landstrip-tray/web`.
    pub fn set_dir(&self, dir: PathBuf) {
        let _ = self.dir.set(dir);
    }

    /// Its directory.
    pub fn dir(&self) -> Result<&Path, NoWebDir> {
        self.dir.get().map(PathBuf::as_path).ok_or(NoWebDir)
    }

    /// The server slot.
    pub fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The devices, read from their file on first use. Blocks (the first time).
    pub fn devices(&self) -> Result<DevicesGuard<'_>, WebStateError> {
        let mut slot = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let dir = self.dir()?;
            crate::safe_fs::ensure_private_dir(dir)?;
            *slot = Some(Devices::open(dir.join(DEVICES_FILE))?);
        }
        Ok(DevicesGuard(slot))
    }

    /// A page's anti-forgery token for `device`: a fresh nonce and its signature, bound
    /// to the device and to this run of the app.
    pub fn form_token(&self, device: u64) -> String {
        let nonce = &devices::random_hex()[..32];
        let tag = ring::hmac::sign(&self.form_key, format!("{device}.{nonce}").as_bytes());
        format!("{nonce}.{}", hex(tag.as_ref()))
    }

    /// Whether `token` is one [`WebState::form_token`] made for `device`.
    pub fn check_form_token(&self, device: u64, token: &str) -> bool {
        let Some((nonce, tag)) = token.split_once('.') else {
            return false;
        };
        let Some(tag) = unhex(tag) else {
            return false;
        };
        ring::hmac::verify(&self.form_key, format!("{device}.{nonce}").as_bytes(), &tag).is_ok()
    }
}

/// The devices, locked.
pub struct DevicesGuard<'a>(MutexGuard<'a, Option<Devices>>);

impl std::ops::Deref for DevicesGuard<'_> {
    type Target = Devices;
    fn deref(&self) -> &Devices {
        // Set before the guard is made.
        self.0.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for DevicesGuard<'_> {
    fn deref_mut(&mut self) -> &mut Devices {
        self.0.as_mut().unwrap_or_else(|| unreachable!())
    }
}

/// Why the phone page's state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WebStateError {
    /// No directory.
    #[error(transparent)]
    NoDir(#[from] NoWebDir),
    /// Its directory is not private.
    #[error(transparent)]
    Dir(#[from] crate::safe_fs::PrivateDirError),
    /// The devices file.
    #[error(transparent)]
    Devices(#[from] DevicesError),
    /// The certificate.
    #[error(transparent)]
    Cert(#[from] CertError),
    /// The server.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_token_is_bound_to_its_device_and_to_this_run() {
        let web = WebState::new();
        let token = web.form_token(3);
        assert!(web.check_form_token(3, &token));
        assert!(!web.check_form_token(4, &token));
        assert!(!web.check_form_token(3, ""));
        assert!(!web.check_form_token(3, "abc.def"));
        let (nonce, _) = token.split_once('.').unwrap();
        assert!(!web.check_form_token(3, &format!("{nonce}.{}", "00".repeat(32))));
        // Another run of the app (another key) does not take it.
        assert!(!WebState::new().check_form_token(3, &token));
    }
}
