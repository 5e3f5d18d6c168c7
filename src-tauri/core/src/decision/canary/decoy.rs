//! Decoy contents: realistic but fake credentials shaped after the file's name, so a
//! program hunting for secrets takes the bait (docs/ARCHITECTURE.md, "Canaries"). Nothing
//! here is a working key: the bytes are random and never registered anywhere.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// The kind of credential a decoy imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `~/.aws/credentials`: an INI profile with an access key pair.
    Aws,
    /// An OpenSSH private key (`id_*`, `*.pem`, `*.key`).
    SshKey,
    /// An `.npmrc` with a registry token.
    Npmrc,
    /// A `.env` with tokens (also what any other name gets).
    Env,
}

impl Shape {
    /// Its name in `ctl canary add`'s reply.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Aws => "aws",
            Shape::SshKey => "ssh_key",
            Shape::Npmrc => "npmrc",
            Shape::Env => "env",
        }
    }

    /// The shape a file named like `path` gets.
    pub fn of(path: &Path) -> Shape {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let in_aws = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|p| p == ".aws");
        if name == "credentials" && in_aws || name.contains("aws") {
            Shape::Aws
        } else if name.starts_with("id_") && !name.ends_with(".pub")
            || name.ends_with(".pem")
            || name.ends_with(".key")
        {
            Shape::SshKey
        } else if name == ".npmrc" {
            Shape::Npmrc
        } else {
            Shape::Env
        }
    }
}

const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Random bytes from the kernel.
fn random(n: usize) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `n` random characters of `alphabet` (whose length divides 256, so none is favoured).
fn chars(alphabet: &[u8], n: usize) -> io::Result<String> {
    Ok(random(n)?
        .into_iter()
        .map(|b| char::from(alphabet[usize::from(b) % alphabet.len()]))
        .collect())
}

/// A fresh decoy's text for `shape`.
pub fn text(shape: Shape) -> io::Result<String> {
    Ok(match shape {
        Shape::Aws => format!(
            "[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {}\nregion = us-east-1\n",
            chars(UPPER_DIGITS, 16)?,
            chars(B64, 40)?.replace('+', "Q")
        ),
        Shape::SshKey => {
            // "openssh-key-v1\0" then random bytes, wrapped at 70 as ssh-keygen does.
            let body = format!("b3BlbnNzaC1rZXktdjEAAAAA{}", chars(B64, 376)?);
            let mut text = String::from("-----BEGIN OPENSSH PRIVATE KEY-----\n");
            for line in body.as_bytes().chunks(70) {
                text.push_str(&String::from_utf8_lossy(line));
                text.push('\n');
            }
            text.push_str("-----END OPENSSH PRIVATE KEY-----\n");
            text
        }
        Shape::Npmrc => format!(
            "//registry.npmjs.org/:_authToken=npm_{}\n",
            chars(ALNUM, 36)?
        ),
        Shape::Env => format!(
            "DATABASE_URL=postgres://app:{}@db.internal:5432/app\n\
             GITHUB_TOKEN=ghp_{}\n\
             OPENAI_API_KEY=sk-proj-{}\n\
             STRIPE_SECRET_KEY=sk_live_{}\n",
            chars(ALNUM, 20)?,
            chars(ALNUM, 36)?,
            chars(ALNUM, 48)?,
            chars(ALNUM, 24)?
        ),
    })
}

/// Writes a decoy at `path` (absolute), its missing parents made private (0700) and the
/// file 0600 as a real credential is. Never replaces anything: an existing path fails
/// with `AlreadyExists` (create_new, so a file appearing meanwhile is not overwritten).
pub fn create(path: &Path) -> io::Result<Shape> {
    let shape = Shape::of(path);
    let text = text(shape)?;
    if let Some(parent) = path.parent() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn each_name_gets_its_shape() {
        assert_eq!(Shape::of(Path::new("/h/.aws/credentials")), Shape::Aws);
        assert_eq!(Shape::of(Path::new("/h/.ssh/id_ed25519")), Shape::SshKey);
        assert_eq!(Shape::of(Path::new("/h/deploy.pem")), Shape::SshKey);
        assert_eq!(Shape::of(Path::new("/h/.ssh/id_rsa.pub")), Shape::Env);
        assert_eq!(Shape::of(Path::new("/h/.npmrc")), Shape::Npmrc);
        assert_eq!(Shape::of(Path::new("/p/.env")), Shape::Env);
        assert_eq!(Shape::of(Path::new("/p/.env.production")), Shape::Env);
    }

    #[test]
    fn decoys_look_like_the_real_thing_and_differ_each_time() {
        let aws = text(Shape::Aws).expect("aws");
        let key_line = aws
            .lines()
            .find_map(|l| l.strip_prefix("aws_access_key_id = "))
            .expect("key id");
        assert!(
            key_line.starts_with("AKIA") && key_line.len() == 20,
            "{aws}"
        );
        let secret = aws
            .lines()
            .find_map(|l| l.strip_prefix("aws_secret_access_key = "))
            .expect("secret");
        assert_eq!(secret.len(), 40);
        let ssh = text(Shape::SshKey).expect("ssh");
        assert!(ssh.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE"));
        assert!(ssh.ends_with("-----END OPENSSH PRIVATE KEY-----\n"));
        assert!(ssh.lines().all(|l| l.len() <= 70 || l.starts_with("-----")));
        let npm = text(Shape::Npmrc).expect("npm");
        assert!(npm.starts_with("//registry.npmjs.org/:_authToken=npm_"));
        assert_eq!(
            npm.trim_end().len(),
            "//registry.npmjs.org/:_authToken=npm_".len() + 36
        );
        let env = text(Shape::Env).expect("env");
        for key in [
            "GITHUB_TOKEN=ghp_",
            "STRIPE_SECRET_KEY=sk_live_",
            "DATABASE_URL=",
        ] {
            assert!(env.contains(key), "{env}");
        }
        assert_ne!(text(Shape::Env).expect("env"), env);
    }

    #[test]
    fn create_makes_a_private_file_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(".aws/credentials");
        assert_eq!(create(&path).expect("create"), Shape::Aws);
        let meta = std::fs::metadata(&path).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let parent = std::fs::metadata(dir.path().join(".aws")).expect("meta");
        assert_eq!(parent.permissions().mode() & 0o777, 0o700);
        assert!(std::fs::read_to_string(&path)
            .expect("read")
            .contains("aws_access_key_id = AKIA"));
        let existing = dir.path().join(".env");
        std::fs::write(&existing, "MINE=1\n").expect("write");
        let err = create(&existing).expect_err("exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read_to_string(&existing).expect("read"),
            "MINE=1\n"
        );
    }
}
