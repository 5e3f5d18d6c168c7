//! Paths as text: what a path means without asking the file system. At the bottom of the
//! core (std only), so the policy, the decision and the file helpers share it without
//! importing one another.

use std::path::{Component, Path, PathBuf};

/// Lexically normalise a path: drop `.` segments, resolve `..`, collapse
/// duplicate slashes and drop a trailing slash.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => out.push(component),
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
        }
    }
    out
}
