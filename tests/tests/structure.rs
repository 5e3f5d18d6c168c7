//! The code keeps its layers (docs/ARCHITECTURE.md, "Layers and two walks"):
//! `scripts/structure.py --check` passes on the working tree, and it does fail when an
//! import runs upward, two files import each other, or a file grows over the limit, each
//! injected into a copy of today's sources: in the core and in the app crate, written as
//! `crate::` paths and as `super::` paths.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository")
}

/// `structure.py --check` on the sources under `root` (a git work tree).
fn check(root: &Path) -> Output {
    let script = repo().join("scripts/structure.py");
    Command::new("python3")
        .arg(&script)
        .arg("--check")
        .arg("--root")
        .arg(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()))
}

/// What it printed, both streams.
fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A git work tree holding a copy of the `.rs` files under `src-tauri/` of this tree (the
/// files the script reads: tracked or untracked, not ignored).
fn copy_of_sources() -> tempfile::TempDir {
    let repo = repo();
    let listed = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["ls-files", "-co", "--exclude-standard", "src-tauri/"])
        .output()
        .expect("git ls-files");
    assert!(listed.status.success(), "git ls-files: {}", said(&listed));
    let copy = tempfile::tempdir().expect("a temporary directory");
    let init = Command::new("git")
        .arg("-C")
        .arg(copy.path())
        .args(["init", "-q"])
        .output()
        .expect("git init");
    assert!(init.status.success(), "git init: {}", said(&init));
    let mut copied = 0;
    for name in String::from_utf8_lossy(&listed.stdout).lines() {
        if !name.ends_with(".rs") {
            continue;
        }
        let to = copy.path().join(name);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("mkdir");
        std::fs::copy(repo.join(name), &to).unwrap_or_else(|e| panic!("copying {name}: {e}"));
        copied += 1;
    }
    assert!(copied > 50, "only {copied} source files found to copy");
    copy
}

/// Changes one file of the copy: `edit` gets its text and returns the new one.
fn edit(root: &Path, file: &str, edit: impl FnOnce(String) -> String) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{file} (the injection needs it): {e}"));
    std::fs::write(&path, edit(text)).expect("write");
}

/// `--check` fails on the copy, and says `offence`.
fn fails_naming(root: &Path, offence: &str) {
    let output = check(root);
    let said = said(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "--check did not fail on the injected offence ({offence}):\n{said}"
    );
    assert!(
        said.contains(offence),
        "--check failed without naming {offence:?}:\n{said}"
    );
}

#[test]
fn the_working_tree_keeps_its_layers() {
    let output = check(&repo());
    assert!(
        output.status.success(),
        "scripts/structure.py --check failed on the working tree:\n{}",
        said(&output)
    );
}

#[test]
fn an_upward_import_a_circle_and_a_big_file_each_fail_the_check() {
    // The copy as it is passes: each failure below is its injection's.
    let copy = copy_of_sources();
    let clean = check(copy.path());
    assert!(
        clean.status.success(),
        "the untouched copy fails already:\n{}",
        said(&clean)
    );

    // The bottom layer importing the top one.
    let copy = copy_of_sources();
    edit(copy.path(), "src-tauri/core/src/lexical.rs", |text| {
        format!("use crate::surfaces::ops;\n{text}")
    });
    fails_naming(copy.path(), "upward import lexical → surfaces::ops");

    // Two files of one layer importing each other.
    let copy = copy_of_sources();
    edit(copy.path(), "src-tauri/core/src/lexical.rs", |text| {
        format!("use crate::duration::parse_duration;\n{text}")
    });
    edit(copy.path(), "src-tauri/core/src/duration.rs", |text| {
        format!("use crate::lexical::normalize;\n{text}")
    });
    fails_naming(copy.path(), "import circle duration ⇄ lexical");

    // A file over 700 lines before its tests.
    let copy = copy_of_sources();
    edit(copy.path(), "src-tauri/core/src/lexical.rs", |text| {
        format!("{}{text}", "// a line\n".repeat(701))
    });
    fails_naming(copy.path(), "src-tauri/core/src/lexical.rs has ");
    fails_naming(copy.path(), "lines before its tests (at most 700)");
}

#[test]
fn super_paths_and_the_app_crate_are_checked_too() {
    // A circle in the app crate, written with `super::`: cli/args.rs already imports
    // `super::ctl_words::{CtlArgs, Usage}`, so ctl_words importing args back closes it
    // (the circle issue 25 found there, which the check once missed).
    let copy = copy_of_sources();
    edit(copy.path(), "src-tauri/src/cli/ctl_words.rs", |text| {
        format!("use super::args::Shell;\n{text}")
    });
    fails_naming(
        copy.path(),
        "src-tauri/src/: import circle cli::args ⇄ cli::ctl_words",
    );

    // An upward import in the core written with `super::super::`: a policy file reaching
    // the surfaces above it.
    let copy = copy_of_sources();
    edit(copy.path(), "src-tauri/core/src/policy/cache.rs", |text| {
        format!("use super::super::surfaces::ops::PolicyFile;\n{text}")
    });
    fails_naming(
        copy.path(),
        "src-tauri/core/src/: upward import policy::cache → surfaces::ops",
    );
}
