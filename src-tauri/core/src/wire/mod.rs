//! The query socket, landstrip's side of the app: the line protocol it speaks and who is at
//! the other end. The listener that reads every connection is `serving::listener`.

pub mod peer;
pub mod protocol;
