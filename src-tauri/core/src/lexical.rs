//! Paths as text: what a path means without asking the file system. At the bottom of the
//! core (std and an error type only), so the policy, the decision and the file helpers share it without
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

/// A path known to be absolute: every place that takes a directory or path from outside
/// (a page, `ctl`, the activity log) checks it by making one, then says in its own words
/// what a relative one means there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsolutePath(PathBuf);

/// A path that was not absolute, given back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: not an absolute path", .0.display())]
pub struct RelativePath(pub PathBuf);

impl AbsolutePath {
    /// `path` if it is absolute.
    pub fn new(path: impl Into<PathBuf>) -> Result<Self, RelativePath> {
        let path = path.into();
        if path.is_absolute() {
            Ok(Self(path))
        } else {
            Err(RelativePath(path))
        }
    }

    /// The path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path, owned.
    pub fn into_path_buf(self) -> PathBuf {
        self.0
    }
}

impl AsRef<Path> for AbsolutePath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_absolute_path_is_one() {
        assert_eq!(
            AbsolutePath::new("/a/b").map(AbsolutePath::into_path_buf),
            Ok(PathBuf::from("/a/b"))
        );
        assert_eq!(AbsolutePath::new("a/b"), Err(RelativePath("a/b".into())));
        assert_eq!(AbsolutePath::new(""), Err(RelativePath("".into())));
    }
}
