//! What the dialog shows of a request of a run after a secret (docs/ARCHITECTURE.md,
//! "After a secret"): the earlier read, in red, and for a network request the answers
//! it may have: Once, "this address for this run", Deny (the default).

use std::path::Path;

use serde::Serialize;

use crate::decision::after_secret::SecretRead;
use crate::decision::answer::ChoiceKey;
use crate::surfaces::choice::ChoiceView;
use crate::words::Shown;

/// The earlier read a marked request is shown with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AfterSecretView {
    /// The secret read, home-relative (`~/.aws/credentials`) and in full.
    pub path: Shown,
    /// What the location holds, e.g. "AWS credentials".
    pub what: String,
    /// When the read was allowed (ms since the epoch): the page says how long ago.
    pub at_ms: u64,
    /// A network request: only Once, "this address for this run" and Deny are offered,
    /// Deny the default. A write outside the project keeps its usual answers.
    pub network: bool,
}

impl AfterSecretView {
    /// The view of `read` for a request that is (`network`) or is not a network request.
    pub fn new(read: &SecretRead, home: &Path, network: bool) -> Self {
        Self {
            path: Shown::path(Path::new(&read.path), home),
            what: read.what.clone(),
            at_ms: read.at_ms,
            network,
        }
    }
}

/// The buttons of a network request of a run after a secret: allow once (with the read
/// in view: the page sends `confirmed_after_secret`), allow this address for this run
/// (the page sends `for: "run"`), deny (the default). Nothing that outlives the run or
/// reaches beyond the address, and no bulk answer.
pub fn after_secret_choices(target: &str, read: &AfterSecretView) -> Vec<ChoiceView> {
    vec![
        ChoiceView {
            key: ChoiceKey::Once,
            name: "once",
            label: "Allow once".to_owned(),
            short: "Allow once".to_owned(),
            shortcut: 'O',
            hint: format!(
                "Allow this one connection to {target}, knowing this run read {} earlier.",
                read.path.text
            ),
            default: false,
            two_step: false,
        },
        ChoiceView {
            key: ChoiceKey::Session,
            name: "session",
            label: "Allow this address for this run".to_owned(),
            short: "This run".to_owned(),
            shortcut: 'S',
            hint: format!(
                "Allow {target} until this run ends, knowing it read {} earlier; any other address still asks.",
                read.path.text
            ),
            default: false,
            two_step: false,
        },
        ChoiceView {
            key: ChoiceKey::Deny,
            name: "deny",
            label: "Deny".to_owned(),
            short: "Deny".to_owned(),
            shortcut: 'D',
            hint: "The program gets “permission denied” (EACCES).".to_owned(),
            default: true,
            two_step: false,
        },
    ]
}
