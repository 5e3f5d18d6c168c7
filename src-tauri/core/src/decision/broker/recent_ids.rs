//! Duplicate detection for query ids on one connection, bounded in memory.

use std::collections::{HashSet, VecDeque};

use crate::wire::protocol::QueryId;

/// How many ids a connection remembers. Landstrip never repeats an id; this only guards
/// against a peer replaying one, so remembering the most recent ones is enough.
pub const REMEMBERED_IDS: usize = 65_536;

/// The most recent query ids seen on a connection.
#[derive(Debug, Default)]
pub struct RecentIds {
    order: VecDeque<QueryId>,
    set: HashSet<QueryId>,
}

impl RecentIds {
    /// Records `id`; false if it was already seen (a duplicate to ignore).
    pub fn insert(&mut self, id: &QueryId) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() == REMEMBERED_IDS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.order.push_back(id.clone());
        self.set.insert(id.clone());
        true
    }
}
