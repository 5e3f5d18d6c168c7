//! The phone page's certificate: self-signed, made on first use and kept (0600) in the
//! app's data directory, so its fingerprint stays what the person compared once.

use std::io;
use std::path::{Path, PathBuf};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use crate::safe_fs::{self, FileMode};

/// The certificate's file in the web directory (DER).
const CERT_FILE: &str = "cert.der";
/// Its private key's file (PKCS#8 DER).
const KEY_FILE: &str = "key.der";

/// Why the certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Reading or writing its files failed.
    #[error("the phone page's certificate {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Its directory is not private.
    #[error(transparent)]
    Dir(#[from] safe_fs::PrivateDirError),
    /// rcgen could not make one.
    #[error("cannot make the phone page's certificate: {0}")]
    Make(#[from] rcgen::Error),
    /// One of the two files exists without the other, or is empty: left for the person.
    #[error(
        "the phone page's certificate in {} is incomplete (cert.der and key.der go together); \
         remove both to make a new one",
        .0.display()
    )]
    Incomplete(PathBuf),
}

/// The certificate and its key, as served.
#[derive(Debug, Clone)]
pub struct Cert {
    /// The certificate (DER).
    pub der: Vec<u8>,
    /// Its private key (PKCS#8 DER).
    key: Vec<u8>,
}

impl Cert {
    /// Reads the certificate kept in `dir`, or makes one there (the directory made 0700,
    /// both files 0600, each written atomically). Blocks.
    pub fn load_or_make(dir: &Path) -> Result<Self, CertError> {
        safe_fs::ensure_private_dir(dir)?;
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        match (read_opt(&cert_path)?, read_opt(&key_path)?) {
            (Some(der), Some(key)) if !der.is_empty() && !key.is_empty() => Ok(Self { der, key }),
            (None, None) => {
                let made = rcgen::generate_simple_self_signed(vec![
                    "localhost".to_owned(),
                    "landstrip-tray".to_owned(),
                ])?;
                let cert = Self {
                    der: made.cert.der().to_vec(),
                    key: made.signing_key.serialize_der(),
                };
                // The key first: a certificate on disk always has its key.
                write(&key_path, &cert.key)?;
                write(&cert_path, &cert.der)?;
                Ok(cert)
            }
            _ => Err(CertError::Incomplete(dir.to_path_buf())),
        }
    }

    /// The SHA-256 of the certificate's DER bytes, as colon-separated uppercase hex (what
    /// a browser's certificate viewer shows).
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.der)
    }

    /// The chain and key as rustls takes them.
    pub fn for_rustls(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        (
            vec![CertificateDer::from(self.der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone())),
        )
    }
}

/// The colon-separated uppercase hex SHA-256 of `der`.
pub fn fingerprint_of(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, CertError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CertError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CertError> {
    safe_fs::write_atomic(path, bytes, FileMode::Exact(0o600)).map_err(|source| CertError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn made_once_kept_private_and_read_back_with_the_same_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("web");
        let made = Cert::load_or_make(&dir).unwrap();
        for file in [CERT_FILE, KEY_FILE] {
            let mode = std::fs::metadata(dir.join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let again = Cert::load_or_make(&dir).unwrap();
        assert_eq!(made.fingerprint(), again.fingerprint());
        assert_eq!(made.fingerprint().len(), 32 * 3 - 1);
    }

    #[test]
    fn a_lone_certificate_is_refused_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("web");
        Cert::load_or_make(&dir).unwrap();
        std::fs::remove_file(dir.join(KEY_FILE)).unwrap();
        let before = std::fs::read(dir.join(CERT_FILE)).unwrap();
        assert!(matches!(
            Cert::load_or_make(&dir),
            Err(CertError::Incomplete(_))
        ));
        assert_eq!(std::fs::read(dir.join(CERT_FILE)).unwrap(), before);
    }
}
