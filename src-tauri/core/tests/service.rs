//! The service with real listeners, real discovery files and a real inotify watch:
//! projects added and removed at runtime, and the discovery file kept right while another
//! presenter (such as the opencode TUI) comes and goes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::broker::Broker;
use landstrip_tray_core::discovery::{DiscoveryDir, DiscoveryRecord, ReadOutcome};
use landstrip_tray_core::service::{ProjectStatus, Service};
use landstrip_tray_core::settings::SettingsFile;

/// The issue asks for changes to be noticed within a second.
const NOTICE: Duration = Duration::from_secs(1);

struct Env {
    _root: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
    discovery: DiscoveryDir,
    service: Service,
}

async fn start() -> Env {
    let root = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(root.path()).expect("canonical");
    let project = base.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let discovery = DiscoveryDir::new(base.join("runtime"));
    let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
    let settings = SettingsFile::new(base.join("config/settings.json"));
    let service = Service::start(broker, base.join("home"), discovery.clone(), Some(settings));
    Env {
        _root: root,
        base,
        project,
        discovery,
        service,
    }
}

/// Waits (bounded) until the project's status satisfies `want`.
async fn status_becomes(
    service: &Service,
    dir: &Path,
    want: impl Fn(&ProjectStatus) -> bool,
) -> ProjectStatus {
    let mut rx = service.subscribe();
    let found = tokio::time::timeout(NOTICE, async {
        loop {
            if let Some(p) = rx.borrow_and_update().iter().find(|p| p.dir == dir) {
                if want(&p.status) {
                    return p.status.clone();
                }
            }
            rx.changed().await.expect("service alive");
        }
    })
    .await;
    found.unwrap_or_else(|_| {
        panic!(
            "status did not change within {NOTICE:?}: {:?}",
            service.list()
        )
    })
}

/// Waits (bounded) until the discovery file holds our record for `port`. The service
/// re-publishes from its inotify watch; this waits on the same kind of event.
async fn file_becomes_ours(discovery: &DiscoveryDir, dir: &Path, port: u16) {
    use notify::Watcher;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |_event| {
        let _ = tx.send(());
    })
    .expect("watcher");
    watcher
        .watch(discovery.path(), notify::RecursiveMode::NonRecursive)
        .expect("watch");
    let ours = |discovery: &DiscoveryDir| matches!(discovery.read(dir), ReadOutcome::Record(r) if r.pid == std::process::id() && r.port == port);
    let waited = tokio::time::timeout(NOTICE, async {
        while !ours(discovery) {
            rx.recv().await.expect("watch events");
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "our discovery file was not back within {NOTICE:?}: {:?}",
        discovery.read(dir)
    );
}

/// Another presenter: a live process that owns the file and a port that accepts.
struct OtherPresenter {
    child: std::process::Child,
    _listener: std::net::TcpListener,
    record: DiscoveryRecord,
}

impl OtherPresenter {
    fn start(discovery: &DiscoveryDir, dir: &Path) -> Self {
        let child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("spawn sleep");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let record = DiscoveryRecord {
            port: listener.local_addr().expect("addr").port(),
            pid: child.id(),
            ts: 1,
        };
        // Written the way the opencode TUI writes it: straight over whatever is there.
        std::fs::write(discovery.file_for(dir), record.to_json()).expect("write other record");
        Self {
            child,
            _listener: listener,
            record,
        }
    }
}

impl Drop for OtherPresenter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn projects_start_and_stop_at_runtime() {
    let env = start().await;
    let info = env
        .service
        .add_project(&env.project, true)
        .await
        .expect("serve");
    assert_eq!(info.status, ProjectStatus::Serving);
    let file = env.discovery.file_for(&env.project);
    assert!(
        matches!(env.discovery.read(&env.project), ReadOutcome::Record(r) if r.port == info.port)
    );
    tokio::net::TcpStream::connect(("127.0.0.1", info.port))
        .await
        .expect("listener accepts");
    let saved =
        std::fs::read_to_string(env.base.join("config/settings.json")).expect("settings saved");
    assert!(
        saved.contains(env.project.to_str().expect("utf-8")),
        "{saved}"
    );

    // Serving the same project again is harmless and keeps the same listener.
    assert_eq!(
        env.service
            .add_project(&env.project, false)
            .await
            .expect("again")
            .port,
        info.port
    );

    env.service
        .remove_project(&env.project, true)
        .await
        .expect("stop");
    assert!(!file.exists(), "discovery file left behind");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", info.port))
            .await
            .is_err(),
        "listener still accepts"
    );
    assert!(env.service.list().is_empty());
    let saved = std::fs::read_to_string(env.base.join("config/settings.json")).expect("settings");
    assert!(
        !saved.contains(env.project.to_str().expect("utf-8")),
        "{saved}"
    );
}

#[tokio::test]
async fn a_project_that_is_not_a_directory_is_refused_clearly() {
    let env = start().await;
    let err = env
        .service
        .add_project(&env.base.join("missing"), false)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("missing"), "{err}");
    let file = env.base.join("file");
    std::fs::write(&file, "").expect("write");
    let err = env
        .service
        .add_project(&file, false)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[tokio::test]
async fn a_removed_discovery_file_is_published_again() {
    let env = start().await;
    let info = env
        .service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    // The opencode TUI deletes the file on exit without checking whose it is.
    std::fs::remove_file(env.discovery.file_for(&env.project)).expect("remove");
    file_becomes_ours(&env.discovery, &env.project, info.port).await;
}

#[tokio::test]
async fn another_live_presenter_is_reported_then_replaced_when_it_exits() {
    let env = start().await;
    let info = env
        .service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    let other = OtherPresenter::start(&env.discovery, &env.project);
    let status = status_becomes(&env.service, &env.project, |s| {
        matches!(s, ProjectStatus::Conflict { .. })
    })
    .await;
    assert_eq!(
        status,
        ProjectStatus::Conflict {
            other_pid: other.record.pid,
            other_port: other.record.port
        }
    );
    // Its file is left alone while it lives.
    assert!(
        matches!(env.discovery.read(&env.project), ReadOutcome::Record(r) if r == other.record)
    );

    // It dies without cleaning up (a crash): its pid exits, and we take the file back.
    drop(other);
    status_becomes(&env.service, &env.project, |s| *s == ProjectStatus::Serving).await;
    file_becomes_ours(&env.discovery, &env.project, info.port).await;
}

#[tokio::test]
async fn another_presenter_that_deletes_its_file_on_exit_hands_back_to_us() {
    let env = start().await;
    let info = env
        .service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    let other = OtherPresenter::start(&env.discovery, &env.project);
    status_becomes(&env.service, &env.project, |s| {
        matches!(s, ProjectStatus::Conflict { .. })
    })
    .await;
    std::fs::remove_file(env.discovery.file_for(&env.project)).expect("remove");
    file_becomes_ours(&env.discovery, &env.project, info.port).await;
    status_becomes(&env.service, &env.project, |s| *s == ProjectStatus::Serving).await;
    drop(other);
}

#[tokio::test]
async fn take_over_publishes_over_a_live_presenter() {
    let env = start().await;
    let info = env
        .service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    let other = OtherPresenter::start(&env.discovery, &env.project);
    status_becomes(&env.service, &env.project, |s| {
        matches!(s, ProjectStatus::Conflict { .. })
    })
    .await;
    let taken = env.service.take_over(&env.project).expect("take over");
    assert_eq!(taken.status, ProjectStatus::Serving);
    assert!(
        matches!(env.discovery.read(&env.project), ReadOutcome::Record(r) if r.pid == std::process::id() && r.port == info.port)
    );
    drop(other);
}

#[tokio::test]
async fn a_stale_file_is_replaced_at_start() {
    let env = start().await;
    let mut dead = std::process::Command::new("true").spawn().expect("spawn");
    dead.wait().expect("wait");
    env.discovery.ensure_dir().expect("dir");
    let stale = DiscoveryRecord {
        port: 9,
        pid: dead.id(),
        ts: 1,
    };
    std::fs::write(env.discovery.file_for(&env.project), stale.to_json()).expect("write");
    let info = env
        .service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    assert_eq!(info.status, ProjectStatus::Serving);
    assert!(
        matches!(env.discovery.read(&env.project), ReadOutcome::Record(r) if r.port == info.port)
    );
}

#[tokio::test]
async fn shutdown_removes_every_file_and_refuses_new_projects() {
    let env = start().await;
    let other_project = env.base.join("other");
    std::fs::create_dir_all(&other_project).expect("mkdir");
    env.service
        .add_project(&env.project, false)
        .await
        .expect("serve");
    env.service
        .add_project(&other_project, false)
        .await
        .expect("serve");
    env.service.shutdown().await;
    assert!(!env.discovery.file_for(&env.project).exists());
    assert!(!env.discovery.file_for(&other_project).exists());
    assert!(env.service.add_project(&env.project, false).await.is_err());
}
