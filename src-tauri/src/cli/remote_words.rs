//! The words of `ctl remote` and `ctl bridge` (clap) and the requests they build.

use std::path::PathBuf;

use clap::Subcommand;
use landstrip_tray_core::app_settings::remote::RemoteConfig;
use landstrip_tray_core::surfaces::control::Request;

use super::absolute;

/// What `ctl bridge` says of itself.
pub(super) const BRIDGE_ABOUT: &str =
    "Serve a desktop's SSH link: this machine's waiting requests out, answers in (run by the desktop's ssh)";

#[derive(Debug, Subcommand)]
pub(super) enum RemoteWords {
    /// Ask here about the requests of another machine, reached with ssh (keys only)
    #[command(
        long_about = "Ask here about the requests of another machine. The app keeps \
`ssh -T -o BatchMode=yes … -- DESTINATION landstrip-tray ctl bridge` running: keys or the \
agent only, never a password; an unknown or changed host key is never accepted (run `ssh \
DESTINATION` once yourself). Its requests show here as this machine's do, and every answer \
goes through that machine's own rules and changes its own files."
    )]
    Add {
        /// Its name here: letters, digits, '.', '_', '-' (at most 32)
        #[arg(value_name = "NAME")]
        name: String,
        /// As ssh takes it: user@host or a Host alias
        #[arg(value_name = "DESTINATION", allow_hyphen_values = true)]
        destination: String,
        /// ssh's -p
        #[arg(long, value_name = "P")]
        port: Option<u16>,
        /// The private key (ssh's -i, with IdentitiesOnly)
        #[arg(long, value_name = "FILE", value_parser = clap::value_parser!(PathBuf))]
        identity: Option<PathBuf>,
        /// The known hosts file to check its host key against
        #[arg(long, value_name = "FILE", value_parser = clap::value_parser!(PathBuf))]
        known_hosts: Option<PathBuf>,
    },
    /// The remote machines and their states
    List,
    /// Stop asking about a remote machine's requests
    Remove {
        /// Its name
        #[arg(value_name = "NAME")]
        name: String,
    },
}

impl RemoteWords {
    /// The request these words ask for.
    pub(super) fn request(self) -> Request {
        match self {
            RemoteWords::Add {
                name,
                destination,
                port,
                identity,
                known_hosts,
            } => Request::RemoteAdd {
                remote: RemoteConfig {
                    name,
                    destination,
                    port,
                    identity: identity.as_deref().map(absolute),
                    known_hosts: known_hosts.as_deref().map(absolute),
                },
            },
            RemoteWords::List => Request::Remotes,
            RemoteWords::Remove { name } => Request::RemoteRemove { name },
        }
    }
}
