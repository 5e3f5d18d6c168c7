//! The command line: `landstrip-tray [--project DIR]...`.

use std::path::PathBuf;

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cli {
    /// Projects to serve for this run (not saved to the settings).
    pub projects: Vec<PathBuf>,
}

/// A command line that makes no sense.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliError {
    /// `--project` without a directory.
    #[error("--project needs a directory")]
    MissingValue,
    /// Something we do not know.
    #[error("unknown argument {0:?} (usage: landstrip-tray [--project DIR]...)")]
    Unknown(String),
}

/// The usage text.
pub const USAGE: &str = "usage: landstrip-tray [--project DIR]...\n\n\
Hosts the landstrip query socket for each project and asks you about what sandboxed\n\
commands try to do. Projects come from the settings file and from --project.";

impl Cli {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Self>, CliError> {
        let mut cli = Cli::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--project" | "-p" => cli
                    .projects
                    .push(args.next().ok_or(CliError::MissingValue)?.into()),
                "--help" | "-h" => return Ok(None),
                other => match other.strip_prefix("--project=") {
                    Some(dir) => cli.projects.push(dir.into()),
                    None => return Err(CliError::Unknown(other.to_owned())),
                },
            }
        }
        Ok(Some(cli))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Cli>, CliError> {
        Cli::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn projects_repeat() {
        let cli = parse(&["--project", "/a", "--project=/b", "-p", "c"])
            .unwrap()
            .unwrap();
        assert_eq!(
            cli.projects,
            vec![PathBuf::from("/a"), "/b".into(), "c".into()]
        );
    }

    #[test]
    fn bad_arguments_are_named() {
        assert_eq!(parse(&["--project"]).unwrap_err(), CliError::MissingValue);
        assert_eq!(
            parse(&["--frob"]).unwrap_err(),
            CliError::Unknown("--frob".into())
        );
        assert_eq!(parse(&["--help"]).unwrap(), None);
    }
}
