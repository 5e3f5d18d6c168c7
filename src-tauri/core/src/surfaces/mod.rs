//! What the surfaces (the dialog, notifications, the settings window, `ctl`) share: the
//! operations they all call, the control socket `ctl` speaks, the dialog's view of a
//! prompt (and of one after a secret) and which one it shows, a grant's preview, the activity view's rows and what it learns from a session, and
//! the welcome window's offer, and the phone page (web/).

pub mod activity_rows;
pub mod after_secret_view;
pub mod bridge;
pub mod choice;
pub mod control;
pub mod dialog_queue;
pub mod first_run;
pub mod insights;
pub mod operations;
pub mod ops;
pub mod preview;
pub mod prompt_view;
pub mod web;
