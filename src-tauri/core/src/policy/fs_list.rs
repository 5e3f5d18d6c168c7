//! The six filesystem lists of sandbox.json as one type: [`FsList`] names a list and
//! knows its facts (its JSON key, whether it is about reads or writes, whether it allows
//! or denies, whether no approval may lift it), and [`FsLists`] holds one value per list.
//! The parsed file, the merged config, the merge's per-entry sources and the matcher's
//! compiled rules are all an `FsLists<_>`, so a new list is a variant, its facts and a
//! field here, plus the places whose meaning really differs (the matcher's rules, the
//! hand-over to landstrip, the words).

use std::ops::{Index, IndexMut};

use serde::{Deserialize, Serialize};

/// One of the six filesystem lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FsList {
    DenyRead,
    AllowRead,
    AllowWrite,
    DenyWrite,
    /// Roots no approval, session grant or allow entry may override (later plugins).
    DenyReadAlways,
    /// Roots no approval, session grant or allow entry may override (later plugins).
    DenyWriteAlways,
}

/// What a list's entries are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// What a list does to the access it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Allow,
    Deny,
    /// A denial no approval, session grant or allow entry may lift.
    DenyAlways,
}

impl FsList {
    /// All six lists, in the order the plugin's file lists them.
    pub const ALL: [FsList; 6] = [
        FsList::DenyRead,
        FsList::AllowRead,
        FsList::AllowWrite,
        FsList::DenyWrite,
        FsList::DenyReadAlways,
        FsList::DenyWriteAlways,
    ];

    /// The one table of each list's facts: its key inside the `filesystem` object, what
    /// it is about and what it does.
    const fn facts(self) -> (&'static str, Access, Effect) {
        match self {
            FsList::DenyRead => ("denyRead", Access::Read, Effect::Deny),
            FsList::AllowRead => ("allowRead", Access::Read, Effect::Allow),
            FsList::AllowWrite => ("allowWrite", Access::Write, Effect::Allow),
            FsList::DenyWrite => ("denyWrite", Access::Write, Effect::Deny),
            FsList::DenyReadAlways => ("denyReadAlways", Access::Read, Effect::DenyAlways),
            FsList::DenyWriteAlways => ("denyWriteAlways", Access::Write, Effect::DenyAlways),
        }
    }

    /// The key of this list inside the `filesystem` object.
    pub fn json_key(self) -> &'static str {
        self.facts().0
    }

    /// Whether its entries are about reading (otherwise about writing).
    pub fn reads(self) -> bool {
        matches!(self.facts().1, Access::Read)
    }

    /// Whether its entries are about writing (otherwise about reading).
    pub fn writes(self) -> bool {
        matches!(self.facts().1, Access::Write)
    }

    /// Whether its entries allow access (otherwise they deny it).
    pub fn allows(self) -> bool {
        matches!(self.facts().2, Effect::Allow)
    }

    /// Whether its entries deny access (otherwise they allow it).
    pub fn denies(self) -> bool {
        !self.allows()
    }

    /// Whether it is a hard denial no approval, session grant or allow entry may lift.
    pub fn always(self) -> bool {
        matches!(self.facts().2, Effect::DenyAlways)
    }

    /// The hard-denial list that blocks entries of this allow list: denyReadAlways for
    /// allowRead, denyWriteAlways for allowWrite.
    pub fn blocked_by(self) -> Option<FsList> {
        if !self.allows() {
            return None;
        }
        FsList::ALL
            .into_iter()
            .find(|list| list.always() && list.facts().1 == self.facts().1)
    }

    /// The list whose `filesystem` key is `key`.
    pub fn from_json_key(key: &str) -> Option<FsList> {
        FsList::ALL.into_iter().find(|list| list.json_key() == key)
    }

    /// The key path of this list in a sandbox.json file.
    pub fn key_path(self) -> [&'static str; 2] {
        ["filesystem", self.json_key()]
    }
}

/// One value per filesystem list: the entries of a file (`Option<Vec<String>>`, absent
/// when the file does not set the list), of the effective config (`Vec<String>`), where
/// each effective entry came from (`Vec<Source>`), or the matcher's compiled rules.
///
/// Its JSON is an object keyed by [`FsList::json_key`] in [`FsList::ALL`]'s order; an
/// absent (`None`) list is left out, and the lists the later plugins added may be missing
/// when read back. Named fields rather than an array, so the hot paths (the matcher's
/// checks) reach a list directly and code that knows which list it wants says so.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "T: Serialize + ListValue",
        deserialize = "T: Deserialize<'de> + Default"
    )
)]
pub struct FsLists<T> {
    #[serde(skip_serializing_if = "ListValue::is_absent")]
    pub deny_read: T,
    #[serde(skip_serializing_if = "ListValue::is_absent")]
    pub allow_read: T,
    #[serde(skip_serializing_if = "ListValue::is_absent")]
    pub allow_write: T,
    #[serde(skip_serializing_if = "ListValue::is_absent")]
    pub deny_write: T,
    // Later plugins' lists: JSON written before them has no such key.
    #[serde(default, skip_serializing_if = "ListValue::is_absent")]
    pub deny_read_always: T,
    #[serde(default, skip_serializing_if = "ListValue::is_absent")]
    pub deny_write_always: T,
}

impl<T> FsLists<T> {
    /// The value of one list.
    pub fn get(&self, list: FsList) -> &T {
        match list {
            FsList::DenyRead => &self.deny_read,
            FsList::AllowRead => &self.allow_read,
            FsList::AllowWrite => &self.allow_write,
            FsList::DenyWrite => &self.deny_write,
            FsList::DenyReadAlways => &self.deny_read_always,
            FsList::DenyWriteAlways => &self.deny_write_always,
        }
    }

    /// The value of one list, to change.
    pub fn get_mut(&mut self, list: FsList) -> &mut T {
        match list {
            FsList::DenyRead => &mut self.deny_read,
            FsList::AllowRead => &mut self.allow_read,
            FsList::AllowWrite => &mut self.allow_write,
            FsList::DenyWrite => &mut self.deny_write,
            FsList::DenyReadAlways => &mut self.deny_read_always,
            FsList::DenyWriteAlways => &mut self.deny_write_always,
        }
    }

    /// One value per list, each made by `make`.
    pub fn from_fn(mut make: impl FnMut(FsList) -> T) -> Self {
        Self {
            deny_read: make(FsList::DenyRead),
            allow_read: make(FsList::AllowRead),
            allow_write: make(FsList::AllowWrite),
            deny_write: make(FsList::DenyWrite),
            deny_read_always: make(FsList::DenyReadAlways),
            deny_write_always: make(FsList::DenyWriteAlways),
        }
    }

    /// Every list and its value, in [`FsList::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (FsList, &T)> + '_ {
        FsList::ALL.into_iter().map(|list| (list, self.get(list)))
    }

    /// The same lists, each value made from this one's by `make`.
    pub fn map<U>(&self, mut make: impl FnMut(FsList, &T) -> U) -> FsLists<U> {
        FsLists::from_fn(|list| make(list, self.get(list)))
    }
}

impl<T> Index<FsList> for FsLists<T> {
    type Output = T;

    fn index(&self, list: FsList) -> &T {
        self.get(list)
    }
}

impl<T> IndexMut<FsList> for FsLists<T> {
    fn index_mut(&mut self, list: FsList) -> &mut T {
        self.get_mut(list)
    }
}

impl<T> FsLists<Vec<T>> {
    /// The entries of one list.
    pub fn list(&self, list: FsList) -> &[T] {
        self.get(list)
    }
}

impl<T> FsLists<Option<Vec<T>>> {
    /// The entries of one list, if it is set.
    pub fn list(&self, list: FsList) -> Option<&[T]> {
        self.get(list).as_deref()
    }
}

/// A value an [`FsLists`] holds per list, as its JSON sees it: whether it is left out.
pub trait ListValue {
    /// Whether the list is absent (a file that does not set it) and so not written.
    fn is_absent(&self) -> bool;
}

impl<T> ListValue for Vec<T> {
    fn is_absent(&self) -> bool {
        false
    }
}

impl<T> ListValue for Option<T> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_container_holds_every_list_and_its_json_keys_follow_all() {
        // Each list reaches its own value, and the JSON names exactly ALL's keys in order:
        // a field missing from ALL, or a list read from another's field, fails here.
        let lists = FsLists::from_fn(|list| vec![list.json_key().to_owned()]);
        for (list, value) in lists.iter() {
            assert_eq!(value, &[list.json_key()], "{list:?}");
            assert_eq!(lists[list], lists.list(list));
        }
        let json = serde_json::to_string(&lists).expect("serialises");
        let expected: Vec<String> = FsList::ALL
            .into_iter()
            .map(|list| format!("\"{0}\":[\"{0}\"]", list.json_key()))
            .collect();
        assert_eq!(json, format!("{{{}}}", expected.join(",")));
        let back: FsLists<Vec<String>> = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, lists);
        // A file's lists: only those it sets are written.
        let file = FsLists {
            deny_write_always: Some(vec!["locked".to_owned()]),
            ..FsLists::default()
        };
        assert_eq!(
            serde_json::to_string(&file).expect("serialises"),
            r#"{"denyWriteAlways":["locked"]}"#
        );
    }

    #[test]
    fn facts_of_each_list() {
        let described: Vec<_> = FsList::ALL
            .into_iter()
            .map(|l| {
                (
                    l.json_key(),
                    l.reads(),
                    l.allows(),
                    l.always(),
                    l.blocked_by(),
                )
            })
            .collect();
        assert_eq!(
            described,
            [
                ("denyRead", true, false, false, None),
                ("allowRead", true, true, false, Some(FsList::DenyReadAlways)),
                (
                    "allowWrite",
                    false,
                    true,
                    false,
                    Some(FsList::DenyWriteAlways)
                ),
                ("denyWrite", false, false, false, None),
                ("denyReadAlways", true, false, true, None),
                ("denyWriteAlways", false, false, true, None),
            ]
        );
        for list in FsList::ALL {
            assert_ne!(list.reads(), list.writes(), "{list:?}");
            assert_ne!(list.allows(), list.denies(), "{list:?}");
        }
    }
}
