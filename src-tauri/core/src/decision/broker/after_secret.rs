//! The broker's side of "after a secret" (docs/ARCHITECTURE.md, "After a secret"): noting
//! each secret read it allows, marking the requests of the runs after one, and what the
//! `afterSecret` setting says to do with their network requests.

use super::*;
use crate::lexical::is_within;
use crate::policy::sensitive;
use crate::wire::protocol::{Access, FsOperation};

impl Broker {
    /// Sets what becomes of a network request of a run after a secret: asked, or denied
    /// without asking (`by: after_secret`). Applies to the next request.
    pub fn set_after_secret(&self, mode: AfterSecretMode) {
        self.inner
            .after_secret_deny
            .store(mode == AfterSecretMode::Deny, Ordering::Release);
    }

    /// What becomes of a network request of a run after a secret.
    pub fn after_secret_mode(&self) -> AfterSecretMode {
        match self.inner.after_secret_deny.load(Ordering::Acquire) {
            true => AfterSecretMode::Deny,
            false => AfterSecretMode::Ask,
        }
    }

    /// What the rules must know of `run` for `access`: for a network request of a run
    /// after a secret, the mode its request is judged by; None otherwise (nothing else
    /// is judged differently, so nothing else looks it up).
    pub(super) fn after_secret_for(
        &self,
        run: ConnId,
        key: &GrantKey,
        access: &Access<'_>,
    ) -> Option<AfterSecretMode> {
        match access {
            Access::Network { .. } => self
                .inner
                .secrets
                .of(run, key)
                .map(|_| self.after_secret_mode()),
            Access::Filesystem { .. } => None,
        }
    }

    /// The mark a new prompt of run `conn` carries: the run's secret read, on a network
    /// request or a write outside the project. Called under the table's lock.
    pub(super) fn marking(
        &self,
        conn: ConnId,
        project: &Project,
        key: &GrantKey,
        query: &Query,
    ) -> Option<SecretRead> {
        marked_kind(query, project.dir())
            .then(|| self.inner.secrets.of(conn, key))
            .flatten()
    }

    /// Notes an allowed read of run `conn` (of `key`), before its answer goes out: when it
    /// read a secret, the run (and its session) is after a secret from now on. On the
    /// query path, the table is locked only when the read was of a secret.
    pub(super) fn note_read(&self, conn: ConnId, project: &Project, key: &GrantKey, path: &str) {
        if let Some(read) = secret_read(project, path) {
            let mut table = self.table();
            self.note_locked(&mut table, conn, key, read);
        }
    }

    /// [`Self::note_read`] for a prompt about to be answered `action`, the table locked.
    pub(super) fn note_answer_locked(&self, table: &mut Table, pending: &Pending, action: Action) {
        if action != Action::Allow {
            return;
        }
        let QueryKind::Filesystem(fs) = &pending.prompt.query.kind else {
            return;
        };
        if fs.operation != FsOperation::Read {
            return;
        }
        if let Some(read) = secret_read(&pending.project, &fs.path) {
            self.note_locked(table, pending.prompt.connection, &pending.key, read);
        }
    }

    /// Records the secret read and marks the prompts of that run (and session) already
    /// waiting that the mark concerns, so the answer rules and the bulk count see it.
    fn note_locked(&self, table: &mut Table, conn: ConnId, key: &GrantKey, read: SecretRead) {
        // Lock order: the table, then the secrets (as `marking` takes them).
        if self.inner.secrets.note(conn, key, read.clone()) {
            // Once per run, and without the path (the log is not the place for it).
            tracing::info!(
                run = conn,
                what = read.what,
                "a run read a secret: its network requests are judged with the read in view"
            );
        }
        for pending in table.prompts.values_mut() {
            let same_run =
                pending.prompt.connection == conn || (key.session.is_some() && pending.key == *key);
            if same_run && marked_kind(&pending.prompt.query, pending.project.dir()) {
                pending.prompt.after_secret = Some(read.clone());
            }
        }
    }
}

/// The secret an allowed read of `path` read, if it read one.
fn secret_read(project: &Project, path: &str) -> Option<SecretRead> {
    let global = &project.policy().paths().global;
    let found = sensitive::of_secret_read(Path::new(path), project.home(), global)?;
    Some(SecretRead {
        path: path.to_owned(),
        what: found.what.to_owned(),
        at_ms: now_ms(),
    })
}

/// Whether a request of a run after a secret is marked: a network request, or a write
/// outside the project.
fn marked_kind(query: &Query, project: &Path) -> bool {
    match &query.kind {
        QueryKind::Network(_) => true,
        QueryKind::Filesystem(fs) => {
            fs.operation == FsOperation::Write && !is_within(Path::new(&fs.path), project)
        }
    }
}

#[cfg(test)]
mod tests {
    //! The after-a-secret rules through the broker's own connections, answers and sweeps.
    use super::*;
    use crate::decision::answer::ChoiceKey;
    use crate::decision::grants::Lifetime;

    struct World {
        _dir: tempfile::TempDir,
        broker: Broker,
        project: Arc<Project>,
        home: PathBuf,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (project, home) = (base.join("p"), base.join("home"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        // The home a boundary, as the bundled /home is for a real one: its reads ask.
        std::fs::create_dir_all(project.join(".opencode")).unwrap();
        std::fs::write(
            project.join(".opencode/sandbox.json"),
            r#"{"filesystem":{"denyRead":["~"]}}"#,
        )
        .unwrap();
        World {
            _dir: dir,
            broker: Broker::new(Arc::new(ActivityLog::in_memory())),
            project: Arc::new(Project::new(project, home.clone())),
            home,
        }
    }

    impl World {
        fn run(&self) -> (Connection, mpsc::UnboundedReceiver<Outbound>) {
            let (tx, rx) = mpsc::unbounded_channel();
            (self.broker.connect(self.project.clone(), tx), rx)
        }

        fn secret(&self) -> String {
            self.home.join(".aws/credentials").display().to_string()
        }
    }

    fn send(conn: &mut Connection, line: &str) -> Vec<u8> {
        let mut out = Vec::new();
        conn.on_line(line.as_bytes(), &mut out);
        out
    }

    fn connect(id: u32) -> String {
        format!(
            r#"{{"kind":"network","state":"query","query_id":"{id}","operation":"connect","target":"127.0.0.1:9"}}"#
        )
    }

    /// A held read (landstrip saw a denyRead match) or write (no allowWrite covers it).
    fn fs(id: u32, operation: &str, path: &str) -> String {
        let reason = match operation {
            "read" => "deny_match",
            _ => "allow_miss",
        };
        format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"{id}","operation":"{operation}","path":"{path}","reason":"{reason}"}}"#
        )
    }

    fn allowed(id: u32) -> Vec<u8> {
        format!("{{\"query_id\":\"{id}\",\"action\":\"allow\"}}\n").into_bytes()
    }

    /// The newest pending prompt.
    fn last(broker: &Broker) -> PendingPrompt {
        broker.pending().pop().expect("a prompt")
    }

    /// Run `conn` reads the world's secret, answered once by a person.
    fn read_secret(w: &World, conn: &mut Connection, id: u32) {
        assert!(send(conn, &fs(id, "read", &w.secret())).is_empty());
        let read = last(&w.broker);
        assert_eq!(read.after_secret, None, "the read itself is not marked");
        w.broker.answer(read.id, &AnswerRequest::once()).unwrap();
    }

    fn for_run() -> AnswerRequest {
        AnswerRequest {
            lifetime: Some(Lifetime::Run),
            ..AnswerRequest::session()
        }
    }

    #[test]
    fn the_phone_allows_a_marked_connect_only_where_the_setting_allows_it() {
        let w = world();
        let (mut run, _rx) = w.run();
        // The control: a connect of a run that read nothing is the phone's to allow.
        assert!(send(&mut run, &connect(1)).is_empty());
        let plain = last(&w.broker);
        assert_eq!(plain.after_secret, None);
        let phone = |marked_allowed| Answerer::Web {
            device: "phone".into(),
            marked_allowed,
        };
        w.broker
            .answer_by(plain.id, &AnswerRequest::once(), &phone(false))
            .unwrap();
        read_secret(&w, &mut run, 2);
        assert!(send(&mut run, &connect(3)).is_empty());
        let marked = last(&w.broker);
        assert!(marked.after_secret.is_some(), "marked");
        let confirmed = AnswerRequest {
            confirmed_after_secret: true,
            ..AnswerRequest::once()
        };
        // Without the setting: no allow of any kind (an unconfirmed Once is refused by the
        // rules first, as at the desktop).
        let refused = w
            .broker
            .answer_by(marked.id, &AnswerRequest::once(), &phone(false));
        assert!(matches!(refused, Err(BrokerError::Rules(_))), "{refused:?}");
        for allow in [confirmed.clone(), for_run()] {
            assert!(matches!(
                w.broker.answer_by(marked.id, &allow, &phone(false)),
                Err(BrokerError::AtTheDesktop(id)) if id == marked.id
            ));
            assert_eq!(last(&w.broker).id, marked.id, "still waiting");
        }
        // With it, the confirmed answer allows.
        let answered = w
            .broker
            .answer_by(marked.id, &confirmed, &phone(true))
            .unwrap();
        assert_eq!(answered.action, Action::Allow);
        // Deny is always the phone's to give.
        assert!(send(&mut run, &connect(4)).is_empty());
        let next = last(&w.broker);
        assert!(next.after_secret.is_some());
        let denied = w
            .broker
            .answer_by(next.id, &AnswerRequest::deny(), &phone(false))
            .unwrap();
        assert_eq!(denied.action, Action::Deny);
        assert!(w.broker.pending().is_empty());
    }

    #[test]
    fn a_grant_made_before_the_read_does_not_allow_a_connect_after_it() {
        let w = world();
        let (mut run, _rx) = w.run();
        assert!(send(&mut run, &connect(1)).is_empty());
        let first = last(&w.broker);
        assert_eq!(first.after_secret, None, "nothing read yet");
        w.broker
            .answer(first.id, &AnswerRequest::session())
            .unwrap();
        assert_eq!(send(&mut run, &connect(2)), allowed(2), "the grant allows");

        read_secret(&w, &mut run, 3);
        assert!(send(&mut run, &connect(4)).is_empty(), "asked again");
        let marked = last(&w.broker);
        let read = marked.after_secret.clone().expect("marked");
        assert_eq!(read.path, w.secret());
        assert_eq!(read.what, "AWS credentials");
        // A write outside the project is marked too, inside it not (it is allowed).
        let outside = w.home.join("out.txt").display().to_string();
        assert!(send(&mut run, &fs(5, "write", &outside)).is_empty());
        assert_eq!(last(&w.broker).after_secret, Some(read));
    }

    #[test]
    fn no_sweep_and_no_bulk_answer_allow_a_marked_connect_and_the_run_grant_does() {
        let w = world();
        let (mut plain, _rx1) = w.run();
        let (mut after, mut rx2) = w.run();
        read_secret(&w, &mut after, 1);
        assert!(send(&mut after, &connect(2)).is_empty());
        assert!(send(&mut after, &connect(3)).is_empty());
        assert!(send(&mut plain, &connect(1)).is_empty());
        let pending = w.broker.pending();
        let (marked, queued, unmarked) = (pending[0].id, pending[1].id, pending[2].id);
        assert!(pending[2].after_secret.is_none(), "a run that read nothing");
        // The bulk count of the plain run's session answer leaves the marked ones out,
        // and its grant's sweep does not allow them.
        assert!(w.broker.covered_by_session_answer(unmarked).is_empty());
        let answered = w
            .broker
            .answer(unmarked, &AnswerRequest::session())
            .unwrap();
        assert!(answered.also_answered.is_empty(), "{answered:?}");
        assert_eq!(answered.left_waiting.len(), 2, "{answered:?}");
        assert!(
            answered.left_waiting[0].reason.contains("read"),
            "{answered:?}"
        );
        // Nor does the policy on disk, swept.
        let file = w.project.dir().join(".opencode/sandbox.json");
        std::fs::write(
            &file,
            r#"{"network":{"allowNetwork":true},"filesystem":{"denyRead":["~"]}}"#,
        )
        .unwrap();
        w.project.policy().invalidate();
        assert!(w.broker.sweep(&w.broker.sweep_turn()).is_empty());
        assert_eq!(w.broker.pending().len(), 2);
        // The answers refused leave it pending.
        for refused in [
            AnswerRequest::session(),
            AnswerRequest::once(),
            AnswerRequest::new(ChoiceKey::Project),
        ] {
            assert!(w.broker.answer(marked, &refused).is_err(), "{refused:?}");
        }
        // "This address for this run", with the read in view: allows it, the one queued
        // beside it, and the run's later connects to that address.
        assert_eq!(w.broker.covered_by_session_answer(marked), vec![queued]);
        let answered = w.broker.answer(marked, &for_run()).unwrap();
        assert_eq!(answered.also_answered, vec![queued]);
        let grant = w
            .broker
            .grants()
            .into_iter()
            .find(|g| g.after_secret)
            .expect("grant");
        assert_eq!(grant.run, Some(after.id()));
        assert_eq!(send(&mut after, &connect(4)), allowed(4));
        let mut sent = 0;
        while let Ok(Outbound::Answer(_, Action::Allow)) = rx2.try_recv() {
            sent += 1;
        }
        assert_eq!(sent, 3, "the read and both connects");
    }

    #[test]
    fn deny_mode_denies_a_marked_connect_without_asking_and_the_session_stays_marked() {
        let w = world();
        w.broker.set_after_secret(AfterSecretMode::Deny);
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut first = w.broker.connect(w.project.clone(), tx);
        assert!(send(
            &mut first,
            r#"{"kind":"opencode-landstrip-session","sessionID":"ses_a"}"#
        )
        .is_empty());
        // A policy that allows the secret's read: the automatic allow marks the run too.
        let file = w.project.dir().join(".opencode/sandbox.json");
        let policy = format!(
            r#"{{"filesystem":{{"denyRead":["~"],"allowRead":["{}"]}}}}"#,
            w.secret()
        );
        std::fs::write(&file, policy).unwrap();
        w.project.policy().invalidate();
        assert_eq!(send(&mut first, &fs(1, "read", &w.secret())), allowed(1));
        assert_eq!(
            send(&mut first, &connect(2)),
            b"{\"query_id\":\"2\",\"action\":\"deny\"}\n"
        );
        assert!(w.broker.pending().is_empty());
        // A later run of the same session is after the same secret.
        drop(first);
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut later = w.broker.connect(w.project.clone(), tx);
        send(
            &mut later,
            r#"{"kind":"opencode-landstrip-session","sessionID":"ses_a"}"#,
        );
        assert_eq!(
            send(&mut later, &connect(1)),
            b"{\"query_id\":\"1\",\"action\":\"deny\"}\n"
        );
        // Back to ask: it asks.
        w.broker.set_after_secret(AfterSecretMode::Ask);
        assert!(send(&mut later, &connect(2)).is_empty());
        assert!(last(&w.broker).after_secret.is_some());
        // A run of another session is not marked.
        let (mut other, _rx) = w.run();
        assert!(send(&mut other, &connect(1)).is_empty());
        assert!(last(&w.broker).after_secret.is_none());
    }
}
