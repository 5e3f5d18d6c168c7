//! The requests of remote machines (docs/ARCHITECTURE.md, "Remote machines"): kept apart
//! from this machine's table, so no local machinery — grants, the sweep, timeouts, the
//! pause, after-a-secret, bulk answers, quitting — can settle one. They share the broker's
//! id counter and its events, so every surface shows them as it shows a local request;
//! an answer to one goes back over its link to the remote's own answer path, whose rules
//! decide (and whose files change).

use std::collections::BTreeMap;

use super::*;

/// How an answer reaches the remote machine a prompt waits on.
pub trait RemoteLink: Send + Sync {
    /// Sends `request` for the remote's prompt `remote_id` and waits (bounded) for the
    /// remote's reply. Blocks: never call it on an async worker.
    fn answer(&self, remote_id: PromptId, request: &AnswerRequest)
        -> Result<Answered, BrokerError>;

    /// The remote's own preview of a project or global answer (or with `never`, a "never"
    /// answer) to its prompt `remote_id`, as it sent it (untrusted: the caller reads and
    /// cleans it). Blocks, as `answer` does.
    fn preview(
        &self,
        remote_id: PromptId,
        target: PolicyTarget,
        never: bool,
    ) -> Result<serde_json::Value, BrokerError>;
}

/// One remote prompt.
struct RemoteEntry {
    prompt: PendingPrompt,
    remote_id: PromptId,
    link: Arc<dyn RemoteLink>,
    /// An answer is on its way: the snapshot that no longer lists it leaves it to that
    /// answer, which then says how it went.
    answering: bool,
    /// The remote no longer lists it (settled there) while an answer was on its way.
    gone: bool,
}

/// The remote prompts, by desktop id.
#[derive(Default)]
pub(super) struct RemoteTable {
    entries: BTreeMap<PromptId, RemoteEntry>,
}

/// A request of a remote machine, as its link hands it over: the remote's own id and the
/// prompt (its `id` and `host` are the broker's to set).
#[derive(Debug, Clone)]
pub struct RemotePrompt {
    /// The id the remote knows it by.
    pub remote_id: PromptId,
    /// The prompt as it will be shown.
    pub prompt: PendingPrompt,
}

impl Broker {
    fn remote_table(&self) -> std::sync::MutexGuard<'_, RemoteTable> {
        self.inner.remote.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The remote prompts, oldest first.
    pub(super) fn remote_pending(&self) -> Vec<PendingPrompt> {
        self.remote_table()
            .entries
            .values()
            .map(|e| e.prompt.clone())
            .collect()
    }

    /// Whether `id` is a remote machine's request.
    pub(super) fn is_remote(&self, id: PromptId) -> bool {
        self.remote_table().entries.contains_key(&id)
    }

    /// How many of `host`'s requests wait here.
    pub fn remote_count(&self, host: &str) -> usize {
        self.remote_table()
            .entries
            .values()
            .filter(|e| e.prompt.host_name() == Some(host))
            .count()
    }

    /// Makes `host`'s prompts here what its latest list says: new ones are added (with a
    /// desktop id from the broker's counter, announced `Added`), those no longer listed
    /// leave (announced `Resolved` by [`Decider::Remote`]); the others stay as they are.
    /// Returns the desktop ids in the list's order.
    pub fn sync_remote(
        &self,
        remote_host: &RemoteHost,
        list: Vec<RemotePrompt>,
        link: &Arc<dyn RemoteLink>,
    ) -> Vec<PromptId> {
        let host = remote_host.name.as_str();
        let mut added = Vec::new();
        let mut left = Vec::new();
        let mut ids = Vec::with_capacity(list.len());
        {
            let mut remote = self.remote_table();
            let known: HashMap<PromptId, PromptId> = remote
                .entries
                .values()
                .filter(|e| e.prompt.host_name() == Some(host))
                .map(|e| (e.remote_id, e.prompt.id))
                .collect();
            let listed: std::collections::HashSet<PromptId> =
                list.iter().map(|p| p.remote_id).collect();
            for (remote_id, id) in &known {
                if listed.contains(remote_id) {
                    continue;
                }
                match remote.entries.get_mut(id) {
                    Some(entry) if entry.answering => entry.gone = true,
                    Some(_) => {
                        remote.entries.remove(id);
                        left.push(*id);
                    }
                    None => {}
                }
            }
            for item in list {
                if let Some(id) = known.get(&item.remote_id) {
                    ids.push(*id);
                    continue;
                }
                // The broker's own counter, under the local table's lock (the remote
                // table's is held first, never the other way round).
                let id = {
                    let mut table = self.table();
                    table.next_prompt += 1;
                    table.next_prompt
                };
                let prompt = PendingPrompt {
                    id,
                    host: Some(remote_host.clone()),
                    ..item.prompt
                };
                remote.entries.insert(
                    id,
                    RemoteEntry {
                        prompt: prompt.clone(),
                        remote_id: item.remote_id,
                        link: link.clone(),
                        answering: false,
                        gone: false,
                    },
                );
                added.push(prompt);
                ids.push(id);
            }
        }
        for prompt in added {
            let _ = self.inner.events.send(BrokerEvent::Added(prompt));
        }
        for id in left {
            self.announce_remote_gone(id);
        }
        ids
    }

    /// The connection to `host` is lost (or the remote removed): its prompts leave at
    /// once (they still wait on the remote, where its own timeout applies). An answer on
    /// its way finds its link gone and reports it not delivered. Returns how many left.
    pub fn drop_host(&self, host: &str) -> usize {
        let left: Vec<PromptId> = {
            let mut remote = self.remote_table();
            let ids: Vec<PromptId> = remote
                .entries
                .values()
                .filter(|e| e.prompt.host_name() == Some(host))
                .map(|e| e.prompt.id)
                .collect();
            for id in &ids {
                remote.entries.remove(id);
            }
            ids
        };
        for id in &left {
            self.announce_remote_gone(*id);
        }
        left.len()
    }

    fn announce_remote_gone(&self, id: PromptId) {
        let _ = self.inner.events.send(BrokerEvent::Resolved {
            id,
            outcome: Outcome::Withdrawn,
            by: Decider::Remote,
        });
    }

    /// The remote's preview for remote prompt `id` (see [`RemoteLink::preview`]); None when
    /// `id` is not a remote prompt. Blocks: never on an async worker.
    pub fn remote_preview(
        &self,
        id: PromptId,
        target: PolicyTarget,
        never: bool,
    ) -> Option<Result<serde_json::Value, BrokerError>> {
        let (link, remote_id) = {
            let remote = self.remote_table();
            let entry = remote.entries.get(&id)?;
            (entry.link.clone(), entry.remote_id)
        };
        Some(link.preview(remote_id, target, never))
    }

    /// The answer to a remote prompt, sent over its link: None when `id` is not a remote
    /// prompt (the caller answers it locally). Nothing is recorded or written here: the
    /// remote's broker applies its rules, writes its files and records its activity.
    pub(super) fn answer_remote(
        &self,
        id: PromptId,
        request: &AnswerRequest,
        by: Decider,
    ) -> Option<Result<Answered, BrokerError>> {
        let (link, remote_id) = {
            let mut remote = self.remote_table();
            let entry = remote.entries.get_mut(&id)?;
            if entry.answering {
                return Some(Err(BrokerError::Busy(id)));
            }
            entry.answering = true;
            (entry.link.clone(), entry.remote_id)
        };
        let result = link.answer(remote_id, request);
        let (leaves, gone) = {
            let mut remote = self.remote_table();
            match remote.entries.get_mut(&id) {
                Some(entry) => {
                    entry.answering = false;
                    let gone = entry.gone;
                    if result.is_ok() || gone {
                        remote.entries.remove(&id);
                        (true, gone)
                    } else {
                        (false, false)
                    }
                }
                // Its host was dropped meanwhile (and announced then).
                None => (false, false),
            }
        };
        match (&result, leaves) {
            (Ok(answered), true) => {
                let _ = self.inner.events.send(BrokerEvent::Resolved {
                    id,
                    outcome: answered.action.into(),
                    by,
                });
            }
            (Err(_), true) if gone => self.announce_remote_gone(id),
            _ => {}
        }
        Some(result.map(|answered| Answered {
            // The remote's ids mean nothing here.
            also_answered: Vec::new(),
            left_waiting: Vec::new(),
            grant: None,
            ..answered
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::answer::ChoiceKey;
    use crate::wire::protocol::{decode_line, Line};

    /// A link that records what it was asked and answers as told (a stand-in for the SSH
    /// link, which the tests crate drives for real).
    struct FakeLink {
        /// The remote ids answered, with the choice sent.
        asked: Mutex<Vec<(PromptId, ChoiceKey)>>,
        refuse: bool,
    }

    impl RemoteLink for FakeLink {
        fn answer(
            &self,
            remote_id: PromptId,
            request: &AnswerRequest,
        ) -> Result<Answered, BrokerError> {
            self.asked.lock().unwrap().push((remote_id, request.choice));
            if self.refuse {
                return Err(BrokerError::RemoteRefused("needs confirmation".into()));
            }
            Ok(Answered {
                action: Action::Allow,
                grant: Some(9),
                persisted: None,
                also_answered: vec![remote_id + 1],
                left_waiting: Vec::new(),
            })
        }

        fn preview(
            &self,
            remote_id: PromptId,
            _: PolicyTarget,
            _: bool,
        ) -> Result<serde_json::Value, BrokerError> {
            Ok(serde_json::json!({ "remote_id": remote_id }))
        }
    }

    fn link(refuse: bool) -> (Arc<FakeLink>, Arc<dyn RemoteLink>) {
        let fake = Arc::new(FakeLink {
            asked: Mutex::new(Vec::new()),
            refuse,
        });
        (fake.clone(), fake)
    }

    fn host(name: &str) -> RemoteHost {
        RemoteHost {
            name: name.to_owned(),
            home: "/home/r".into(),
        }
    }

    fn remote(remote_id: PromptId, path: &str) -> RemotePrompt {
        let line = format!(
            r#"{{"kind":"filesystem","state":"query","query_id":{remote_id},"operation":"write","path":"{path}","reason":"allow_miss"}}"#
        );
        let Line::Query(query) = decode_line(line.as_bytes()) else {
            panic!("not a query")
        };
        RemotePrompt {
            remote_id,
            prompt: PendingPrompt {
                id: 0,
                connection: 0,
                project: "/home/r/p".into(),
                session: None,
                query: Arc::new(query),
                received_ms: 0,
                session_scope: Some("/x".into()),
                origin: None,
                after_secret: None,
                host: None,
            },
        }
    }

    fn local_query(id: u32, path: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"filesystem","state":"query","query_id":"{id}","operation":"write","path":"{path}","reason":"allow_miss"}}"#
        )
        .into_bytes()
    }

    fn setup() -> (tempfile::TempDir, Broker, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let broker = Broker::new(Arc::new(ActivityLog::in_memory()));
        let (tx, rx) = mpsc::unbounded_channel();
        std::mem::forget(rx);
        let conn = broker.connect(Arc::new(Project::new(project, dir.path().join("home"))), tx);
        (dir, broker, conn)
    }

    /// The id of this machine's pending prompt for `path`.
    fn local_id(broker: &Broker, path: &str) -> PromptId {
        broker
            .pending()
            .iter()
            .find(|p| {
                p.host.is_none()
                    && matches!(&p.query.kind, QueryKind::Filesystem(fs) if fs.path == path)
            })
            .unwrap_or_else(|| panic!("no local prompt for {path}"))
            .id
    }

    #[tokio::test]
    async fn local_grants_sweeps_timeouts_and_quitting_never_settle_a_remote_prompt() {
        let (_dir, broker, mut conn) = setup();
        let mut events = broker.subscribe();
        let mut out = Vec::new();
        conn.on_line(&local_query(1, "/x/a"), &mut out);
        conn.on_line(&local_query(2, "/x/c"), &mut out);
        let (fake, link) = link(false);
        let remote_id = broker.sync_remote(&host("devbox"), vec![remote(5, "/x/b")], &link)[0];
        let (a, c) = (local_id(&broker, "/x/a"), local_id(&broker, "/x/c"));
        // a's session grant covers /x: it settles this machine's /x/c (the control), never
        // the remote's /x/b.
        assert_eq!(broker.covered_by_session_answer(a), [c]);
        let answered = broker.answer(a, &AnswerRequest::session()).unwrap();
        assert_eq!(answered.also_answered, [c]);
        let turn = broker.sweep_turn();
        assert!(broker.sweep(&turn).is_empty());
        drop(turn);
        // A timeout denies this machine's prompt and leaves the remote's.
        broker.set_prompt_timeout(Some(Duration::from_millis(10)));
        conn.on_line(&local_query(3, "/y/d"), &mut out);
        let d = local_id(&broker, "/y/d");
        let timed_out = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match events.recv().await {
                    Ok(BrokerEvent::Resolved {
                        id,
                        by: Decider::Timeout,
                        ..
                    }) => return id,
                    Ok(_) => continue,
                    Err(e) => panic!("events: {e}"),
                }
            }
        })
        .await
        .expect("the local prompt timed out");
        assert_eq!(timed_out, d);
        broker.set_prompt_timeout(None);
        // Quitting denies this machine's prompt (the control) and leaves the remote's.
        conn.on_line(&local_query(4, "/y/e"), &mut out);
        assert_eq!(broker.shutdown(), 1, "quitting denies local prompts only");
        let pending = broker.pending();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, remote_id);
        assert_eq!(pending[0].host_name(), Some("devbox"));
        // Its paths are judged by the remote user's home, not this one's.
        assert_eq!(pending[0].home(Path::new("/home/me")), Path::new("/home/r"));
        assert!(
            fake.asked.lock().unwrap().is_empty(),
            "nothing sent to the remote"
        );
    }

    #[test]
    fn an_answer_goes_over_the_link_and_the_remote_s_refusal_keeps_the_prompt() {
        let (_dir, broker, _conn) = setup();
        let mut events = broker.subscribe();
        let (fake, ok) = link(false);
        let id = broker.sync_remote(&host("a"), vec![remote(5, "/x/b")], &ok)[0];
        assert!(matches!(events.try_recv(), Ok(BrokerEvent::Added(p)) if p.id == id));
        let answered = broker.answer(id, &AnswerRequest::once()).unwrap();
        assert_eq!(*fake.asked.lock().unwrap(), [(5, ChoiceKey::Once)]);
        assert!(answered.also_answered.is_empty(), "remote ids never leak");
        assert!(matches!(
            events.try_recv(),
            Ok(BrokerEvent::Resolved { id: i, by: Decider::User, .. }) if i == id
        ));
        assert!(broker.pending().is_empty());

        let (_, refusing) = link(true);
        let id = broker.sync_remote(&host("a"), vec![remote(6, "/x/c")], &refusing)[0];
        assert!(matches!(
            broker.answer(id, &AnswerRequest::once()),
            Err(BrokerError::RemoteRefused(_))
        ));
        assert_eq!(broker.pending().len(), 1, "still waiting");
    }

    #[test]
    fn the_phone_may_deny_a_remote_prompt_but_never_allow_one() {
        let (_dir, broker, _conn) = setup();
        let mut events = broker.subscribe();
        let (fake, link) = link(false);
        let id = broker.sync_remote(&host("a"), vec![remote(5, "/x/b")], &link)[0];
        let _added = events.try_recv();
        let phone = Answerer::Web {
            device: "phone".into(),
            marked_allowed: true,
        };
        for allow in [AnswerRequest::once(), AnswerRequest::session()] {
            assert!(matches!(
                broker.answer_by(id, &allow, &phone),
                Err(BrokerError::AtTheDesktop(i)) if i == id
            ));
        }
        assert!(fake.asked.lock().unwrap().is_empty(), "no allow was sent");
        broker
            .answer_by(id, &AnswerRequest::deny(), &phone)
            .unwrap();
        assert_eq!(*fake.asked.lock().unwrap(), [(5, ChoiceKey::Deny)]);
        assert!(matches!(
            events.try_recv(),
            Ok(BrokerEvent::Resolved { id: i, by: Decider::Web, .. }) if i == id
        ));
    }

    #[test]
    fn a_new_list_adds_and_removes_and_drop_host_resolves_them_all() {
        let (_dir, broker, _conn) = setup();
        let (_, link) = link(false);
        let first = broker.sync_remote(&host("a"), vec![remote(1, "/a"), remote(2, "/b")], &link);
        let again = broker.sync_remote(&host("a"), vec![remote(2, "/b"), remote(3, "/c")], &link);
        assert_eq!(again[0], first[1], "a known remote id keeps its desktop id");
        assert!(again[1] > first[1]);
        broker.sync_remote(&host("b"), vec![remote(1, "/a")], &link);
        assert_eq!(broker.remote_count("a"), 2);
        let mut events = broker.subscribe();
        assert_eq!(broker.drop_host("a"), 2);
        for _ in 0..2 {
            assert!(matches!(
                events.try_recv(),
                Ok(BrokerEvent::Resolved {
                    by: Decider::Remote,
                    outcome: Outcome::Withdrawn,
                    ..
                })
            ));
        }
        assert_eq!(broker.pending().len(), 1);
        assert_eq!(broker.pending()[0].host_name(), Some("b"));
    }
}
