//! One edit of a sandbox.json, by field name, as the settings view and `ctl policy` ask
//! for it: add or remove a list entry, set a boolean. The same minimal, validated, atomic
//! edit whichever surface asks (docs/ARCHITECTURE.md, "Policy files").

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::edit::{
    add_string, remove_member, remove_string, replace_string, set_bool, EditOutcome,
};
use super::plugin::LaterField;
use super::schema::{FsList, PolicyError};
use super::store::edit_file;

/// A string list of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListField {
    /// One of the six filesystem lists.
    Filesystem(FsList),
    /// `network.allowUnixSockets`.
    AllowUnixSockets,
    /// `network.allowedDomains`.
    AllowedDomains,
    /// `network.deniedDomains`.
    DeniedDomains,
}

impl ListField {
    /// Every list, in the order the plugin's file lists them: the filesystem lists as
    /// [`FsList::ALL`] has them, then the network lists.
    pub const ALL: [ListField; FsList::ALL.len() + 3] = {
        let mut all = [ListField::AllowUnixSockets; FsList::ALL.len() + 3];
        let mut i = 0;
        while i < FsList::ALL.len() {
            all[i] = ListField::Filesystem(FsList::ALL[i]);
            i += 1;
        }
        all[i] = ListField::AllowUnixSockets;
        all[i + 1] = ListField::AllowedDomains;
        all[i + 2] = ListField::DeniedDomains;
        all
    };

    /// The path of keys to the array, e.g. `["filesystem", "allowWrite"]`.
    pub fn key_path(self) -> [&'static str; 2] {
        match self {
            ListField::Filesystem(list) => ["filesystem", list.json_key()],
            ListField::AllowUnixSockets => ["network", "allowUnixSockets"],
            ListField::AllowedDomains => ["network", "allowedDomains"],
            ListField::DeniedDomains => ["network", "deniedDomains"],
        }
    }

    /// The later field this list is (`policy/plugin.rs`), if it is one.
    pub fn later_field(self) -> Option<LaterField> {
        match self {
            ListField::Filesystem(list) => LaterField::of_list(list),
            _ => None,
        }
    }

    /// The short name used on the command line: `allowWrite`, `allowedDomains`, …
    pub fn name(self) -> &'static str {
        self.key_path()[1]
    }
}

/// A boolean of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoolField {
    /// `enabled`.
    Enabled,
    /// `network.allowNetwork`.
    AllowNetwork,
    /// `network.allowLocalBinding`.
    AllowLocalBinding,
    /// `network.allowAllUnixSockets`.
    AllowAllUnixSockets,
}

impl BoolField {
    /// Every boolean.
    pub const ALL: [BoolField; 4] = [
        BoolField::Enabled,
        BoolField::AllowNetwork,
        BoolField::AllowLocalBinding,
        BoolField::AllowAllUnixSockets,
    ];

    /// The path of keys to the value.
    pub fn key_path(self) -> &'static [&'static str] {
        match self {
            BoolField::Enabled => &["enabled"],
            BoolField::AllowNetwork => &["network", "allowNetwork"],
            BoolField::AllowLocalBinding => &["network", "allowLocalBinding"],
            BoolField::AllowAllUnixSockets => &["network", "allowAllUnixSockets"],
        }
    }

    /// The dotted name: `enabled`, `network.allowNetwork`, …
    pub fn name(self) -> String {
        self.key_path().join(".")
    }
}

/// A field name that is not one of the policy's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a {kind} of sandbox.json (one of: {known})")]
pub struct UnknownField {
    /// What was asked for.
    pub name: String,
    /// "list" or "boolean field".
    pub kind: &'static str,
    /// The names that exist.
    pub known: String,
}

/// `allowWrite` or `filesystem.allowWrite`, `allowedDomains` or `network.allowedDomains`.
impl FromStr for ListField {
    type Err = UnknownField;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ListField::ALL
            .into_iter()
            .find(|list| name == list.name() || name == list.key_path().join("."))
            .ok_or_else(|| UnknownField {
                name: name.to_owned(),
                kind: "list",
                known: ListField::ALL.map(ListField::name).join(", "),
            })
    }
}

/// `enabled`, `network.allowNetwork` or just `allowNetwork`.
impl FromStr for BoolField {
    type Err = UnknownField;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        BoolField::ALL
            .into_iter()
            .find(|field| {
                name == field.name() || field.key_path().last().is_some_and(|last| name == *last)
            })
            .ok_or_else(|| UnknownField {
                name: name.to_owned(),
                kind: "boolean field",
                known: BoolField::ALL.map(BoolField::name).join(", "),
            })
    }
}

impl fmt::Display for ListField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.key_path().join("."))
    }
}

impl fmt::Display for BoolField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name())
    }
}

macro_rules! string_serde {
    ($type:ty) => {
        impl Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                name.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_serde!(ListField);
string_serde!(BoolField);

/// One change to one sandbox.json. On the wire:
/// `{"op":"add","list":"filesystem.allowWrite","entry":"out"}`,
/// `{"op":"replace","list":"filesystem.allowRead","old":"~/a","new":"~/b"}`,
/// `{"op":"set","field":"network.allowNetwork","value":true}`,
/// `{"op":"removefield","field":"filesystem.denyReadAlways"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PolicyChange {
    /// Append an entry to a list (nothing changes when it is listed already).
    Add {
        /// Which list.
        list: ListField,
        /// The entry, as it will appear in the file.
        entry: String,
    },
    /// Remove every occurrence of an entry from a list.
    Remove {
        /// Which list.
        list: ListField,
        /// The entry, as the file spells it.
        entry: String,
    },
    /// Edit an entry in place: its first occurrence becomes `new`, at the same position.
    Replace {
        /// Which list.
        list: ListField,
        /// The entry, as the file spells it now.
        old: String,
        /// What it becomes.
        new: String,
    },
    /// Set a boolean.
    Set {
        /// Which field.
        field: BoolField,
        /// Its new value.
        value: bool,
    },
    /// Remove a field the plugin's later releases added, whole (what an older plugin
    /// rejects; `policy/plugin.rs`).
    RemoveField {
        /// Which field.
        field: LaterField,
    },
}

/// Why a change cannot be made at all (before any file is read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    /// An empty entry, or one with a NUL or a line break.
    #[error("{0:?} is not a usable entry: it must be a non-empty single-line string")]
    BadEntry(String),
}

impl PolicyChange {
    /// Checks what can be checked without the file.
    pub fn check(&self) -> Result<(), ChangeError> {
        let usable = |entry: &String| {
            if entry.trim().is_empty() || entry.contains(['\0', '\n', '\r']) {
                Err(ChangeError::BadEntry(entry.clone()))
            } else {
                Ok(())
            }
        };
        match self {
            PolicyChange::Add { entry, .. } | PolicyChange::Remove { entry, .. } => usable(entry),
            PolicyChange::Replace { old, new, .. } => usable(old).and_then(|()| usable(new)),
            PolicyChange::Set { .. } | PolicyChange::RemoveField { .. } => Ok(()),
        }
    }

    /// The list and entry this change puts into a file, if it puts one there (add, replace).
    pub fn new_entry(&self) -> Option<(ListField, &str)> {
        match self {
            PolicyChange::Add { list, entry } => Some((*list, entry)),
            PolicyChange::Replace { list, new, .. } => Some((*list, new)),
            PolicyChange::Remove { .. }
            | PolicyChange::Set { .. }
            | PolicyChange::RemoveField { .. } => None,
        }
    }

    /// The later field this change puts into a file or adds to, if any (an older plugin
    /// rejects the file then).
    pub fn later_field(&self) -> Option<LaterField> {
        self.new_entry().and_then(|(list, _)| list.later_field())
    }

    /// Applies the change to a file's text (`None`: the file does not exist yet). The
    /// result is validated against the plugin's schema; the rest of the text is kept.
    pub fn apply(&self, text: Option<&str>) -> Result<EditOutcome, PolicyError> {
        match self {
            PolicyChange::Add { list, entry } => add_string(text, &list.key_path(), entry),
            PolicyChange::Remove { list, entry } => match text {
                Some(text) => remove_string(text, &list.key_path(), entry),
                None => Ok(EditOutcome::Unchanged),
            },
            PolicyChange::Replace { list, old, new } => match text {
                Some(text) => replace_string(text, &list.key_path(), old, new),
                None => Err(PolicyError::Edit {
                    message: format!("{old:?} is not in {list}: the file does not exist"),
                }),
            },
            PolicyChange::Set { field, value } => set_bool(text, field.key_path(), *value),
            PolicyChange::RemoveField { field } => match text {
                Some(text) => remove_member(text, field.key_path()),
                None => Ok(EditOutcome::Unchanged),
            },
        }
    }

    /// Applies the change to the file at `path`, atomically; a missing file is created
    /// only when something is added or set.
    pub fn apply_to_file(&self, path: &Path) -> Result<EditOutcome, PolicyError> {
        edit_file(path, |text| self.apply(text))
    }

    /// What the change does, in words: `add "out" to filesystem.allowWrite`.
    pub fn describe(&self) -> String {
        match self {
            PolicyChange::Add { list, entry } => format!("add {entry:?} to {list}"),
            PolicyChange::Remove { list, entry } => format!("remove {entry:?} from {list}"),
            PolicyChange::Replace { list, old, new } => {
                format!("change {old:?} to {new:?} in {list}")
            }
            PolicyChange::Set { field, value } => format!("set {field} to {value}"),
            PolicyChange::RemoveField { field } => format!("remove {field}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_overrides;
    use serde_json::json;

    #[test]
    fn field_names_parse_short_and_dotted() {
        assert_eq!(
            "allowWrite".parse::<ListField>(),
            Ok(ListField::Filesystem(FsList::AllowWrite))
        );
        assert_eq!(
            "network.allowedDomains".parse::<ListField>(),
            Ok(ListField::AllowedDomains)
        );
        assert_eq!(
            "network.allowNetwork".parse::<BoolField>(),
            Ok(BoolField::AllowNetwork)
        );
        assert_eq!(
            "allowNetwork".parse::<BoolField>(),
            Ok(BoolField::AllowNetwork)
        );
        assert_eq!("enabled".parse::<BoolField>(), Ok(BoolField::Enabled));
        let err = "allowWrites".parse::<ListField>().unwrap_err();
        assert!(err.to_string().contains("allowWrite, denyWrite"), "{err}");
        assert!("enabled".parse::<ListField>().is_err());
        assert!("allowWrite".parse::<BoolField>().is_err());
    }

    #[test]
    fn changes_have_a_flat_wire_form() {
        let add = PolicyChange::Add {
            list: ListField::Filesystem(FsList::AllowWrite),
            entry: "out".into(),
        };
        assert_eq!(
            serde_json::to_value(&add).unwrap(),
            json!({"op": "add", "list": "filesystem.allowWrite", "entry": "out"})
        );
        let set: PolicyChange =
            serde_json::from_value(json!({"op": "set", "field": "allowNetwork", "value": true}))
                .unwrap();
        assert_eq!(
            set,
            PolicyChange::Set {
                field: BoolField::AllowNetwork,
                value: true
            }
        );
        assert!(serde_json::from_value::<PolicyChange>(
            json!({"op": "add", "list": "frob", "entry": "x"})
        )
        .is_err());
    }

    #[test]
    fn every_field_can_be_changed_and_the_result_validates() {
        let mut text: Option<String> = None;
        let mut changes: Vec<PolicyChange> = ListField::ALL
            .into_iter()
            .map(|list| PolicyChange::Add {
                list,
                entry: format!("e-{}", list.name()),
            })
            .collect();
        changes.extend(BoolField::ALL.into_iter().map(|field| PolicyChange::Set {
            field,
            value: field != BoolField::Enabled,
        }));
        for change in &changes {
            change.check().unwrap();
            match change.apply(text.as_deref()).unwrap() {
                EditOutcome::Changed(new) => text = Some(new),
                EditOutcome::Unchanged => panic!("{} changed nothing", change.describe()),
            }
        }
        let text = text.unwrap();
        let parsed = parse_overrides(&text, Path::new("sandbox.json")).unwrap();
        let fs = parsed.filesystem.unwrap();
        assert_eq!(
            fs.list(FsList::AllowWrite),
            Some(&["e-allowWrite".to_owned()][..])
        );
        let net = parsed.network.unwrap();
        assert_eq!(
            net.allowed_domains,
            Some(vec!["e-allowedDomains".to_owned()])
        );
        assert_eq!(net.allow_network, Some(true));
        assert_eq!(parsed.enabled, Some(false));
        // Removing brings each list back to empty; adding twice changes nothing.
        let again = changes[0].apply(Some(&text)).unwrap();
        assert_eq!(again, EditOutcome::Unchanged);
        let remove = PolicyChange::Remove {
            list: ListField::AllowedDomains,
            entry: "e-allowedDomains".into(),
        };
        let EditOutcome::Changed(removed) = remove.apply(Some(&text)).unwrap() else {
            panic!("nothing removed")
        };
        let parsed = parse_overrides(&removed, Path::new("sandbox.json")).unwrap();
        assert_eq!(parsed.network.unwrap().allowed_domains, Some(vec![]));
    }

    #[test]
    fn removing_from_a_missing_file_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".opencode/sandbox.json");
        let remove = PolicyChange::Remove {
            list: ListField::Filesystem(FsList::AllowRead),
            entry: "x".into(),
        };
        assert_eq!(remove.apply_to_file(&file).unwrap(), EditOutcome::Unchanged);
        assert!(!file.exists());
    }

    #[test]
    fn a_file_that_does_not_parse_is_never_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sandbox.json");
        std::fs::write(&file, "{\"enabled\": tru").unwrap();
        let set = PolicyChange::Set {
            field: BoolField::Enabled,
            value: false,
        };
        let err = set.apply_to_file(&file).unwrap_err();
        assert!(err.to_string().contains("sandbox.json"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"enabled\": tru");
    }

    #[test]
    fn replace_keeps_the_position_and_the_other_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sandbox.json");
        let before =
            "{\n  \"filesystem\": {\n    \"allowRead\": [\"~/a\", \"~/b\", \"~/c\"]\n  }\n}\n";
        std::fs::write(&file, before).unwrap();
        let replace: PolicyChange = serde_json::from_value(json!(
            {"op": "replace", "list": "allowRead", "old": "~/b", "new": "~/.cargo"}
        ))
        .unwrap();
        assert_eq!(
            replace.describe(),
            "change \"~/b\" to \"~/.cargo\" in filesystem.allowRead"
        );
        assert!(matches!(
            replace.apply_to_file(&file).unwrap(),
            EditOutcome::Changed(_)
        ));
        let after = std::fs::read_to_string(&file).unwrap();
        assert_eq!(after, before.replace("\"~/b\"", "\"~/.cargo\""));
        let fs = parse_overrides(&after, &file).unwrap().filesystem.unwrap();
        assert_eq!(
            fs.list(FsList::AllowRead),
            Some(&["~/a".to_owned(), "~/.cargo".to_owned(), "~/c".to_owned()][..])
        );
        // An entry the file does not hold, or a missing file: refused, nothing written.
        assert!(replace.apply_to_file(&file).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
        let missing = dir.path().join("none/sandbox.json");
        assert!(replace.apply_to_file(&missing).is_err());
        assert!(!missing.exists());
        let empty_new = PolicyChange::Replace {
            list: ListField::Filesystem(FsList::AllowRead),
            old: "~/a".into(),
            new: " ".into(),
        };
        assert!(empty_new.check().is_err());
    }

    #[test]
    fn bad_entries_are_refused_before_any_file_is_read() {
        for entry in ["", "  ", "a\nb", "nul\0"] {
            let add = PolicyChange::Add {
                list: ListField::AllowedDomains,
                entry: entry.into(),
            };
            assert!(add.check().is_err(), "{entry:?}");
        }
    }
}
