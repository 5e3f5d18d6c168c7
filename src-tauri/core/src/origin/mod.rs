//! The command behind a request: the asking process's command line and its parents up to
//! the command landstrip started, each named as people know it, with secrets masked
//! before anything leaves this module, and what opencode knows about the call
//! (docs/ARCHITECTURE.md, "The command behind a request").
//!
//! Built once per prompt, on the connection's reader thread just before the prompt opens;
//! requests the rules answer by themselves never read `/proc`.

pub mod mask;
pub mod opencode;
pub mod procfs;
pub mod program;
pub mod shell_words;
pub mod text;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use opencode::{OpencodeCall, OpencodeStore, StoreEnv};

use crate::wire::protocol::ProcessInfo;
use crate::words::Shown;

/// How long one link's command may be in the activity log.
const LOGGED_COMMAND: usize = 4096;

/// One process between landstrip and the request, its secrets masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainLink {
    /// Its pid.
    pub pid: u32,
    /// Its executable, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The program as people know it: `npm`, `python3 manage.py`.
    pub program: String,
    /// Its arguments as a command line (`text`: one line, shortened; `full`: all of it).
    pub argv: Shown,
    /// The command as people read it (`npm ci`; CMD for `sh -c CMD`).
    pub command: Shown,
}

/// The command behind a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The processes from the command landstrip started (first) down to the one asking
    /// (last). Empty when the asking process could not be read (it is gone, or its pid
    /// names another program now).
    pub chain: Vec<ChainLink>,
    /// The chain stops short of landstrip's command: there were more parents than read.
    #[serde(default)]
    pub chain_cut: bool,
    /// What opencode knows about the call, for a run of an opencode session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opencode: Option<OpencodeCall>,
}

impl Origin {
    /// Reads the origin of a request from `process` (the query's), under `proc`
    /// (`/proc`), and asks `store` about `session`'s call. None when nothing is known
    /// beyond what the query carries.
    pub fn read(
        proc: &Path,
        process: Option<&ProcessInfo>,
        session: Option<&str>,
        store: Option<&OpencodeStore>,
    ) -> Option<Self> {
        let walk = process
            .and_then(|p| Some((p.pid?, p.exe.as_deref())))
            .and_then(|(pid, exe)| procfs::walk(proc, pid, exe));
        // The command string as the opencode plugin quoted it into its wrapper, unmasked:
        // only to find the call, never kept.
        let started_raw = walk
            .as_ref()
            .filter(|w| !w.cut)
            .and_then(|w| w.chain.last())
            .and_then(|top| program::shell_command_of(&top.argv))
            .map(str::to_owned);
        let landstrip = walk.as_ref().and_then(|w| w.landstrip);
        let (chain, chain_cut) = match walk {
            Some(walk) => {
                let mut links: Vec<ChainLink> = walk.chain.iter().map(link).collect();
                links.reverse();
                (links, walk.cut)
            }
            None => (Vec::new(), false),
        };
        let opencode = match (session, store) {
            (Some(session), Some(store)) => {
                let env = landstrip.map_or_else(StoreEnv::default, |pid| store_env(proc, pid));
                store.lookup(session, started_raw.as_deref(), &env)
            }
            _ => None,
        };
        if chain.is_empty() && opencode.is_none() {
            return None;
        }
        Some(Self {
            chain,
            chain_cut,
            opencode,
        })
    }

    /// The process that asked, when it was read.
    pub fn asking(&self) -> Option<&ChainLink> {
        self.chain.last()
    }

    /// The command landstrip started, when it was read (the first link, unless cut).
    pub fn started(&self) -> Option<&ChainLink> {
        if self.chain_cut {
            None
        } else {
            self.chain.first()
        }
    }

    /// The asking process's command as the activity log keeps it (full, bounded).
    pub fn logged_command(&self) -> Option<String> {
        self.asking()
            .map(|l| text::shorten_middle(&l.command.full, LOGGED_COMMAND))
    }

    /// The whole chain as the activity log keeps it: each link's arguments, bounded.
    pub fn logged_chain(&self) -> Vec<String> {
        self.chain
            .iter()
            .map(|l| text::shorten_middle(&l.argv.full, LOGGED_COMMAND))
            .collect()
    }
}

/// Where landstrip's process (`pid`), and so the opencode that started it, was told
/// opencode's store is; nothing when its environment is unreadable.
fn store_env(proc: &Path, pid: u32) -> StoreEnv {
    match procfs::read_environ(proc, pid, &StoreEnv::NAMES) {
        Ok(vars) => StoreEnv::from_vars(vars.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        Err(e) => {
            tracing::debug!(pid, error = %e, "landstrip's environment is not readable");
            StoreEnv::default()
        }
    }
}

/// A process as a chain link: masked first, then named and written out.
fn link(entry: &procfs::ProcEntry) -> ChainLink {
    let argv = mask::mask_argv(&entry.argv);
    let named = program::name(&argv, entry.exe.as_deref());
    let mut full = text::join(&argv);
    if entry.argv_cut {
        full.push_str(" …");
    }
    if argv.is_empty() {
        full = named.full.clone();
    }
    let short_words: Vec<String> = argv.iter().map(|w| text::short_word(w, 40)).collect();
    let short = if argv.is_empty() {
        named.short.clone()
    } else {
        text::shorten_middle(&text::join(&short_words), program::SHORT_COMMAND)
    };
    ChainLink {
        pid: entry.pid,
        exe: entry.exe.as_deref().map(text::printable),
        program: named.program,
        argv: Shown { text: short, full },
        command: Shown {
            text: named.short,
            full: named.full,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, argv: &[&str]) -> procfs::ProcEntry {
        procfs::ProcEntry {
            pid,
            ppid: pid - 1,
            exe: None,
            argv: argv.iter().map(|w| (*w).to_owned()).collect(),
            argv_cut: false,
            confined: true,
        }
    }

    #[test]
    fn a_link_is_masked_before_it_is_named_or_written() {
        let l = link(&entry(
            7,
            &[
                "sh",
                "-c",
                "API_TOKEN=hunter2-secret-value ./deploy --password hunter2pw",
            ],
        ));
        assert_eq!(l.program, "deploy");
        assert_eq!(l.command.full, "API_TOKEN=*** ./deploy --password ***");
        assert_eq!(l.argv.full, "sh -c 'API_TOKEN=*** ./deploy --password ***'");
        let all = serde_json::to_string(&l).unwrap();
        assert!(!all.contains("hunter2"), "{all}");
    }

    #[test]
    fn a_gone_process_without_a_session_gives_no_origin() {
        let process = ProcessInfo {
            pid: Some(u32::MAX - 1),
            exe: Some("/usr/bin/dash".into()),
            cwd: None,
        };
        assert_eq!(
            Origin::read(Path::new("/proc"), Some(&process), None, None),
            None
        );
        assert_eq!(
            Origin::read(Path::new("/proc"), None, Some("ses_1"), None),
            None
        );
    }

    #[test]
    fn an_unconfined_process_gives_no_origin() {
        // The test runner is in no sandbox: a query naming it is not read.
        let process = ProcessInfo {
            pid: Some(std::process::id()),
            exe: None,
            cwd: None,
        };
        assert_eq!(
            Origin::read(Path::new("/proc"), Some(&process), None, None),
            None
        );
    }
}
