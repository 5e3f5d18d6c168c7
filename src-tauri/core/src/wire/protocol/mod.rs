//! The landstrip query socket protocol.
//!
//! landstrip writes one JSON trap per line; the presenter answers queries with
//! one JSON response per line. [`LineFramer`] splits a connection's bytes into
//! lines, [`decode_line`] classifies each, [`response_line`] builds answers.

mod decode;
mod framer;
mod query_id;
mod response;
mod trap;

pub use decode::{decode_line, parse_line, Parsed};
pub use framer::{LineFramer, LineTooLong, Lines, MAX_LINE};
pub use query_id::{QueryId, QueryIdError, QueryIdKind, MAX_QUERY_ID_LEN};
pub use response::{response_line, write_response, Action};
pub use trap::{
    Access, Denial, DenialState, FsAccess, FsOperation, IgnoreReason, InternalTrap, LaunchTrap,
    Line, NetAccess, NetOperation, ProcessInfo, Query, QueryKind, Reason, SessionId,
    SuggestedGrant, TerminalTrap, TrapProblem, UsageTrap, MAX_SESSION_ID_LEN,
};

#[cfg(test)]
mod tests;
