//! The words of `ctl canary` and `ctl incident` (clap) and the requests they build.

use std::path::PathBuf;

use clap::Subcommand;
use landstrip_tray_core::decision::canary::IncidentAction;
use landstrip_tray_core::surfaces::control::Request;

use super::absolute;

#[derive(Debug, Subcommand)]
pub(super) enum CanaryWords {
    /// Make PATH a canary: a decoy credential is written there unless a file exists
    #[command(
        long_about = "Make PATH a canary. Unless a file is there, a realistic but fake \
credential is written, shaped after its name: AWS credentials, an SSH private key, an \
.npmrc token or a .env with tokens (0600, its missing folders 0700). A sandboxed read of \
it is denied at once, never asked, and its run's confined processes are stopped. Refused \
when a served project's policy lets sandboxed programs read it without asking, or it lies \
under an Always root: the wire would never trip."
    )]
    Add {
        /// The decoy's path
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// The canaries
    List,
    /// Stop treating PATH as a canary (its file stays)
    Remove {
        /// The canary's path
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
}

impl CanaryWords {
    /// The request these words ask for.
    pub(super) fn request(self) -> Request {
        match self {
            CanaryWords::Add { path } => Request::CanaryAdd {
                path: absolute(&path),
            },
            CanaryWords::List => Request::Canaries,
            CanaryWords::Remove { path } => Request::CanaryRemove {
                path: absolute(&path),
            },
        }
    }
}

#[derive(Debug, Subcommand)]
pub(super) enum IncidentWords {
    /// Let a stopped run go on (SIGCONT to the processes it stopped)
    Resume {
        /// The incident (see ctl incidents)
        #[arg(value_name = "ID")]
        id: u64,
    },
    /// Kill a stopped run (SIGKILL to the processes it stopped; its held requests denied)
    Kill {
        /// The incident (see ctl incidents)
        #[arg(value_name = "ID")]
        id: u64,
    },
}

impl IncidentWords {
    /// The request these words ask for.
    pub(super) fn request(self) -> Request {
        match self {
            IncidentWords::Resume { id } => Request::IncidentAct {
                id,
                action: IncidentAction::Resume,
            },
            IncidentWords::Kill { id } => Request::IncidentAct {
                id,
                action: IncidentAction::Kill,
            },
        }
    }
}
