//! Serving projects: which projects the app answers for, the listener that reads every
//! connection and hands each query to the broker, the discovery files launchers find it by,
//! the contest with another presenter of the same project, and the phone page's HTTPS
//! server (web/).

pub mod discovery;
pub mod listener;
pub mod remote;
pub mod service;
pub mod web;
