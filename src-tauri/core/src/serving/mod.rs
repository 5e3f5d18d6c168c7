//! Serving projects: which projects the app answers for, the discovery files launchers
//! find it by, and the contest with another presenter of the same project.

pub mod discovery;
pub mod service;
