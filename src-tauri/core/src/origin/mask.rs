//! Secrets taken out of command lines before anything shows, logs or sends them: values of
//! options and variables whose names say credential, header values that carry one, the
//! password of a URL, a few tools' own password flags, and tokens whose shape gives them
//! away. Each becomes `***`. Over-masking a harmless word is the cheaper mistake.

use super::shell_words::{split_commands, Word};
use super::text::quote;

/// What a masked value is written as.
pub const MASK: &str = "***";

/// A process's arguments with secrets masked. Arguments that are themselves command
/// strings (`sh -c CMD`, `python3 -c CODE`) are masked inside too.
pub fn mask_argv(argv: &[String]) -> Vec<String> {
    let mut words = mask_words(argv);
    for (word, original) in words.iter_mut().zip(argv) {
        // A command string is masked word by word inside; masked whole (the value of a
        // `--password` before it) it stays masked.
        if word != MASK && original.contains([' ', '\t', '\n', ';', '&', '|']) {
            *word = mask_text(original);
        }
    }
    words
}

/// A shell command string (or any free text: a description, a title) with secrets
/// masked in place; the rest keeps its spelling.
pub fn mask_text(text: &str) -> String {
    let mut replacements: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for command in split_commands(text) {
        let values: Vec<String> = command.iter().map(|w| w.value.clone()).collect();
        let masked = mask_words(&values);
        for (word, new) in command.iter().zip(masked) {
            if new != word.value {
                replacements.push((word.span.clone(), render(word, &new)));
            }
        }
    }
    let mut out = text.to_owned();
    replacements.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    for (span, new) in replacements {
        out.replace_range(span, &new);
    }
    out
}

/// A masked word written back in the quotes it had.
fn render(word: &Word, new: &str) -> String {
    match word.quote {
        Some('\'') if !new.contains('\'') => format!("'{new}'"),
        Some('"') if !new.contains(['"', '\\', '$', '`']) => format!("\"{new}\""),
        _ => quote(new),
    }
}

/// The words of one simple command with secrets masked, word for word.
fn mask_words(words: &[String]) -> Vec<String> {
    let mut out: Vec<String> = words.to_vec();
    let tool = tool_name(words);
    let mut mask_next = false;
    for i in 0..words.len() {
        let word = &words[i];
        if mask_next {
            mask_next = false;
            // "Authorization: Bearer xyz" split into words: keep the scheme, mask what follows.
            if is_auth_scheme(word) && i + 1 < words.len() {
                mask_next = true;
                continue;
            }
            out[i] = MASK.to_owned();
            continue;
        }
        let mut new = word.clone();
        if let Some((name, _)) = word.split_once('=') {
            let bare = name.trim_start_matches('-');
            let assignment = !name.starts_with('-') && is_identifier(name);
            if (assignment || (name.starts_with('-') && !bare.is_empty())) && secret_name(bare) {
                new = format!("{name}={MASK}");
            } else if name.starts_with("--") && bare == "user" && tool.is_some_and(user_colon_tool)
            {
                new = format!("{name}={}", mask_user_colon(&word[name.len() + 1..]));
            }
        } else if word.starts_with('-') && secret_name(word.trim_start_matches('-')) {
            mask_next = i + 1 < words.len() && !words[i + 1].starts_with('-');
        }
        if let Some(tool) = tool {
            if password_flag_tool(tool)
                && word.len() > 2
                && word.starts_with("-p")
                && !word.starts_with("--")
            {
                new = format!("-p{MASK}");
            }
            if tool == "sshpass" && word == "-p" {
                mask_next = i + 1 < words.len();
            }
            if user_colon_tool(tool) {
                if (word == "-u" || word == "--user") && i + 1 < words.len() {
                    out[i + 1] = mask_user_colon(&words[i + 1]);
                } else if word.len() > 2 && word.starts_with("-u") && !word.starts_with("--") {
                    new = format!("-u{}", mask_user_colon(&word[2..]));
                }
            }
        }
        let (headed, name_only) = mask_header(&new);
        new = headed;
        if name_only && i + 1 < words.len() {
            mask_next = true;
        }
        new = mask_url_password(&new);
        new = mask_token_shapes(&new);
        if out[i] == *word {
            out[i] = new;
        }
    }
    out
}

/// The command's program, its file name, past `env`, `sudo` and variable assignments.
fn tool_name(words: &[String]) -> Option<&str> {
    words
        .iter()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .find(|w| !(w.contains('=') || matches!(*w, "env" | "sudo" | "exec" | "command" | "nice")))
}

/// Tools whose `-pVALUE` is a password (their `-p` alone prompts for it).
fn password_flag_tool(tool: &str) -> bool {
    tool.starts_with("mysql") || tool.starts_with("mariadb")
}

/// Tools whose `-u`/`--user` takes `user:password`.
fn user_colon_tool(tool: &str) -> bool {
    matches!(tool, "curl" | "wget" | "http" | "https")
}

fn mask_user_colon(value: &str) -> String {
    match value.split_once(':') {
        Some((user, pass)) if !pass.is_empty() => format!("{user}:{MASK}"),
        _ => value.to_owned(),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_auth_scheme(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "bearer" | "basic" | "token" | "digest" | "negotiate"
    )
}

/// Whether an option or variable name says its value is a credential: `--token`,
/// `API_KEY`, `pgPassword`, `--client-secret`; not `--no-password`, `--token-file`,
/// `--tokenizer` or `max_tokens`.
pub fn secret_name(name: &str) -> bool {
    let segments = name_segments(name);
    let Some(last) = segments.last() else {
        return false;
    };
    if segments[0] == "no" {
        return false;
    }
    if segments.len() > 1
        && matches!(
            last.as_str(),
            "file"
                | "path"
                | "dir"
                | "env"
                | "cmd"
                | "command"
                | "stdin"
                | "prompt"
                | "id"
                | "name"
                | "url"
                | "type"
                | "length"
                | "len"
                | "size"
                | "count"
                | "limit"
        )
    {
        return false;
    }
    segments.iter().enumerate().any(|(i, s)| {
        [
            "token",
            "password",
            "passwd",
            "secret",
            "apikey",
            "passphrase",
            "privatekey",
        ]
        .iter()
        .any(|w| s.ends_with(w))
            || matches!(
                s.as_str(),
                "pwd"
                    | "pass"
                    | "cookie"
                    | "credential"
                    | "credentials"
                    | "auth"
                    | "bearer"
                    | "pat"
            )
            || (s == "key"
                && i > 0
                && matches!(
                    segments[i - 1].as_str(),
                    "api"
                        | "access"
                        | "private"
                        | "secret"
                        | "client"
                        | "signing"
                        | "master"
                        | "session"
                        | "encryption"
                        | "license"
                ))
    })
}

/// `--client-secret`, `AWS_SECRET_ACCESS_KEY`, `apiKey` → lowercase segments.
fn name_segments(name: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            segments.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// Header names whose values are credentials.
const SECRET_HEADERS: [&str; 7] = [
    "proxy-authorization:",
    "authorization:",
    "set-cookie:",
    "cookie:",
    "x-api-key:",
    "x-auth-token:",
    "private-token:",
];

/// The value of a credential header in `word` masked; the bool says the word ends with
/// the header's name, so its value is the next word.
fn mask_header(word: &str) -> (String, bool) {
    let lower = word.to_ascii_lowercase();
    for header in SECRET_HEADERS {
        if let Some(at) = lower.find(header) {
            let end = at + header.len();
            let rest = word[end..].trim_start();
            if rest.is_empty() {
                return (word.to_owned(), true);
            }
            // Keep the scheme (`Bearer`), so a person still sees what kind it was.
            let scheme = rest
                .split_whitespace()
                .next()
                .filter(|s| is_auth_scheme(s) && rest.trim_end().len() > s.len());
            let kept = scheme.map(|s| format!(" {s}")).unwrap_or_default();
            return (format!("{}{kept} {MASK}", &word[..end]), false);
        }
    }
    (word.to_owned(), false)
}

/// `scheme://user:password@host` → `scheme://user:***@host`, every occurrence.
fn mask_url_password(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_end = after.find(['/', '?', '#', ' ']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rfind('@') {
            Some(at_sign) => {
                let userinfo = &authority[..at_sign];
                match userinfo.split_once(':') {
                    Some((user, pass)) if !pass.is_empty() => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(MASK);
                    }
                    _ => out.push_str(userinfo),
                }
                out.push_str(&authority[at_sign..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    out
}

/// Token prefixes whose shape gives a credential away, the shortest tail that counts, and
/// whether `-` and `_` belong to the token.
const TOKEN_SHAPES: [(&str, usize, bool); 20] = [
    ("github_pat_", 20, true),
    ("ghp_", 20, false),
    ("gho_", 20, false),
    ("ghu_", 20, false),
    ("ghs_", 20, false),
    ("ghr_", 20, false),
    ("glpat-", 16, true),
    ("xoxb-", 16, true),
    ("xoxp-", 16, true),
    ("xoxa-", 16, true),
    ("sk_live_", 16, false),
    ("sk_test_", 16, false),
    ("rk_live_", 16, false),
    ("sk-", 20, true),
    ("AKIA", 16, false),
    ("hf_", 20, false),
    ("npm_", 30, false),
    ("pypi-", 30, true),
    ("AIza", 30, true),
    ("ya29.", 30, true),
];

/// Known token shapes masked after their prefix: `ghp_***`.
fn mask_token_shapes(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    let bytes = word.as_bytes();
    'scan: while i < word.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if boundary {
            for (prefix, min, dashes) in TOKEN_SHAPES {
                if word[i..].starts_with(prefix) {
                    let tail = &word[i + prefix.len()..];
                    let len = tail
                        .bytes()
                        .take_while(|b| {
                            b.is_ascii_alphanumeric() || (dashes && matches!(b, b'-' | b'_'))
                        })
                        .count();
                    if len >= min {
                        out.push_str(prefix);
                        out.push_str(MASK);
                        i += prefix.len() + len;
                        continue 'scan;
                    }
                }
            }
        }
        let c = word[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn command_strings_lose_their_secrets() {
        let table = [
            (
                "API_TOKEN=hunter2-secret-value npm publish",
                "API_TOKEN=*** npm publish",
            ),
            (
                "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 && gh pr list",
                "export GITHUB_TOKEN=*** && gh pr list",
            ),
            (
                "OPENAI_API_KEY='sk-a b' python3 app.py",
                "OPENAI_API_KEY=*** python3 app.py",
            ),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOi.x.y' https://api.example.com/v1",
                "curl -H 'Authorization: Bearer ***' https://api.example.com/v1",
            ),
            (
                r#"curl -H "Cookie: session=abc123" -u admin:s3cret https://x"#,
                r#"curl -H "Cookie: ***" -u admin:*** https://x"#,
            ),
            (
                "git clone https://oauth2:glpat-abcdefghijklmnop@gitlab.com/a/b.git",
                "git clone https://oauth2:***@gitlab.com/a/b.git",
            ),
            (
                "psql postgres://app:pa55word@db:5432/app -c 'select 1'",
                "psql postgres://app:***@db:5432/app -c 'select 1'",
            ),
            (
                "mysql -u root -phunter2 shop < dump.sql",
                "mysql -u root -p*** shop < dump.sql",
            ),
            (
                "mysql -u root -p shop",
                "mysql -u root -p shop",
            ),
            (
                "./deploy --password hunter2-long-secret --region eu",
                "./deploy --password *** --region eu",
            ),
            (
                "tool --api-key=abc123 --client-secret xyz --token-file ~/.tok",
                "tool --api-key=*** --client-secret *** --token-file ~/.tok",
            ),
            (
                "docker login -u me --password-stdin < pw.txt",
                "docker login -u me --password-stdin < pw.txt",
            ),
            (
                "sshpass -p 'my pass' ssh host",
                "sshpass -p '***' ssh host",
            ),
            (
                "echo sk-proj-0123456789abcdefghijklmnop | pbcopy",
                "echo sk-*** | pbcopy",
            ),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws s3 ls",
                "AWS_SECRET_ACCESS_KEY=*** AWS_ACCESS_KEY_ID=AKIA*** aws s3 ls",
            ),
            (
                "wget --user=bob --password=x https://h/f",
                "wget --user=bob --password=*** https://h/f",
            ),
            (
                "curl -H Authorization: Bearer abcdef https://x",
                "curl -H Authorization: Bearer *** https://x",
            ),
        ];
        for (input, want) in table {
            assert_eq!(mask_text(input), want, "{input}");
        }
    }

    #[test]
    fn harmless_command_strings_stay_as_they_are() {
        for text in [
            "npm ci && npm test",
            "cargo build --release --tokenizer-path x",
            "python3 manage.py runserver 0.0.0.0:8000",
            "psql --no-password -d app",
            "git commit --author='A <a@b.c>' -m 'fix passing tests'",
            "TOKENIZERS_PARALLELISM=false MAX_TOKENS=12 python3 t.py",
            "echo hi > ~/outside/f.txt",
            "ls -la https://example.com/path?q=1",
        ] {
            assert_eq!(mask_text(text), text);
        }
    }

    #[test]
    fn process_arguments_lose_their_secrets() {
        let table: [(&[&str], &[&str]); 5] = [
            (
                &[
                    "curl",
                    "-H",
                    "Authorization: Basic dXNlcjpwYXNz",
                    "https://x",
                ],
                &["curl", "-H", "Authorization: Basic ***", "https://x"],
            ),
            (
                &["node", "cli.js", "--password", "hunter2", "--verbose"],
                &["node", "cli.js", "--password", "***", "--verbose"],
            ),
            (
                &[
                    "sh",
                    "-c",
                    "API_TOKEN=hunter2-secret-value ./run --password hunter2x",
                ],
                &["sh", "-c", "API_TOKEN=*** ./run --password ***"],
            ),
            (
                &["mysqldump", "-pletmein", "db"],
                &["mysqldump", "-p***", "db"],
            ),
            (
                &[
                    "env",
                    "NPM_TOKEN=npm_abcdefghijklmnopqrstuvwxyz0123456789",
                    "npm",
                    "publish",
                ],
                &["env", "NPM_TOKEN=***", "npm", "publish"],
            ),
        ];
        for (input, want) in table {
            assert_eq!(mask_argv(&argv(input)), argv(want), "{input:?}");
        }
    }

    #[test]
    fn secret_names() {
        for name in [
            "token",
            "API_KEY",
            "apiKey",
            "pgpassword",
            "MYSQL_PWD",
            "client-secret",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "auth",
            "passphrase",
            "private_key",
        ] {
            assert!(secret_name(name), "{name}");
        }
        for name in [
            "tokenizer",
            "max_tokens",
            "no-password",
            "token-file",
            "password-stdin",
            "key",
            "author",
            "AWS_ACCESS_KEY_ID",
            "passes",
            "bypass",
            "",
        ] {
            assert!(!secret_name(name), "{name}");
        }
    }
}
