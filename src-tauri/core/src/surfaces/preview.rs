//! The preview of a project or global grant: the exact sandbox.json change, shown before
//! anyone confirms it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::decision::answer::grant_list;
use crate::decision::scope::{grant_options, PolicyTarget, ScopeKind, ScopeOption};
use crate::policy::store::check_writable;
use crate::policy::{
    add_entry, cache, parse_overrides, sensitive, EditOutcome, FsList, PolicyPaths,
};
use crate::wire::protocol::FsOperation;
use crate::words::{home_relative, Shown};

/// One scope a project or global grant could write, as the preview lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewOption {
    /// Exact, parent or suggested.
    pub kind: ScopeKind,
    /// "This file", "Its folder", "Suggested scope".
    pub label: String,
    /// The covered path.
    pub root: Shown,
    /// The entry written into the file.
    pub entry: String,
    /// The default selection (the session scope rule).
    pub suggested: bool,
    /// The file already lists this entry (nothing would change on disk).
    pub already_listed: bool,
    /// Sensitive locations this scope covers (home-relative).
    pub covers_sensitive: Vec<String>,
    /// The sensitive names a folder entry would let through too (`id_*`, `*.key`, …):
    /// landstrip applies the entry to every file in it, keys included. Empty for an
    /// entry of the one file asked about.
    pub covers_names: Vec<String>,
}

/// The exact sandbox.json change a project or global grant makes, before it is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantPreview {
    /// Which file.
    pub target: PolicyTarget,
    /// The file's path.
    pub file: Shown,
    /// Whether the file exists now (it is created otherwise).
    pub file_exists: bool,
    /// The array that gains the entry, e.g. `filesystem.allowWrite`.
    pub array: String,
    /// What that array of that file holds now.
    pub current: Vec<String>,
    /// Why the file cannot be changed (it does not parse, say); nothing will be written.
    pub error: Option<String>,
    /// The scopes to pick from, narrowest first.
    pub options: Vec<PreviewOption>,
}

impl GrantPreview {
    /// A preview another machine's app sent (over `ctl bridge`), read as untrusted input:
    /// None when it is not one; every text cleaned and every list capped as the bridge's
    /// lines are (`serving/remote/wire.rs`).
    pub fn from_remote(value: serde_json::Value) -> Option<Self> {
        use crate::serving::remote::wire::{clean, MAX_ITEMS};
        let preview: Self = serde_json::from_value(value).ok()?;
        let shown = |s: Shown| Shown {
            text: clean(&s.text),
            full: clean(&s.full),
        };
        let texts = |list: Vec<String>| -> Vec<String> {
            list.iter().take(MAX_ITEMS).map(|t| clean(t)).collect()
        };
        Some(Self {
            target: preview.target,
            file: shown(preview.file),
            file_exists: preview.file_exists,
            array: clean(&preview.array),
            current: texts(preview.current),
            error: preview.error.as_deref().map(clean),
            options: preview
                .options
                .into_iter()
                .take(MAX_ITEMS)
                .map(|o| PreviewOption {
                    kind: o.kind,
                    label: clean(&o.label),
                    root: shown(o.root),
                    entry: clean(&o.entry),
                    suggested: o.suggested,
                    already_listed: o.already_listed,
                    covers_sensitive: texts(o.covers_sensitive),
                    covers_names: texts(o.covers_names),
                })
                .collect(),
        })
    }
}

/// The exact change a project or global grant of `path` would make: the file, the array,
/// what it holds now, and each offered scope's entry. Reads the file as it is now; a file
/// that cannot be edited shows its error here, before anyone confirms.
pub fn preview_grant(
    path: &Path,
    operation: FsOperation,
    project: &Path,
    home: &Path,
    target: PolicyTarget,
) -> GrantPreview {
    let options = grant_options(path, project, home);
    preview_entries(grant_list(operation), options, project, home, target)
}

/// The exact change adding one of `options`' entries to `list` of the `target` file would
/// make (a grant's allow list, or a "never" answer's deny list).
pub fn preview_entries(
    list: FsList,
    options: Vec<ScopeOption>,
    project: &Path,
    home: &Path,
    target: PolicyTarget,
) -> GrantPreview {
    let paths = PolicyPaths::new(home, project);
    let file = match target {
        PolicyTarget::Project => paths.project,
        PolicyTarget::Global => paths.global,
    };
    let (text, mut error) = match cache::read_text(&file) {
        Ok(text) => (text, None),
        Err(e) => (None, Some(e.to_string())),
    };
    // A link is followed for reading but never written through: say so before anyone
    // confirms.
    if let Err(e) = check_writable(&file) {
        error = Some(e.to_string());
    }
    let current: Vec<String> = match text.as_deref() {
        Some(text) => match parse_overrides(text, &file) {
            Ok(overrides) => overrides
                .filesystem
                .as_ref()
                .and_then(|f| f.list(list))
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
            Err(e) => {
                error.get_or_insert(e.to_string());
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    // The path asked about is the first option's (exact) root.
    let exact = options.first().map(|o| o.root.clone());
    let options = options
        .into_iter()
        .map(|option| {
            let entry = option.entry(target).to_owned();
            // The same edit the broker makes: a file it cannot edit shows as an error now
            // rather than after the user confirmed.
            let already_listed = match add_entry(text.as_deref(), list, &entry) {
                Ok(EditOutcome::Unchanged) => true,
                Ok(EditOutcome::Changed(_)) => false,
                Err(e) => {
                    error.get_or_insert(e.with_file(&file).to_string());
                    false
                }
            };
            let covers_sensitive = sensitive::covered_by(&option.root, home)
                .iter()
                .map(|s| home_relative(&s.location, home))
                .collect();
            let covers_names = if exact.as_ref() == Some(&option.root) {
                Vec::new()
            } else {
                sensitive::NAME_PATTERNS
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect()
            };
            PreviewOption {
                covers_names,
                kind: option.kind,
                label: scope_label(option.kind, option.suggested).to_owned(),
                root: Shown::path(&option.root, home),
                entry,
                suggested: option.suggested,
                already_listed,
                covers_sensitive,
            }
        })
        .collect();
    GrantPreview {
        target,
        file_exists: text.is_some(),
        file: Shown::path(&file, home),
        array: format!("filesystem.{}", list.json_key()),
        current,
        error,
        options,
    }
}

fn scope_label(kind: ScopeKind, suggested: bool) -> &'static str {
    match (kind, suggested) {
        (ScopeKind::Exact, false) => "Only this path",
        (ScopeKind::Exact, true) => "Only this path (suggested)",
        (ScopeKind::Parent, false) => "Its folder",
        (ScopeKind::Parent, true) => "Its folder (suggested)",
        (ScopeKind::Suggested, _) => "Suggested scope",
    }
}
