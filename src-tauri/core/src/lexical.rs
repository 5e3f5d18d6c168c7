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

/// Whether `path` is already in the form [`normalize_lexically`] gives (no `.` or `..`
/// component, no doubled or trailing slash), read from its bytes: the query path's cheap
/// test before the byte comparisons of [`is_within`].
pub fn is_normal(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let bad_segment = bytes
        .split(|b| *b == b'/')
        .skip(1)
        .any(|seg| seg.is_empty() || seg == b"." || seg == b"..");
    !(bad_segment && bytes != b"/")
}

/// Whether `path` is `dir` or lies under it, both normal ([`is_normal`]): compared as
/// bytes at a `/` boundary, which for normal paths is what `Path::starts_with` says
/// without parsing components.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (path, dir) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    if dir == b"/" {
        return path.first() == Some(&b'/');
    }
    path.starts_with(dir) && (path.len() == dir.len() || path[dir.len()] == b'/')
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
    fn byte_comparisons_agree_with_components_for_normal_paths() {
        for (path, dir) in [
            ("/a/b/c", "/a/b"),
            ("/a/b", "/a/b"),
            ("/a/bc", "/a/b"),
            ("/a", "/a/b"),
            ("/a/b", "/"),
            ("/", "/"),
            ("/ab", "/a"),
        ] {
            let (path, dir) = (Path::new(path), Path::new(dir));
            assert!(is_normal(path) && is_normal(dir));
            assert_eq!(
                is_within(path, dir),
                path.starts_with(dir),
                "{path:?} {dir:?}"
            );
        }
        for odd in ["/a/./b", "/a/../b", "/a//b", "/a/b/", "/a/.."] {
            assert!(!is_normal(Path::new(odd)), "{odd}");
        }
        assert!(is_normal(Path::new("/a/.hidden/b")));
    }

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
