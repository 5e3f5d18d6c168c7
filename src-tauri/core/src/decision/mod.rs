//! Deciding a held query: the broker's table of prompts and its automatic rules, the one
//! answer path every surface takes, session grants, the scopes an answer may widen to, the
//! runs after a secret, the canaries (decoys whose read trips a wire), and the app's own state no sandboxed program may touch (which
//! locations are sensitive is a policy fact: `policy::sensitive`).

pub mod after_secret;
pub mod answer;
pub mod broker;
pub mod canary;
pub mod grants;
pub mod own_state;
pub mod prompt;
pub mod scope;
