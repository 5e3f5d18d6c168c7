//! docs/ARCHITECTURE.md describes the tree as it is: every file and folder it names exists,
//! in its text (a path in backticks) and in its "Layout" block. A moved or renamed module
//! fails here until the document follows.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository")
}

/// Where a path the document names may be relative to: the repository, the app crate, the
/// core's sources, the app's sources, the front end, the tests.
const ROOTS: [&str; 7] = [
    "",
    "src-tauri",
    "src-tauri/core/src",
    "src-tauri/src",
    "src-tauri/src/app",
    "ui",
    "tests",
];

/// Every file and folder below `dir`, as paths relative to the repository (build output,
/// dependencies and fetched tools left out).
fn tree(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if [".git", "target", "node_modules", ".tools"].contains(&name.to_str().unwrap_or("")) {
            continue;
        }
        let path = entry.path();
        out.push(path.strip_prefix(base).unwrap_or(&path).to_path_buf());
        if path.is_dir() {
            tree(&path, base, out);
        }
    }
}

/// Whether `named` (as the document writes it) is a file or folder of the tree.
fn exists(repo: &Path, all: &[PathBuf], named: &str) -> bool {
    if named.contains('/') {
        let named = named.trim_end_matches('/');
        ROOTS
            .iter()
            .any(|root| repo.join(root).join(named).exists())
    } else {
        // A bare name is a module or page: one of the sources', not a test's.
        all.iter().any(|p| {
            let source = ["src-tauri/", "ui/", "packaging/", "scripts/"]
                .iter()
                .any(|dir| p.starts_with(dir))
                && !p.components().any(|c| c.as_os_str() == "tests");
            source && p.file_name().and_then(|n| n.to_str()) == Some(named)
        })
    }
}

/// What looks like a path of this repository in a backtick span: a file with a source or
/// config extension, or a folder (trailing slash); no placeholders, globs or variables.
fn path_like(span: &str) -> bool {
    let plain = !span.is_empty()
        && !span.starts_with('/')
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
    let exts = [
        ".rs", ".js", ".css", ".html", ".md", ".json", ".sh", ".py", ".service", ".desktop",
        ".toml",
    ];
    plain && (span.ends_with('/') || exts.iter().any(|e| span.ends_with(e)))
}

/// The names in the "Layout" block: a line's first column (`a.rs, b.rs`), each relative to
/// the last unindented folder when indented.
fn layout_names(doc: &str) -> Vec<String> {
    let Some(start) = doc.find("## Layout") else {
        return Vec::new();
    };
    let block = doc[start..]
        .split("```")
        .nth(1)
        .expect("the Layout section has a code block");
    let mut names = Vec::new();
    let mut top = String::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let indented = line.starts_with(' ');
        let first = line.trim_start();
        if line.len() - first.len() > 4 {
            continue; // a description's continuation line
        }
        // The names: the first word, and each next one while a word ends with a comma.
        let mut column = Vec::new();
        for word in first.split_whitespace() {
            column.push(word.trim_end_matches(','));
            if !word.ends_with(',') {
                break;
            }
        }
        for name in column {
            if indented {
                names.push(format!("{top}{name}"));
            } else {
                top = name.to_owned();
                names.push(name.to_owned());
            }
        }
    }
    names
}

#[test]
fn architecture_names_only_what_exists() {
    let repo = repo();
    let doc = std::fs::read_to_string(repo.join("docs/ARCHITECTURE.md")).expect("read it");
    let mut all = Vec::new();
    tree(&repo, &repo, &mut all);
    let spans: Vec<&str> = doc.split('`').skip(1).step_by(2).collect();
    let named: Vec<String> = spans
        .into_iter()
        .filter(|s| path_like(s))
        .map(str::to_owned)
        .chain(layout_names(&doc))
        .collect();
    // The check sees both kinds of mention, or it proves little.
    assert!(named.len() > 60, "only {} names found", named.len());
    assert!(
        named.iter().any(|n| n == "src-tauri/core/src/decision/"),
        "{named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|n| !exists(&repo, &all, n)).collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names what is not in the tree: {missing:?}"
    );
}
