//! The query socket, landstrip's side of the app: the line protocol it speaks, the
//! listener that reads every connection continuously, and who is at the other end.

pub mod listener;
pub mod peer;
pub mod protocol;
