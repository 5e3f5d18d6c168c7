//! The headless core of landstrip-tray: the query socket protocol, listeners and
//! discovery, policy files, session grants, the broker and the activity log. Nothing here
//! imports Tauri, so all of it is tested without a display.

pub mod activity;
pub mod answer;
pub mod autostart;
pub mod broker;
pub mod control;
pub mod discovery;
pub mod display;
pub mod duration;
pub mod first_run;
pub mod grants;
pub mod insights;
pub mod landstrip;
pub mod lexical;
pub mod listener;
pub mod ops;
pub mod origin;
pub mod paths;
pub mod peer;
pub mod policy;
pub mod project;
pub mod prompt;
pub mod prompt_view;
pub mod protocol;
pub mod safe_fs;
pub mod sandboxed;
pub mod scope;
pub mod sensitive;
pub mod service;
pub mod settings;
mod sys;

pub use sys::{
    become_subreaper, children_named, end_children_named, inheritable, pidfd_terminate,
    process_group, reap, release_free_memory, send_signal, uid, wait_for_exit, CaughtSignals,
    ReceivedSignal, SignalReceiver,
};
