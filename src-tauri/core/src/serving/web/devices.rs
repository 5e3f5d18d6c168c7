//! Paired phones: the single-use pairing tokens (memory only), the devices and their
//! hashed credentials (a file in the app's data directory, 0600, written atomically), and
//! the failures per address that earn a 429.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::safe_fs::{self, FileMode};

/// How long a pairing token is good for: long enough to find the phone and scan.
pub const PAIRING_TTL_MS: u64 = 10 * 60 * 1000;
/// How many failures one address may have in [`FAILURE_WINDOW_MS`] before it gets 429.
pub const MAX_FAILURES: u32 = 10;
/// The window failures are counted in.
pub const FAILURE_WINDOW_MS: u64 = 60 * 1000;
/// Addresses tracked at once; past it the oldest windows are forgotten.
const MAX_TRACKED: usize = 4096;
/// How often a device's last use is written to the file (it is kept in memory always).
const LAST_USED_WRITE_MS: u64 = 60 * 1000;
/// The longest device name kept.
const NAME_MAX: usize = 40;

/// Why the devices file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DevicesError {
    /// Reading or writing it failed.
    #[error("the paired devices file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// It does not parse: left as it is for the person to mend or remove.
    #[error(
        "the paired devices file {} does not parse ({problem}); it is left as it is: mend or remove it",
        path.display()
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// No such device.
    #[error("no paired device {0} (see ctl web devices)")]
    NoDevice(String),
}

/// What opening a pairing URL came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairError {
    /// The token was used already, or its ten minutes are over: 410.
    Gone,
    /// No such token was ever minted here: a failure, 401.
    Unknown,
}

/// A paired device as listed (no credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Its id (`ctl web revoke ID`).
    pub id: u64,
    /// Its name, from the browser's User-Agent.
    pub name: String,
    /// When it paired (ms since the epoch).
    pub paired_ms: u64,
    /// When it last made a request with its credential (ms since the epoch).
    #[serde(default)]
    pub last_used_ms: Option<u64>,
}

/// A device as the file keeps it: its info and the SHA-256 of its secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    info: DeviceInfo,
    /// Hex SHA-256 of the cookie's secret; the secret itself is never kept.
    secret_sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct DevicesFile {
    #[serde(default)]
    next_id: u64,
    #[serde(default)]
    devices: Vec<Stored>,
}

/// The paired devices, the pairing tokens and the failure counts. Not shared by itself:
/// its owner holds it under a lock.
#[derive(Debug)]
pub struct Devices {
    file: PathBuf,
    state: DevicesFile,
    /// Hashes of the live tokens, and when each expires.
    tokens: HashMap<String, u64>,
    /// Hashes of tokens used or expired, kept a while so they get 410, not 401.
    spent: HashMap<String, u64>,
    failures: HashMap<IpAddr, (u64, u32)>,
    /// When each device's last use was last written.
    written_use: HashMap<u64, u64>,
}

impl Devices {
    /// Reads the devices file (none yet: no devices). One that does not parse is an
    /// error, and the file is not touched. Blocks.
    pub fn open(file: PathBuf) -> Result<Self, DevicesError> {
        let state = match std::fs::read_to_string(&file) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| DevicesError::Invalid {
                path: file.clone(),
                problem: e.to_string(),
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => DevicesFile::default(),
            Err(source) => return Err(DevicesError::Io { path: file, source }),
        };
        Ok(Self {
            file,
            state,
            tokens: HashMap::new(),
            spent: HashMap::new(),
            failures: HashMap::new(),
            written_use: HashMap::new(),
        })
    }

    /// Mints a single-use pairing token valid [`PAIRING_TTL_MS`] from `now_ms`: the
    /// token (for the URL, never kept) and when it expires.
    pub fn mint_token(&mut self, now_ms: u64) -> (String, u64) {
        self.forget_old(now_ms);
        let token = random_hex();
        let expires = now_ms + PAIRING_TTL_MS;
        self.tokens.insert(sha256_hex(&token), expires);
        (token, expires)
    }

    /// Consumes `token` and pairs a device named from `user_agent`: the device and its
    /// secret (for the cookie; only its hash is kept). The token is spent whatever comes
    /// of it. Blocks (writes the file).
    pub fn pair(
        &mut self,
        token: &str,
        user_agent: &str,
        now_ms: u64,
    ) -> Result<Result<(DeviceInfo, String), PairError>, DevicesError> {
        let hash = sha256_hex(token);
        match self.tokens.remove(&hash) {
            Some(expires) => {
                self.spent.insert(hash, now_ms);
                if now_ms >= expires {
                    return Ok(Err(PairError::Gone));
                }
            }
            None if self.spent.contains_key(&hash) => return Ok(Err(PairError::Gone)),
            None => return Ok(Err(PairError::Unknown)),
        }
        let secret = random_hex();
        self.state.next_id = self.state.next_id.max(1);
        let id = self.state.next_id;
        self.state.next_id += 1;
        let info = DeviceInfo {
            id,
            name: device_name(user_agent),
            paired_ms: now_ms,
            last_used_ms: Some(now_ms),
        };
        self.state.devices.push(Stored {
            info: info.clone(),
            secret_sha256: sha256_hex(&secret),
        });
        if let Err(e) = self.save() {
            self.state.devices.retain(|d| d.info.id != id);
            return Err(e);
        }
        Ok(Ok((info, secret)))
    }

    /// The device whose credential is `secret`, its last use set to `now_ms` (written
    /// to the file at most once a minute per device). None: no such device (revoked).
    pub fn check(&mut self, secret: &str, now_ms: u64) -> Option<DeviceInfo> {
        let hash = sha256_hex(secret);
        let device = self
            .state
            .devices
            .iter_mut()
            .find(|d| d.secret_sha256 == hash)?;
        device.info.last_used_ms = Some(now_ms);
        let info = device.info.clone();
        let written = self.written_use.get(&info.id).copied().unwrap_or(0);
        if now_ms.saturating_sub(written) >= LAST_USED_WRITE_MS {
            self.written_use.insert(info.id, now_ms);
            // Its last use is a convenience for `ctl web devices`: a failed write is
            // logged, the request goes on.
            if let Err(e) = self.save() {
                tracing::warn!("{e}");
            }
        }
        Some(info)
    }

    /// The paired devices, oldest first.
    pub fn list(&self) -> Vec<DeviceInfo> {
        self.state.devices.iter().map(|d| d.info.clone()).collect()
    }

    /// Ends a device by its id or its name: its credential is refused from now on.
    /// Blocks (writes the file).
    pub fn revoke(&mut self, which: &str) -> Result<DeviceInfo, DevicesError> {
        let index = self
            .state
            .devices
            .iter()
            .position(|d| d.info.id.to_string() == which)
            .or_else(|| self.state.devices.iter().position(|d| d.info.name == which))
            .ok_or_else(|| DevicesError::NoDevice(which.to_owned()))?;
        let removed = self.state.devices.remove(index);
        if let Err(e) = self.save() {
            self.state.devices.insert(index, removed);
            return Err(e);
        }
        Ok(removed.info)
    }

    /// Whether `addr` has had [`MAX_FAILURES`] failures in its current window.
    pub fn limited(&self, addr: IpAddr, now_ms: u64) -> bool {
        self.failures.get(&addr).is_some_and(|(start, count)| {
            now_ms.saturating_sub(*start) < FAILURE_WINDOW_MS && *count >= MAX_FAILURES
        })
    }

    /// Counts one failure (a wrong token or credential) from `addr`.
    pub fn fail(&mut self, addr: IpAddr, now_ms: u64) {
        if self.failures.len() >= MAX_TRACKED {
            self.failures
                .retain(|_, (start, _)| now_ms.saturating_sub(*start) < FAILURE_WINDOW_MS);
        }
        if self.failures.len() >= MAX_TRACKED {
            return;
        }
        let entry = self.failures.entry(addr).or_insert((now_ms, 0));
        if now_ms.saturating_sub(entry.0) >= FAILURE_WINDOW_MS {
            *entry = (now_ms, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }

    fn forget_old(&mut self, now_ms: u64) {
        self.tokens
            .retain(|_, expires| now_ms < expires.saturating_add(PAIRING_TTL_MS));
        self.spent
            .retain(|_, at| now_ms.saturating_sub(*at) < 6 * PAIRING_TTL_MS);
    }

    fn save(&self) -> Result<(), DevicesError> {
        let io = |source| DevicesError::Io {
            path: self.file.clone(),
            source,
        };
        let mut text =
            serde_json::to_string_pretty(&self.state).map_err(|e| io(io::Error::other(e)))?;
        text.push('\n');
        safe_fs::write_atomic(&self.file, text.as_bytes(), FileMode::Exact(0o600)).map_err(io)
    }

    /// The file it is kept in.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

/// 32 random bytes as hex: a pairing token or a device secret.
pub fn random_hex() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    // The system's random source failing leaves nothing safe to hand out.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        panic!("the system random source failed");
    }
    hex(&bytes)
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// A short name for a browser from its User-Agent: "Chrome on Android"; the sanitised
/// start of it when neither is recognised.
pub fn device_name(user_agent: &str) -> String {
    let has = |w: &str| user_agent.contains(w);
    let platform = [
        ("Android", "Android"),
        ("iPhone", "iPhone"),
        ("iPad", "iPad"),
        ("Windows", "Windows"),
        ("Mac OS X", "Mac"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .into_iter()
    .find(|(w, _)| has(w))
    .map(|(_, n)| n);
    let browser = [
        ("Firefox/", "Firefox"),
        ("FxiOS/", "Firefox"),
        ("Edg", "Edge"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("CriOS/", "Chrome"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .into_iter()
    .find(|(w, _)| has(w))
    .map(|(_, n)| n);
    match (browser, platform) {
        (Some(b), Some(p)) => format!("{b} on {p}"),
        (Some(n), None) | (None, Some(n)) => n.to_owned(),
        (None, None) => {
            let clean: String = user_agent
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || " ._/-".contains(*c))
                .take(NAME_MAX)
                .collect();
            let clean = clean.trim();
            if clean.is_empty() {
                "a browser".to_owned()
            } else {
                clean.to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const UA: &str = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/120 Safari/537.36";

    fn open(tmp: &tempfile::TempDir) -> Devices {
        Devices::open(tmp.path().join("devices.json")).unwrap()
    }

    #[test]
    fn a_token_pairs_once_and_then_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let mut devices = open(&tmp);
        let (token, expires) = devices.mint_token(1_000);
        assert_eq!(expires, 1_000 + PAIRING_TTL_MS);
        let (info, secret) = devices.pair(&token, UA, 2_000).unwrap().unwrap();
        assert_eq!(info.name, "Chrome on Android");
        assert_eq!(
            devices.pair(&token, UA, 3_000).unwrap().unwrap_err(),
            PairError::Gone
        );
        assert_eq!(devices.check(&secret, 4_000).unwrap().id, info.id);
        assert_eq!(
            devices.pair("not-a-token", UA, 3_000).unwrap().unwrap_err(),
            PairError::Unknown
        );
    }

    #[test]
    fn a_token_expires_after_ten_minutes() {
        let tmp = tempfile::tempdir().unwrap();
        let mut devices = open(&tmp);
        let (token, expires) = devices.mint_token(1_000);
        assert_eq!(
            devices.pair(&token, UA, expires).unwrap().unwrap_err(),
            PairError::Gone
        );
        let (token, expires) = devices.mint_token(1_000);
        assert!(devices.pair(&token, UA, expires - 1).unwrap().is_ok());
        assert!(devices.list().len() == 1);
    }

    #[test]
    fn only_the_hash_of_a_secret_is_kept_and_a_wrong_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut devices = open(&tmp);
        let (token, _) = devices.mint_token(0);
        let (_, secret) = devices.pair(&token, UA, 1).unwrap().unwrap();
        let text = std::fs::read_to_string(devices.file()).unwrap();
        assert!(!text.contains(&secret), "{text}");
        assert!(!text.contains(&token), "{text}");
        assert!(text.contains(&sha256_hex(&secret)), "{text}");
        assert!(devices.check(&secret[1..], 2).is_none());
        let mode = std::fs::metadata(devices.file())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Read back by a new start, the credential still works.
        let mut again = open(&tmp);
        assert!(again.check(&secret, 3).is_some());
    }

    #[test]
    fn a_revoked_device_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut devices = open(&tmp);
        let (token, _) = devices.mint_token(0);
        let (info, secret) = devices.pair(&token, UA, 1).unwrap().unwrap();
        assert_eq!(devices.check(&secret, 1).map(|d| d.id), Some(info.id));
        devices.revoke(&info.id.to_string()).unwrap();
        assert!(devices.check(&secret, 2).is_none());
        assert!(open(&tmp).check(&secret, 3).is_none());
        assert!(matches!(
            devices.revoke("7"),
            Err(DevicesError::NoDevice(_))
        ));
    }

    #[test]
    fn an_unparsable_file_is_an_error_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("devices.json");
        std::fs::write(&file, "{ not json").unwrap();
        assert!(matches!(
            Devices::open(file.clone()),
            Err(DevicesError::Invalid { .. })
        ));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }

    #[test]
    fn ten_failures_in_a_minute_limit_an_address_until_its_window_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let mut devices = open(&tmp);
        let addr: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for i in 0..MAX_FAILURES {
            assert!(!devices.limited(addr, 100 + u64::from(i)));
            devices.fail(addr, 100 + u64::from(i));
        }
        assert!(devices.limited(addr, 200));
        assert!(!devices.limited(other, 200));
        assert!(!devices.limited(addr, 100 + FAILURE_WINDOW_MS));
    }

    #[test]
    fn device_names_are_short_and_plain() {
        assert_eq!(
            device_name("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) Version/17.0 Safari/604.1"),
            "Safari on iPhone"
        );
        let odd = device_name("<script>alert(1)</script>\u{1b}[31m and a very long tail of words");
        assert!(odd.len() <= NAME_MAX, "{odd}");
        assert!(!odd.contains('<') && !odd.contains('\u{1b}'), "{odd}");
    }
}
