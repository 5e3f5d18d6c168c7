//! A remote's state as people read it, told from what `ssh` printed, and the backoff
//! between attempts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a remote stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteState {
    /// `ssh` is starting, or the bridge has not said hello yet.
    Connecting,
    /// The bridge answered: its requests are shown here.
    Connected,
    /// The machine could not be reached (or the connection was lost).
    Unreachable,
    /// `ssh` has no key the remote accepts; a password is never asked.
    NeedsKey,
    /// The remote's host key is not known: never accepted silently.
    HostKeyUnknown,
    /// The remote's host key is not the one known: never accepted silently.
    HostKeyChanged,
    /// The remote app is not running (its control socket does not answer).
    NotRunning,
    /// The remote's bridge speaks another protocol version.
    ProtocolMismatch,
    /// Anything else (the remote has no landstrip-tray, the bridge was refused…).
    Failed,
}

impl RemoteState {
    /// The snake_case word `ctl remote list` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Unreachable => "unreachable",
            Self::NeedsKey => "needs_key",
            Self::HostKeyUnknown => "host_key_unknown",
            Self::HostKeyChanged => "host_key_changed",
            Self::NotRunning => "not_running",
            Self::ProtocolMismatch => "protocol_mismatch",
            Self::Failed => "failed",
        }
    }
}

/// How much of `ssh`'s standard error is kept to tell what went wrong.
pub const MAX_STDERR: usize = 16 * 1024;

/// What `ssh`'s standard error says went wrong before the bridge spoke, and the words for
/// a person. `destination` is named in the advice to run `ssh` once by hand.
pub fn classify(stderr: &str, exit: Option<i32>, destination: &str) -> (RemoteState, String) {
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(crate::serving::remote::wire::clean)
        .unwrap_or_default();
    let run_once = format!(
        "run `ssh {destination}` once in a terminal, compare the key's fingerprint and accept it there"
    );
    if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        (
            RemoteState::HostKeyChanged,
            format!("the remote's host key changed (it may be an attack); if the change is expected, fix the known hosts file, then {run_once}"),
        )
    } else if stderr.contains("Host key verification failed")
        || (stderr.contains("No ") && stderr.contains("host key is known"))
    {
        (
            RemoteState::HostKeyUnknown,
            format!("the remote's host key is not known: {run_once}"),
        )
    } else if stderr.contains("Permission denied") {
        (
            RemoteState::NeedsKey,
            format!("the remote accepts none of the keys offered (a password is never asked): add a key with ssh-copy-id {destination}, or name one with --identity"),
        )
    } else if exit == Some(255) {
        (
            RemoteState::Unreachable,
            if last.is_empty() {
                "ssh could not reach it".to_owned()
            } else {
                last
            },
        )
    } else if exit == Some(127) || stderr.contains("command not found") {
        (
            RemoteState::Failed,
            "landstrip-tray was not found on the remote's PATH".to_owned(),
        )
    } else {
        (
            RemoteState::Failed,
            if last.is_empty() {
                format!("the bridge ended without a word (exit {exit:?})")
            } else {
                last
            },
        )
    }
}

/// The wait between attempts: 1 s, doubling to at most [`Backoff::MAX`]; back to 1 s after
/// a connection that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Backoff {
    /// The first wait.
    pub const FIRST: Duration = Duration::from_secs(1);
    /// The longest wait (the "at most every 5 minutes").
    pub const MAX: Duration = Duration::from_secs(300);

    /// The wait before the next attempt; the one after is twice as long, up to the cap.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        wait
    }

    /// A connection worked: the next failure waits [`Backoff::FIRST`] again.
    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_s_words_are_told_apart() {
        let changed = "@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.\n";
        assert_eq!(
            classify(changed, Some(255), "d").0,
            RemoteState::HostKeyChanged
        );
        let unknown = "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n";
        let (state, detail) = classify(unknown, Some(255), "u@h");
        assert_eq!(state, RemoteState::HostKeyUnknown);
        assert!(detail.contains("`ssh u@h`"), "{detail}");
        assert_eq!(
            classify(
                "u@127.0.0.1: Permission denied (publickey).\n",
                Some(255),
                "d"
            )
            .0,
            RemoteState::NeedsKey
        );
        let (state, detail) = classify(
            "ssh: connect to host 127.0.0.1 port 1: Connection refused\n",
            Some(255),
            "d",
        );
        assert_eq!(state, RemoteState::Unreachable);
        assert!(detail.contains("Connection refused"));
        assert_eq!(
            classify(
                "bash: line 1: landstrip-tray: command not found\n",
                Some(127),
                "d"
            )
            .0,
            RemoteState::Failed
        );
        assert_eq!(classify("", Some(1), "d").0, RemoteState::Failed);
    }

    #[test]
    fn the_backoff_doubles_to_five_minutes_and_resets() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..12).map(|_| backoff.next_wait().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        backoff.reset();
        assert_eq!(backoff.next_wait(), Backoff::FIRST);
    }
}
