//! Debian's real sshd for the remote-machine tests (DESIGN.md §11): started on a free
//! loopback port with a host key and config made here, refusing passwords, with Unix users
//! made for one test. Needs root (useradd, sshd).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// What an `authorized_keys` forced command prints for [`Sshd::future`]: the hello of a
/// bridge of a later protocol, as a newer app on the remote would answer, then a request
/// (which the desktop must not read).
const FUTURE_LINES: [&str; 2] = [
    r#"{"landstrip_tray_bridge":2,"version":"9.0.0","home":"/home/future"}"#,
    r#"{"pending":[{"id":1,"project":"/p","kind":"network","operation":"connect","target":"127.0.0.1:9"}]}"#,
];

/// A Unix user made for one test, deleted at its end.
pub struct User {
    /// Its login name.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
}

impl User {
    /// `useradd` with `home` as its home (not created), unlocked for sshd without PAM.
    pub fn add(home: &Path) -> Self {
        // Unique among the tests of this process, which run at once.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("lsr{}x{n}", std::process::id());
        let status = std::process::Command::new("useradd")
            .args(["-M", "-s", "/bin/sh", "-d"])
            .arg(home)
            .arg(&name)
            .status()
            .expect("run useradd");
        assert!(status.success(), "useradd {name}: {status}");
        // A new user is locked ('!'), which sshd without PAM refuses even with a key.
        let status = std::process::Command::new("usermod")
            .args(["-p", "*", &name])
            .status()
            .expect("run usermod");
        assert!(status.success(), "usermod -p '*' {name}: {status}");
        let id = |flag: &str| -> u32 {
            let out = std::process::Command::new("id")
                .args([flag, &name])
                .output()
                .expect("run id");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("a numeric id")
        };
        Self {
            uid: id("-u"),
            gid: id("-g"),
            name,
        }
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel")
            .arg(&self.name)
            .stderr(Stdio::null())
            .status();
    }
}

/// `chown -R uid:gid path`.
pub fn chown_all(path: &Path, uid: u32, gid: u32) {
    let status = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .status()
        .expect("run chown");
    assert!(status.success(), "chown {}: {status}", path.display());
}

/// A key pair made with ssh-keygen: (private key, public key line).
pub fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("run ssh-keygen");
    assert!(status.success(), "ssh-keygen {name}: {status}");
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("the public key");
    (key, public.trim().to_owned())
}

/// The test's sshd and the files the desktop passes to ssh.
pub struct Sshd {
    _child: Child,
    /// Its loopback port.
    pub port: u16,
    /// The key the remote user accepts (with a user).
    pub key: PathBuf,
    /// A key it does not accept.
    pub stranger: PathBuf,
    /// A key the remote user accepts only to run a forced command that answers as a
    /// bridge of a later protocol (with a user).
    pub future: PathBuf,
    /// A known-hosts file naming the sshd's host key.
    pub known_hosts: PathBuf,
    /// A known-hosts file naming another key for the sshd's address: "the host key has
    /// changed".
    pub changed_hosts: PathBuf,
    /// An empty known-hosts file.
    pub unknown_hosts: PathBuf,
}

impl Sshd {
    /// Starts `/usr/sbin/sshd -D -e` on a free loopback port, its files in `dir`; with
    /// `user` (and that user's home), that user alone may log in, with [`Sshd::key`] or
    /// [`Sshd::future`], and passwords are offered too (the user has none that works): a
    /// client without an accepted key meets a password-only remote, where `ssh` must never
    /// ask. Without a user, passwords are refused. Waits (bounded) until it listens.
    pub async fn start(dir: &Path, user: Option<(&User, &Path)>) -> Self {
        let sshd = Path::new("/usr/sbin/sshd");
        assert!(
            sshd.is_file(),
            "/usr/sbin/sshd is missing: run scripts/setup.sh --test (openssh-server)"
        );
        std::fs::create_dir_all("/run/sshd").expect("mkdir /run/sshd (needs root)");
        let (host_key, host_public) = keygen(dir, "host_key");
        let (key, public) = keygen(dir, "client_key");
        let (stranger, _) = keygen(dir, "stranger_key");
        let (future, future_public) = keygen(dir, "future_key");
        let (_, other_host) = keygen(dir, "other_host_key");
        let port = crate::webdriver::free_port();
        let known_hosts = dir.join("known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_public}\n"))
            .expect("write known_hosts");
        let changed_hosts = dir.join("changed_hosts");
        std::fs::write(&changed_hosts, format!("[127.0.0.1]:{port} {other_host}\n"))
            .expect("write changed_hosts");
        let unknown_hosts = dir.join("unknown_hosts");
        std::fs::write(&unknown_hosts, "").expect("write unknown_hosts");
        let mut config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nUsePAM no\n\
             PasswordAuthentication {}\nKbdInteractiveAuthentication no\nStrictModes no\n\
             PermitUserEnvironment yes\n",
            host_key.display(),
            dir.join("sshd.pid").display(),
            if user.is_some() { "yes" } else { "no" },
        );
        if let Some((user, home)) = user {
            let ssh_dir = home.join(".ssh");
            std::fs::create_dir_all(&ssh_dir).expect("mkdir ~/.ssh");
            // The forced command reads its input to the end, as a bridge does.
            let forced = format!(
                "printf '%s\\n' '{}' '{}'; cat >/dev/null",
                FUTURE_LINES[0], FUTURE_LINES[1]
            );
            std::fs::write(
                ssh_dir.join("authorized_keys"),
                format!(
                    "{public}\ncommand=\"{}\" {future_public}\n",
                    forced.replace('"', "\\\"")
                ),
            )
            .expect("authorized_keys");
            chown_all(&ssh_dir, user.uid, user.gid);
            config.push_str(&format!("AllowUsers {}\n", user.name));
        }
        let config_file = dir.join("sshd_config");
        std::fs::write(&config_file, config).expect("write sshd_config");
        let mut child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&config_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start sshd");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let listening = tokio::time::timeout(crate::EVENT_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("sshd: {line}");
                if line.contains("Server listening on") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(listening, Ok(true), "sshd did not start listening");
        // Its later lines are kept flowing (and shown with the test's output).
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("sshd: {line}");
            }
        });
        Self {
            _child: child,
            port,
            key,
            stranger,
            future,
            known_hosts,
            changed_hosts,
            unknown_hosts,
        }
    }
}

/// Adds `name` on `port` of loopback, where nothing listens (ssh: "Connection refused").
pub async fn add_unreachable(world: &crate::real_app::AppWorld, name: &str, port: u16) {
    let known_hosts = world.home.join(".ssh/known_hosts_test");
    world
        .ctl_ok(&[
            "remote",
            "add",
            name,
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--known-hosts",
            crate::real_app::path_str(&known_hosts),
        ])
        .await;
}
