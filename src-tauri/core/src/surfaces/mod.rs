//! What the surfaces (the dialog, notifications, the settings window, `ctl`) share: the
//! operations they all call, the control socket `ctl` speaks, the dialog's view of a
//! prompt, and how paths and programs are written for people.

pub mod control;
pub mod ops;
pub mod preview;
pub mod prompt_view;
pub mod words;
