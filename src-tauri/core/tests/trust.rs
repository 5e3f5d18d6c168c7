//! Directories and files the app can trust, against a real service and control server:
//! real Unix and TCP sockets, real discovery, settings and policy files. A discovery
//! directory that is not ours alone leaves the project unpublished, saying why; concurrent
//! `add-project` requests all reach the settings file, which keeps fields it does not
//! know; a symlinked `sandbox.json` is refused for writing, in the preview and the answer.

mod common;

use common::write_query;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::decision::answer::{AnswerRequest, ChoiceKey};
use landstrip_tray_core::decision::scope::PolicyTarget;
use landstrip_tray_core::serving::discovery::{DiscoveryDir, ReadOutcome, DIR_NAME};
use landstrip_tray_core::serving::service::ProjectStatus;
use landstrip_tray_core::surfaces::control::{Reply, Request, Response};
use landstrip_tray_core::surfaces::prompt_view::preview_grant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Bound on any single awaited event (not a sleep).
const BOUND: Duration = Duration::from_secs(20);

type Env = common::Served;

/// A service (with a settings file) and its control server; discovery files go to
/// `discovery` (a fresh runtime dir when `None`), `settings_text` is written first.
async fn start(discovery: Option<DiscoveryDir>, settings_text: Option<&str>) -> Env {
    common::Setup {
        settings: true,
        settings_text: settings_text.map(str::to_owned),
        discovery,
        ..Default::default()
    }
    .start()
    .await
}

impl Env {
    async fn add_project(&self, dir: &Path) -> ProjectStatus {
        let Reply::Project(info) = self
            .ok(Request::AddProject {
                dir: dir.to_path_buf(),
                persist: false,
            })
            .await
        else {
            panic!("not a project reply")
        };
        // What every surface (tray, `ctl projects`) shows, not only the reply.
        let listed = self.service.list();
        let shown = listed.iter().find(|p| p.dir == info.dir).expect("listed");
        assert_eq!(shown.status, info.status);
        info.status
    }

    fn project(&self, name: &str) -> PathBuf {
        let dir = self.base.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir project");
        dir
    }
}

async fn within<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {BOUND:?}"))
}

/// The status text of an unpublished project; panics on any other status.
fn unpublished(status: ProjectStatus) -> String {
    match status {
        ProjectStatus::Unpublished { error } => error,
        other => panic!("expected an unpublished project, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_temp_fallback_leaves_the_project_unpublished_saying_why() {
    // XDG_RUNTIME_DIR unset: the shared temp dir, where another user planted a link to a
    // directory of theirs (here: one of ours, which must be refused just the same).
    let tmp = tempfile::tempdir().expect("tempdir");
    let planted = tempfile::tempdir().expect("tempdir");
    let discovery = DiscoveryDir::from_vars(None, Some(tmp.path().into()));
    let link = tmp.path().join(DIR_NAME);
    std::os::unix::fs::symlink(planted.path(), &link).expect("symlink");
    let env = start(Some(discovery.clone()), None).await;

    let project = env.project("p");
    let error = unpublished(env.add_project(&project).await);
    assert!(
        error.contains(&link.display().to_string())
            && error.contains(&planted.path().display().to_string())
            && error.contains("symbolic link"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_dir(planted.path()).expect("ls").count(),
        0,
        "nothing may be written behind the link"
    );
    assert_eq!(discovery.read(&project), ReadOutcome::Missing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_discovery_directory_leaves_the_project_unpublished_saying_why() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let discovery = DiscoveryDir::from_vars(None, Some(tmp.path().into()));
    std::fs::create_dir(discovery.path()).expect("mkdir");
    std::fs::set_permissions(discovery.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let env = start(Some(discovery.clone()), None).await;

    let project = env.project("p");
    let error = unpublished(env.add_project(&project).await);
    assert!(
        error.contains(&discovery.path().display().to_string())
            && error.contains("0755")
            && error.contains("other users"),
        "{error}"
    );
    assert_eq!(discovery.read(&project), ReadOutcome::Missing);

    // Fixed by the user (as the message says), a take-over publishes.
    std::fs::set_permissions(discovery.path(), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    let Reply::Project(info) = env
        .ok(Request::TakeOver {
            dir: project.clone(),
        })
        .await
    else {
        panic!("not a project reply")
    };
    assert_eq!(info.status, ProjectStatus::Serving);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_directory_of_another_uid_leaves_the_project_unpublished() {
    // chown to another uid needs root. Runs here and in CI are root: a run that is not
    // fails, rather than passing without having looked.
    assert_eq!(
        landstrip_tray_core::uid(),
        0,
        "needs root: a discovery directory owned by another uid is made with chown"
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let discovery = DiscoveryDir::from_vars(None, Some(tmp.path().into()));
    std::fs::create_dir(discovery.path()).expect("mkdir");
    std::fs::set_permissions(discovery.path(), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    std::os::unix::fs::chown(discovery.path(), Some(65534), Some(65534)).expect("chown");
    let env = start(Some(discovery.clone()), None).await;

    let project = env.project("p");
    let error = unpublished(env.add_project(&project).await);
    assert!(
        error.contains(&discovery.path().display().to_string()) && error.contains("uid 65534"),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(discovery.path()).expect("ls").count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_add_project_requests_all_reach_the_settings_file() {
    let env = Arc::new(start(None, None).await);
    let dirs: Vec<PathBuf> = (0..20).map(|i| env.project(&format!("p{i:02}"))).collect();
    let requests: Vec<_> = dirs
        .iter()
        .map(|dir| {
            let env = Arc::clone(&env);
            let dir = dir.clone();
            tokio::spawn(async move {
                // Each on its own connection, as 20 `ctl add-project` processes would be.
                env.ok(Request::AddProject { dir, persist: true }).await
            })
        })
        .collect();
    for request in requests {
        let reply = within("an add-project request", request)
            .await
            .expect("task");
        assert!(matches!(reply, Reply::Project(_)), "{reply:?}");
    }
    let mut saved = SettingsFile::new(env.settings.clone())
        .load()
        .expect("load")
        .projects;
    saved.sort();
    assert_eq!(saved, dirs, "every project is in the settings file, once");
    assert_eq!(env.service.list().len(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_settings_field_keeps_the_projects_and_survives_an_update() {
    let known = tempfile::tempdir().expect("tempdir");
    let known = std::fs::canonicalize(known.path()).expect("canonical");
    let text = serde_json::json!({
        "projects": [known],
        "launcher": {"terminal": "foot", "since": "0.9"},
        "summarizeDenials": false,
    })
    .to_string();
    let env = start(None, Some(&text)).await;
    let file = SettingsFile::new(env.settings.clone());
    assert_eq!(file.load().expect("load").projects, vec![known.clone()]);

    let added = env.project("added");
    env.ok(Request::AddProject {
        dir: added.clone(),
        persist: true,
    })
    .await;
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&env.settings).expect("read")).expect("json");
    assert_eq!(
        written["projects"],
        serde_json::json!([known, added]),
        "{written}"
    );
    assert_eq!(
        written["launcher"],
        serde_json::json!({"terminal": "foot", "since": "0.9"})
    );
    assert_eq!(written["summarizeDenials"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_sandbox_json_is_refused_in_the_preview_and_the_answer() {
    let mut env = start(None, None).await;
    let project = env.project("p");
    let outside = env.project("outside");
    assert_eq!(env.add_project(&project).await, ProjectStatus::Serving);

    // The project's policy file links into a dotfiles repository.
    let real = env.base.join("dotfiles/sandbox.json");
    std::fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
    let original = "{\n  \"filesystem\": {\n    \"allowWrite\": [\"/srv\"]\n  }\n}\n";
    std::fs::write(&real, original).expect("write");
    let link = project.join(".opencode/sandbox.json");
    std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink("../../dotfiles/sandbox.json", &link).expect("symlink");

    let ReadOutcome::Record(record) = env.service.discovery().read(&project) else {
        panic!("no discovery record")
    };
    let stream = within(
        "connecting to the listener",
        TcpStream::connect(("127.0.0.1", record.port)),
    )
    .await
    .expect("connect");
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let line = write_query("1", &outside.join("a.txt"));
    write
        .write_all(format!("{line}\n").as_bytes())
        .await
        .expect("send");
    let prompt = env.next_prompt().await;

    // The dialog's preview shows the refusal before anyone confirms; it still reads
    // through the link.
    let home = env.home.clone();
    let preview = preview_grant(&prompt, &home, PolicyTarget::Project).expect("preview");
    let error = preview.error.expect("the preview shows the refusal");
    assert!(
        error.contains(&link.display().to_string())
            && error.contains(&real.display().to_string())
            && error.contains("by hand"),
        "{error}"
    );
    assert_eq!(preview.current, vec!["/srv".to_owned()]);

    // The answer is refused the same way and the prompt stays pending.
    let answer = Request::Answer {
        id: prompt.id,
        answer: AnswerRequest::new(ChoiceKey::Project),
    };
    let Response::Error { message } = env.ask(&answer).await else {
        panic!("a project answer through a symlink must be refused")
    };
    assert!(
        message.contains(&link.display().to_string()) && message.contains("by hand"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&real).expect("read"), original);
    assert!(std::fs::symlink_metadata(&link)
        .expect("lstat")
        .file_type()
        .is_symlink());
    let Reply::Pending(items) = env.ok(Request::Pending { wait: false }).await else {
        panic!("not a pending reply")
    };
    assert_eq!(
        items.iter().map(|i| i.id).collect::<Vec<_>>(),
        vec![prompt.id]
    );

    env.ok(Request::Answer {
        id: prompt.id,
        answer: AnswerRequest::deny(),
    })
    .await;
    let mut answer = String::new();
    within("the run's answer", reader.read_line(&mut answer))
        .await
        .expect("read");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&answer).expect("json"),
        serde_json::json!({"query_id": "1", "action": "deny"})
    );
}
