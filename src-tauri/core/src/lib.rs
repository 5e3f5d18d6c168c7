//! The headless core of landstrip-tray. Nothing here imports Tauri, so all of it is tested
//! without a display. Its parts, from the socket up (docs/ARCHITECTURE.md, Layout):
//! the wire ([`wire`]), the decision ([`decision`]) with the command behind a request
//! ([`origin`]), the policy files ([`policy`]), serving projects ([`serving`]), the activity
//! log ([`activity`]), the write journal and undo ([`journal`]), the operations the surfaces share ([`surfaces`]) and the app's own
//! settings file ([`app_settings`]); plain helpers at the bottom.

pub mod activity;
pub mod app_settings;
pub mod decision;
pub mod journal;
pub mod origin;
pub mod policy;
pub mod serving;
pub mod surfaces;
pub mod wire;

pub mod duration;
pub mod landstrip;
pub mod lexical;
pub mod opencode_cli;
pub mod paths;
pub mod safe_fs;
mod sys;
pub mod words;

pub use sys::{
    become_subreaper, children_named, end_children_named, inheritable, pidfd_terminate,
    process_group, raise_open_files_limit, reap, release_free_memory, send_signal, uid,
    wait_for_exit, CaughtSignals, ReceivedSignal, SignalReceiver,
};
