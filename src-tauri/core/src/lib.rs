//! The headless core of landstrip-tray: the query socket protocol, listeners and
//! discovery, policy files, session grants, the broker and the activity log. Nothing here
//! imports Tauri, so all of it is tested without a display.

pub mod activity;
pub mod answer;
pub mod broker;
pub mod control;
pub mod discovery;
pub mod display;
pub mod grants;
pub mod insights;
pub mod listener;
pub mod ops;
pub mod paths;
pub mod peer;
pub mod policy;
pub mod project;
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
    children_named, end_children_named, inheritable, pidfd_terminate, release_free_memory,
    send_signal, uid,
};
