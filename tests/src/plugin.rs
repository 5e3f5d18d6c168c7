//! The real opencode-landstrip 0.19.1 plugin (from the npm registry, installed by
//! `scripts/setup.sh --test` into `.tools/plugin`), run outside opencode by
//! `tests/plugin/policy.mjs`: its bash hook rewrites a command into the landstrip command
//! line and writes the landstrip policy from the sandbox.json files, and the suites launch
//! the real landstrip with that policy instead of the core's emulation of it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::process::Child;

use crate::{launch_landstrip_with_policy, Landstrip, TestEnv};

/// How long one run of the plugin's hook may take (node + tsx start in well under it).
pub const PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the plugin's hook could not be run or gave nothing usable.
#[derive(Debug)]
pub enum PluginError {
    /// `.tools/plugin` lacks the plugin or tsx.
    NotInstalled(PathBuf),
    /// The driver could not be started.
    Spawn(std::io::Error),
    /// The driver ran past [`PLUGIN_TIMEOUT`].
    TimedOut,
    /// The driver (or the plugin's hook) failed.
    Failed {
        /// Its exit code.
        code: Option<i32>,
        /// Its standard error.
        stderr: String,
    },
    /// The driver's output was not the JSON it promises.
    Output(String),
    /// Scratch files could not be written.
    Io(std::io::Error),
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::NotInstalled(dir) => write!(
                f,
                "the opencode-landstrip plugin is not installed in {}: run scripts/setup.sh --test \
                 (it installs opencode-landstrip 0.19.1 and tsx from the npm registry)",
                dir.display()
            ),
            PluginError::Spawn(e) => write!(f, "could not start the plugin driver: {e}"),
            PluginError::TimedOut => write!(
                f,
                "the plugin driver did not finish within {PLUGIN_TIMEOUT:?}"
            ),
            PluginError::Failed { code, stderr } => {
                write!(f, "the plugin driver failed (exit {code:?}): {stderr}")
            }
            PluginError::Output(why) => write!(f, "the plugin driver's output: {why}"),
            PluginError::Io(e) => write!(f, "plugin scratch files: {e}"),
        }
    }
}

impl std::error::Error for PluginError {}

/// Where `scripts/setup.sh --test` installs the plugin (`$LANDSTRIP_TRAY_TOOLS/plugin`).
pub fn plugin_dir() -> PathBuf {
    crate::tools_dir().join("plugin")
}

/// One run of the plugin's `tool.execute.before` hook for a bash call.
#[derive(Debug, Clone)]
pub struct PluginInvocation {
    /// `HOME` for the plugin: the global sandbox.json is `$HOME/.config/opencode/sandbox.json`
    /// (the plugin takes `os.homedir()`, which is `$HOME`; `XDG_CONFIG_HOME` plays no part),
    /// and the plugin writes its bundled template there when the file is missing.
    pub home: PathBuf,
    /// The opencode project directory (its `.opencode/sandbox.json` is the project file).
    pub project: PathBuf,
    /// A directory for the plugin's `TMPDIR` (its policy file) and the policy copy.
    pub scratch: PathBuf,
    /// The plugin's `XDG_RUNTIME_DIR`, where it looks for a presenter's discovery file
    /// (`opencode-landstrip/port-*.json`) when the call has a session. None: an empty one,
    /// so the plugin starts its own trap server, which stops with the driver.
    pub runtime_dir: Option<PathBuf>,
    /// Leave the plugin's policy file in place so that [`PluginRun::command`] can be run.
    pub keep: bool,
    /// The opencode session ID the call belongs to, if any.
    pub session: Option<String>,
    /// The bash command the hook rewrites.
    pub command: String,
}

/// What the plugin's hook did.
#[derive(Debug, Clone)]
pub struct PluginRun {
    /// The command line after the hook (unchanged when the sandbox is disabled).
    pub command: String,
    /// Whether the hook wrapped the command in landstrip.
    pub wrapped: bool,
    /// The landstrip policy the plugin wrote, when it wrapped the command.
    pub policy: Option<Value>,
    /// The toasts and log lines the plugin sent to its (stub) opencode client.
    pub messages: Vec<String>,
}

impl PluginInvocation {
    /// A bash call of `true` with no session, the plugin's files under `scratch`.
    pub fn new(home: &Path, project: &Path, scratch: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            project: project.to_path_buf(),
            scratch: scratch.to_path_buf(),
            session: None,
            command: "true".into(),
            runtime_dir: None,
            keep: false,
        }
    }

    /// Runs the hook (blocking, bounded by [`PLUGIN_TIMEOUT`]).
    pub fn run(&self) -> Result<PluginRun, PluginError> {
        let dir = plugin_dir();
        let tsx = dir.join("node_modules/.bin/tsx");
        if !tsx.is_file()
            || !dir
                .join("node_modules/opencode-landstrip/index.ts")
                .is_file()
        {
            return Err(PluginError::NotInstalled(dir));
        }
        let run_dir = self.scratch.join(format!("plugin-{}", crate::unique()));
        let tmp = run_dir.join("tmp");
        let runtime = self
            .runtime_dir
            .clone()
            .unwrap_or_else(|| run_dir.join("runtime"));
        for d in [&tmp, &runtime] {
            std::fs::create_dir_all(d).map_err(PluginError::Io)?;
        }
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin/policy.mjs");
        // coreutils `timeout` bounds the run and kills node if it hangs.
        let mut cmd = Command::new("timeout");
        cmd.arg("-k")
            .arg("5")
            .arg(PLUGIN_TIMEOUT.as_secs().to_string())
            .arg(&tsx)
            .arg(&driver)
            .arg("--plugin-dir")
            .arg(&dir)
            .arg("--project")
            .arg(&self.project)
            .arg("--command")
            .arg(&self.command);
        if let Some(session) = &self.session {
            cmd.arg("--session").arg(session);
        }
        if self.keep {
            cmd.arg("--keep");
        }
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TMPDIR", &tmp)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("SHELL", "/bin/bash")
            .current_dir(&self.project)
            .stdin(Stdio::null());
        let output = cmd.output().map_err(PluginError::Spawn)?;
        if output.status.code() == Some(124) || output.status.code() == Some(137) {
            return Err(PluginError::TimedOut);
        }
        if !output.status.success() {
            return Err(PluginError::Failed {
                code: output.status.code(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let parsed: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
            PluginError::Output(format!(
                "{e}: {:?}",
                String::from_utf8_lossy(&output.stdout)
            ))
        })?;
        let command = parsed["command"]
            .as_str()
            .ok_or_else(|| PluginError::Output(format!("no command in {parsed}")))?
            .to_owned();
        let wrapped = parsed["wrapped"]
            .as_bool()
            .ok_or_else(|| PluginError::Output(format!("no wrapped flag in {parsed}")))?;
        let policy = match &parsed["policy"] {
            Value::Null => None,
            policy => Some(policy.clone()),
        };
        if wrapped != policy.is_some() {
            return Err(PluginError::Output(format!(
                "wrapped={wrapped} but policy={policy:?}"
            )));
        }
        let messages = parsed["messages"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|m| m["message"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(PluginRun {
            command,
            wrapped,
            policy,
            messages,
        })
    }

    /// Runs the hook and writes the policy it built to a file under `scratch`, for
    /// `landstrip run -p` (the plugin's own copy is removed when its call ends).
    pub fn policy_file(&self) -> Result<PathBuf, PluginError> {
        let run = self.run()?;
        let Some(policy) = run.policy else {
            return Err(PluginError::Output(format!(
                "the plugin did not wrap the command (sandbox disabled?): {:?}",
                run.messages
            )));
        };
        let path = self
            .scratch
            .join(format!("plugin-policy-{}.json", crate::unique()));
        let bytes =
            serde_json::to_vec_pretty(&policy).map_err(|e| PluginError::Output(e.to_string()))?;
        std::fs::write(&path, bytes).map_err(PluginError::Io)?;
        Ok(path)
    }
}

impl TestEnv {
    /// The landstrip policy the real plugin builds for this project and home, as a file.
    /// Panics (naming `scripts/setup.sh --test` when it is missing) if the plugin fails.
    pub fn plugin_policy(&self) -> PathBuf {
        PluginInvocation::new(&self.home, &self.project, self.root.path())
            .policy_file()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`TestEnv::launch`], with the policy the real plugin built.
    pub fn launch_with_plugin_policy(
        &self,
        landstrip: Landstrip,
        session: Option<&str>,
        program: &[&str],
    ) -> Child {
        self.launch_with_plugin_policy_via(landstrip, self.discovered_port(), session, program)
    }

    /// Like [`TestEnv::launch_via`], with the policy the real plugin built.
    pub fn launch_with_plugin_policy_via(
        &self,
        landstrip: Landstrip,
        port: u16,
        session: Option<&str>,
        program: &[&str],
    ) -> Child {
        launch_landstrip_with_policy(
            landstrip,
            &self.plugin_policy(),
            &self.project,
            &self.home,
            port,
            session,
            program,
        )
    }
}
