//! Programs named as people know them, not by the interpreter that runs them: node running
//! `…/npm-cli.js` is `npm`, python running `-m pip` is `pip`, `python3 manage.py` keeps its
//! script, and `sh -c CMD` is CMD.

use std::path::Path;

use crate::wire::protocol::ProcessInfo;

use super::shell_words::split_commands;
use super::text::{join, printable, short_word, shorten_middle};

/// How long the one-line form of a command may be, and each of its words.
pub const SHORT_COMMAND: usize = 80;
const SHORT_WORD: usize = 40;

/// A process's command as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The program: `npm`, `cargo`, `python3 manage.py`.
    pub program: String,
    /// The command in full: `npm ci`, or CMD for `sh -c CMD`.
    pub full: String,
    /// The same on one line, long words and the whole shortened in the middle.
    pub short: String,
}

/// Names the command `argv` (already masked) of a process running `exe`.
pub fn name(argv: &[String], exe: Option<&str>) -> Named {
    let Some(first) = argv.first() else {
        let program = exe.map_or_else(|| "a program".to_owned(), file_name);
        return Named {
            full: program.clone(),
            short: program.clone(),
            program,
        };
    };
    let base = printable(&file_name(first));
    let base = base.trim_start_matches('-');
    let args = &argv[1..];
    if base == "env" {
        if let Some(start) = env_command(args) {
            return name(&args[start..], None);
        }
    }
    if is_shell(base) {
        if let Some(command) = shell_command(args) {
            let program = first_program(command).unwrap_or_else(|| base.to_owned());
            return Named {
                program,
                full: printable(command),
                short: shorten_middle(&printable(command), SHORT_COMMAND),
            };
        }
    }
    let named: Option<(Vec<String>, usize)> = if base == "node" || base == "nodejs" {
        node_program(base, args)
    } else if is_python(base) {
        python_program(base, args)
    } else if matches!(base, "ruby" | "perl" | "php" | "Rscript" | "lua" | "bun") {
        script_program(base, args, 0)
    } else {
        None
    };
    let (program_words, rest) = named.unwrap_or_else(|| (vec![base.to_owned()], 0));
    let mut words = program_words.clone();
    words.extend(args[rest..].iter().cloned());
    let full = join(&words);
    let short_words: Vec<String> = words.iter().map(|w| short_word(w, SHORT_WORD)).collect();
    Named {
        program: program_words.join(" "),
        full,
        short: shorten_middle(&join(&short_words), SHORT_COMMAND),
    }
}

/// The file name of a path-like word.
pub fn file_name(word: &str) -> String {
    Path::new(word)
        .file_name()
        .map_or_else(|| word.to_owned(), |n| n.to_string_lossy().into_owned())
}

/// The CMD of a shell's `sh -c CMD` command line, when `argv` is one.
pub fn shell_command_of(argv: &[String]) -> Option<&str> {
    let base = file_name(argv.first()?);
    if is_shell(base.trim_start_matches('-')) {
        shell_command(&argv[1..])
    } else {
        None
    }
}

fn is_shell(base: &str) -> bool {
    matches!(
        base,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" | "busybox"
    )
}

fn is_python(base: &str) -> bool {
    base.starts_with("python") || base.starts_with("pypy")
}

/// The index in `args` where `env`'s command starts, past its options and assignments.
fn env_command(args: &[String]) -> Option<usize> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" {
            i += 2;
        } else if a.starts_with('-') || a.contains('=') {
            i += 1;
        } else {
            return Some(i);
        }
    }
    None
}

/// The CMD of `sh -c CMD` (also `-lc`, `-ec`, `bash -o pipefail -c`).
fn shell_command(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" || !a.starts_with('-') {
            return None;
        }
        if (a == "-o" || a == "+o") && i + 1 < args.len() {
            i += 2;
            continue;
        }
        if !a.starts_with("--") && a.contains('c') {
            return args.get(i + 1).map(String::as_str);
        }
        i += 1;
    }
    None
}

/// The first program a command string runs: `npm` for `CI=1 npm ci && npm test`.
fn first_program(command: &str) -> Option<String> {
    let words = split_commands(command).into_iter().next()?;
    let word = words.iter().find(|w| {
        (!w.value.contains('=') || w.value.starts_with('-'))
            && !matches!(
                w.value.as_str(),
                "exec" | "env" | "command" | "time" | "nice"
            )
    })?;
    Some(printable(&file_name(&word.value)))
}

/// npm, npx, yarn, pnpm and friends are node scripts; these are their entry files.
const NODE_SCRIPTS: [(&str, &str); 11] = [
    ("npm-cli.js", "npm"),
    ("npx-cli.js", "npx"),
    ("yarn.js", "yarn"),
    ("yarn.cjs", "yarn"),
    ("pnpm.cjs", "pnpm"),
    ("pnpm.mjs", "pnpm"),
    ("pnpm.js", "pnpm"),
    ("pnpx.cjs", "pnpx"),
    ("node-gyp.js", "node-gyp"),
    ("corepack.js", "corepack"),
    ("corepack.cjs", "corepack"),
];

/// node's program words and where its script's arguments start.
fn node_program(base: &str, args: &[String]) -> Option<(Vec<String>, usize)> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-e" | "--eval" | "-p" | "--print" => {
                return Some((vec![base.to_owned(), a.to_owned()], i + 1));
            }
            "-r"
            | "--require"
            | "--import"
            | "--loader"
            | "--experimental-loader"
            | "-C"
            | "--conditions"
            | "--inspect-port"
            | "--title" => i += 2,
            "--" => return script_program(base, args, i + 1),
            _ if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let script = args.get(i)?;
    let file = file_name(script);
    if let Some((_, known)) = NODE_SCRIPTS.iter().find(|(f, _)| *f == file) {
        return Some((vec![(*known).to_owned()], i + 1));
    }
    script_program(base, args, i)
}

/// python's program words and where its script's (or module's) arguments start.
fn python_program(base: &str, args: &[String]) -> Option<(Vec<String>, usize)> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-m" => {
                let module = args.get(i + 1)?;
                return Some((vec![printable(module)], i + 2));
            }
            "-c" => return Some((vec![base.to_owned(), a.to_owned()], i + 1)),
            "-W" | "-X" | "--check-hash-based-pycs" => i += 2,
            "--" => return script_program(base, args, i + 1),
            _ if a.starts_with("-m") && a.len() > 2 => {
                return Some((vec![printable(&a[2..])], i + 1));
            }
            _ if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    script_program(base, args, i)
}

/// An interpreter running the script at `args[at]`: a script installed as a command (in
/// a `bin` directory, or with no extension) is known by its name (`pip`, `vite`); another
/// keeps its interpreter (`python3 manage.py`).
fn script_program(base: &str, args: &[String], at: usize) -> Option<(Vec<String>, usize)> {
    let script = args.get(at)?;
    let path = Path::new(script);
    let file = file_name(script);
    let in_bin = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "bin" || d == ".bin");
    if in_bin || path.extension().is_none() {
        let stem = ["js", "cjs", "mjs"]
            .iter()
            .find_map(|ext| file.strip_suffix(&format!(".{ext}")))
            .unwrap_or(&file);
        return Some((vec![printable(stem)], at + 1));
    }
    Some((vec![base.to_owned(), printable(&file)], at + 1))
}

/// The executable's file name ("python3.11"), when the query names one.
pub fn program_name(process: Option<&ProcessInfo>) -> Option<String> {
    let exe = process?.exe.as_deref()?;
    Some(
        Path::new(exe)
            .file_name()
            .map_or_else(|| exe.to_owned(), |n| n.to_string_lossy().into_owned()),
    )
}

/// The program behind a query in one phrase: "python3.11 (pid 2434)".
pub fn program_label(process: Option<&ProcessInfo>) -> String {
    let pid = process.and_then(|p| p.pid);
    match (program_name(process), pid) {
        (Some(exe), Some(pid)) => format!("{exe} (pid {pid})"),
        (Some(exe), None) => exe,
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "an unknown program".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(argv: &[&str]) -> Named {
        let argv: Vec<String> = argv.iter().map(|w| (*w).to_owned()).collect();
        name(&argv, None)
    }

    #[test]
    fn programs_are_named_as_people_know_them() {
        let table: [(&[&str], &str, &str); 18] = [
            (
                &[
                    "/usr/bin/node",
                    "/usr/lib/node_modules/npm/bin/npm-cli.js",
                    "ci",
                ],
                "npm",
                "npm ci",
            ),
            (
                &["node", "/opt/n/lib/node_modules/npm/bin/npx-cli.js", "vite"],
                "npx",
                "npx vite",
            ),
            (
                &["node", "--max-old-space-size=4096", "/u/.bin/vite", "build"],
                "vite",
                "vite build",
            ),
            (
                &[
                    "node",
                    "/p/node_modules/node-gyp/bin/node-gyp.js",
                    "rebuild",
                ],
                "node-gyp",
                "node-gyp rebuild",
            ),
            (
                &["node", "server.js", "--port", "3000"],
                "node server.js",
                "node server.js --port 3000",
            ),
            (
                &["node", "-e", "console.log(1)"],
                "node -e",
                "node -e 'console.log(1)'",
            ),
            (
                &["/usr/bin/python3", "-m", "pip", "install", "-r", "req.txt"],
                "pip",
                "pip install -r req.txt",
            ),
            (
                &["python3.11", "-u", "manage.py", "migrate"],
                "python3.11 manage.py",
                "python3.11 manage.py migrate",
            ),
            (
                &["/usr/bin/python3", "/usr/local/bin/pip", "install", "x"],
                "pip",
                "pip install x",
            ),
            (
                &["python3", "-c", "open('f','w')"],
                "python3 -c",
                "python3 -c \"open('f','w')\"",
            ),
            (
                &["sh", "-c", "echo hi > ~/outside/f.txt"],
                "echo",
                "echo hi > ~/outside/f.txt",
            ),
            (
                &["/bin/bash", "-lc", "CI=1 npm ci && npm test"],
                "npm",
                "CI=1 npm ci && npm test",
            ),
            (
                &["bash", "-o", "pipefail", "-c", "make -j4 | tee log"],
                "make",
                "make -j4 | tee log",
            ),
            (&["-bash"], "bash", "bash"),
            (
                &["cargo", "build", "--release"],
                "cargo",
                "cargo build --release",
            ),
            (
                &["/usr/bin/env", "FOO=1", "python3", "-m", "pytest", "-q"],
                "pytest",
                "pytest -q",
            ),
            (&["bash", "build.sh", "all"], "bash", "bash build.sh all"),
            (
                &["ruby", "/usr/local/bin/bundle", "exec", "rake"],
                "bundle",
                "bundle exec rake",
            ),
        ];
        for (argv, program, full) in table {
            let n = named(argv);
            assert_eq!(
                (n.program.as_str(), n.full.as_str()),
                (program, full),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn an_empty_command_line_falls_back_to_the_executable() {
        let n = name(&[], Some("/usr/bin/python3.11"));
        assert_eq!(n.program, "python3.11");
        assert_eq!(n.full, "python3.11");
    }

    #[test]
    fn the_short_form_keeps_the_program_and_shortens_long_words() {
        let n = named(&[
            "node",
            "/very/long/path/to/some/node_modules/.bin/tool",
            &"x".repeat(200),
        ]);
        assert!(n.short.starts_with("tool "), "{}", n.short);
        assert!(n.short.chars().count() <= SHORT_COMMAND, "{}", n.short);
        assert!(n.full.contains(&"x".repeat(200)));
        let long = format!("echo {}", "y".repeat(300));
        let n = named(&["sh", "-c", &long]);
        assert_eq!(n.full, long);
        assert_eq!(n.short.chars().count(), SHORT_COMMAND);
    }

    #[test]
    fn program_labels() {
        let full = ProcessInfo {
            pid: Some(2434),
            exe: Some("/usr/bin/python3.11".into()),
            cwd: None,
        };
        assert_eq!(program_label(Some(&full)), "python3.11 (pid 2434)");
        let no_pid = ProcessInfo {
            pid: None,
            ..full.clone()
        };
        assert_eq!(program_label(Some(&no_pid)), "python3.11");
        let no_exe = ProcessInfo { exe: None, ..full };
        assert_eq!(program_label(Some(&no_exe)), "pid 2434");
        assert_eq!(program_label(None), "an unknown program");
    }
}
