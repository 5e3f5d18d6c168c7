//! Answering held prompts: a person's answer through the rules and the policy writer, the
//! claims that keep two surfaces from answering one prompt twice, the sweep that settles
//! what a new grant or policy now covers, and denying what is still held at shutdown.

use std::path::Path;

use super::*;
use crate::policy::sensitive::{self, Sensitive};

/// A pending prompt as a session grant's scope sees it.
struct ScopedPrompt {
    id: PromptId,
    /// Its sensitive location, if it has one.
    sensitive: Option<Sensitive>,
    /// Its run.
    run: ConnId,
    /// For a network request of a run after a secret, the read: only a grant made with it
    /// in view, for its run, allows it.
    secret: Option<SecretRead>,
}

/// The prompts a session scope holds.
type Scoped = Vec<ScopedPrompt>;

impl ScopedPrompt {
    /// Whether a Session answer to `own` may settle this prompt too: not a sensitive one
    /// unless it lies in the same sensitive location as `own`; after a secret, only a
    /// prompt of the answered one's run (its grant is for that run, with the read in
    /// view), and an answer to a prompt the mark does not concern settles none marked.
    fn settled_with(&self, own: &ScopedPrompt) -> bool {
        let sensitive_ok = self.sensitive.as_ref().is_none_or(|s| {
            own.sensitive
                .as_ref()
                .is_some_and(|o| o.location == s.location)
        });
        let secret_ok = match &own.secret {
            Some(_) => self.run == own.run,
            None => self.secret.is_none(),
        };
        sensitive_ok && secret_ok
    }
}

impl Broker {
    /// The pending prompts an "allow for session" answer to `id` would settle too (same
    /// run key, same operation, under the same scope), `id` excluded: not a sensitive one,
    /// unless it lies in the same sensitive location as `id` (whose Session answer then
    /// needs its confirmation), since only an answer to itself allows a sensitive request;
    /// not a network request of a run after a secret, unless `id` is one of the same run.
    pub fn covered_by_session_answer(&self, id: PromptId) -> Vec<PromptId> {
        let Some((own, scoped)) = self.under_session_scope(id) else {
            return Vec::new();
        };
        scoped
            .into_iter()
            .filter(|p| p.settled_with(&own))
            .map(|p| p.id)
            .collect()
    }

    /// Prompt `id` as its session scope sees it, and the other pending prompts of its run
    /// key that its session scope covers. None when `id` is not pending.
    fn under_session_scope(&self, id: PromptId) -> Option<(ScopedPrompt, Scoped)> {
        let table = self.table();
        let first = table.prompts.get(&id)?;
        let scoped_of = |p: &Pending| {
            let (sensitive, secret) = match &p.prompt.query.kind {
                QueryKind::Filesystem(fs) => (
                    sensitive::of_request(
                        Path::new(&fs.path),
                        p.project.home(),
                        &p.project.policy().paths().global,
                    ),
                    None,
                ),
                QueryKind::Network(_) => (None, p.prompt.after_secret.clone()),
            };
            ScopedPrompt {
                id: p.prompt.id,
                sensitive,
                run: p.prompt.connection,
                secret,
            }
        };
        let scope = match &first.prompt.query.kind {
            QueryKind::Filesystem(fs) => GrantScope::Filesystem {
                operation: fs.operation,
                root: session_scope(
                    Path::new(&fs.path),
                    first.project.dir(),
                    first.project.home(),
                ),
            },
            QueryKind::Network(net) => GrantScope::Network {
                operation: net.operation.clone(),
                target: net.target.clone(),
            },
        };
        let scoped = table
            .prompts
            .values()
            .filter(|p| p.prompt.id != id && p.key == first.key)
            .filter(|p| match &p.prompt.query.kind {
                QueryKind::Filesystem(fs) => scope.covers_path(fs.operation, Path::new(&fs.path)),
                QueryKind::Network(net) => scope.covers_target(&net.operation, &net.target),
            })
            .map(scoped_of)
            .collect();
        Some((scoped_of(first), scoped))
    }

    /// Answers a pending prompt as a person asked, from any surface.
    ///
    /// The answer is checked against the rules ([`answer::resolve`]) and then *claims* the
    /// prompt before it changes anything: while it adds a session grant or writes a
    /// policy entry, every other path (another surface, the sweep, a timeout, quitting)
    /// finds the prompt taken. If the policy write fails the claim is released, the prompt
    /// is pending again and the error is returned; nothing half-applied remains. A grant
    /// answers every other pending prompt it covers too.
    pub fn answer(&self, id: PromptId, request: &AnswerRequest) -> Result<Answered, BrokerError> {
        self.answer_by(id, request, &Answerer::User)
    }

    /// [`Broker::answer`], saying who answers: the activity records it (`by`, and the
    /// phone's name in the detail). From the phone page an answer that allows a sensitive
    /// location or a request of a run after a secret is refused unless the person's
    /// `webSensitive` setting allows it ([`Answerer::Web`]).
    pub fn answer_by(
        &self,
        id: PromptId,
        request: &AnswerRequest,
        by: &Answerer,
    ) -> Result<Answered, BrokerError> {
        // A remote machine's request is answered there, through its own rules. The phone
        // may deny one; allowing one is left to the desktop: whether it is sensitive or
        // follows a secret is that machine's to judge, and its rules do not know the phone.
        if let Answerer::Web { .. } = by {
            if self.is_remote(id)
                && !matches!(
                    request.choice,
                    answer::ChoiceKey::Deny | answer::ChoiceKey::Never
                )
            {
                return Err(BrokerError::AtTheDesktop(id));
            }
        }
        if let Some(remote) = self.answer_remote(id, request, by.decider()) {
            return remote;
        }
        let (decision, project, key, query, connection, marked) = {
            let mut table = self.table();
            let pending = table
                .prompts
                .get_mut(&id)
                .ok_or(BrokerError::NotPending(id))?;
            if pending.claimed {
                return Err(BrokerError::Busy(id));
            }
            let decision = answer::resolve(&pending.prompt, pending.project.home(), request)?;
            if let Answerer::Web {
                marked_allowed: false,
                ..
            } = by
            {
                let allows = match &decision {
                    Decision::Deny => false,
                    Decision::Session { effect, .. } => *effect == Effect::Allow,
                    Decision::Persist { list, .. } => {
                        !matches!(list, policy::FsList::DenyRead | policy::FsList::DenyWrite)
                    }
                    Decision::Once => true,
                };
                let sensitive = match &pending.prompt.query.kind {
                    QueryKind::Filesystem(fs) => {
                        sensitive::guarding(Path::new(&fs.path), pending.project.home()).is_some()
                    }
                    QueryKind::Network(_) => false,
                };
                if allows && (sensitive || pending.prompt.after_secret.is_some()) {
                    return Err(BrokerError::AtTheDesktop(id));
                }
            }
            pending.claimed = true;
            (
                decision,
                pending.project.clone(),
                pending.key.clone(),
                pending.prompt.query.clone(),
                pending.prompt.connection,
                pending.prompt.after_secret.is_some(),
            )
        };
        // What a session grant's scope holds besides this prompt, to say afterwards which
        // of them it left waiting (and why).
        let scoped = match decision {
            Decision::Session {
                effect: Effect::Allow,
                ..
            } => self.under_session_scope(id),
            _ => None,
        };
        let mut answered = Answered {
            action: Action::Allow,
            grant: None,
            persisted: None,
            also_answered: Vec::new(),
            left_waiting: Vec::new(),
        };
        let mut detail = None;
        let turn =
            (!matches!(decision, Decision::Deny | Decision::Once)).then(|| self.sweep_turn());
        match (&decision, &query.kind) {
            (Decision::Deny, _) => answered.action = Action::Deny,
            (Decision::Once, _) => {}
            (Decision::Session { effect, limits }, kind) => {
                let (scope, what) = match kind {
                    QueryKind::Filesystem(fs) => {
                        let root =
                            session_scope(Path::new(&fs.path), project.dir(), project.home());
                        let what = root.display().to_string();
                        let scope = GrantScope::Filesystem {
                            operation: fs.operation,
                            root,
                        };
                        (scope, what)
                    }
                    QueryKind::Network(net) => {
                        let scope = GrantScope::Network {
                            operation: net.operation.clone(),
                            target: net.target.clone(),
                        };
                        (scope, net.target.clone())
                    }
                };
                if *effect == Effect::Deny {
                    answered.action = Action::Deny;
                }
                // A sensitive request's own Session answer (confirmed: resolve saw to it)
                // allows that sensitive location again, and no other.
                let confirmed_for = match (effect, &scoped) {
                    (Effect::Allow, Some((own, _))) => {
                        own.sensitive.as_ref().map(|s| s.location.clone())
                    }
                    _ => None,
                };
                // A network request after a secret: resolve let only a grant for its run
                // through, which is made with the read in view.
                let after_secret =
                    *effect == Effect::Allow && marked && matches!(kind, QueryKind::Network(_));
                detail = Some(grant_detail(*effect, &what, limits));
                answered.grant = Some(self.inner.grants.add_confirmed(
                    key.clone(),
                    scope,
                    *effect,
                    limits,
                    connection,
                    Confirmed {
                        sensitive: confirmed_for,
                        after_secret,
                    },
                ));
            }
            (
                Decision::Persist {
                    target,
                    list,
                    entry,
                },
                _,
            ) => {
                let paths = policy::PolicyPaths::new(project.home(), project.dir());
                let file = match target {
                    PolicyTarget::Project => paths.project,
                    PolicyTarget::Global => paths.global,
                };
                // Recorded before the bytes land: the file watch then leaves the sweep
                // to this answer, which reports what else its entry answered.
                let written = self
                    .inner
                    .writer
                    .edit(&file, policy::Writer::Answer, None, |text| {
                        policy::add_entry(text, *list, entry)
                    });
                if let Err(e) = written {
                    self.release(id);
                    return Err(e.into());
                }
                detail = Some(format!(
                    "added {entry:?} to {} in {}",
                    list.json_key(),
                    file.display()
                ));
                // A deny list's entry is a "never": this request is denied too.
                if matches!(list, policy::FsList::DenyRead | policy::FsList::DenyWrite) {
                    answered.action = Action::Deny;
                }
                answered.persisted = Some((file, entry.clone()));
            }
        }
        let outcome = Outcome::from(answered.action);
        if answered.action == Action::Allow {
            // The prior state is kept before the allow goes out (the prompt is claimed:
            // nothing else answers it meanwhile).
            self.journal_query(connection, key.session.as_deref(), project.dir(), &query);
        }
        let detail = match by {
            Answerer::User => detail,
            Answerer::Web { device, .. } => Some(match detail {
                Some(detail) => format!("{detail}; from the phone page: {device}"),
                None => format!("from the phone page: {device}"),
            }),
        };
        self.finish_claim(id, answered.action, outcome, detail, by.decider());
        if let Some(turn) = &turn {
            answered.also_answered = self.sweep_after(turn, true);
        }
        if let Some((own, scoped)) = scoped {
            answered.left_waiting = self.left_waiting(&own, scoped, &answered);
        }
        Ok(answered)
    }

    /// Which of the prompts a session grant's scope holds are still waiting after its
    /// sweep, and why: a sensitive one asks for itself, and so does a network request of
    /// a run after a secret; a grant limited to one run or program leaves the others'.
    fn left_waiting(
        &self,
        own: &ScopedPrompt,
        scoped: Scoped,
        answered: &Answered,
    ) -> Vec<LeftWaiting> {
        let table = self.table();
        scoped
            .into_iter()
            .filter(|p| !answered.also_answered.contains(&p.id))
            .filter(|p| table.prompts.contains_key(&p.id))
            .map(|p| {
                let reason = match (&p.sensitive, &p.secret) {
                    (Some(s), _)
                        if own
                            .sensitive
                            .as_ref()
                            .is_none_or(|o| o.location != s.location) =>
                    {
                        format!(
                            "sensitive ({}): only an answer to this request itself allows it",
                            s.what
                        )
                    }
                    (_, Some(read)) if own.secret.is_none() || own.run != p.run => format!(
                        "its run read {}: only an answer to this request itself, with that read in view, allows it",
                        read.path
                    ),
                    _ => "the grant's limits (run or program) do not cover it".to_owned(),
                };
                LeftWaiting { id: p.id, reason }
            })
            .collect()
    }

    /// Gives a claimed prompt back after its side effect failed: pending again, unless
    /// its run ended or the app quit meanwhile (then it goes as those would have it).
    pub(super) fn release(&self, id: PromptId) {
        let (conn_alive, closed) = {
            let mut table = self.table();
            let conn_alive = table
                .prompts
                .get(&id)
                .is_some_and(|p| table.conns.contains_key(&p.prompt.connection));
            if let Some(pending) = table.prompts.get_mut(&id) {
                pending.claimed = false;
            }
            (conn_alive, self.is_closed())
        };
        if !conn_alive {
            if let Some(pending) = self.table().prompts.remove(&id) {
                self.announce_withdrawn(&pending);
            }
        } else if closed {
            self.settle(id, Action::Deny, Outcome::Deny, Decider::Quit, None);
        } else {
            self.arm_timeout(id);
        }
    }

    /// Settles a prompt this answer claimed. If its run ended while the side effect was
    /// applied, there is nobody to answer: it is recorded as withdrawn (the grant the
    /// person asked for stays).
    pub(super) fn finish_claim(
        &self,
        id: PromptId,
        action: Action,
        outcome: Outcome,
        detail: Option<String>,
        by: Decider,
    ) {
        let (pending, delivered) = {
            let mut table = self.table();
            let Some(pending) = table.prompts.remove(&id) else {
                return;
            };
            let delivered = table.conns.contains_key(&pending.prompt.connection);
            if delivered {
                // Before the answer goes out: the run's next request is judged with it.
                self.note_answer_locked(&mut table, &pending, action);
            }
            let delivered = match table.conns.get_mut(&pending.prompt.connection) {
                Some(conn) => {
                    conn.open_prompts = conn.open_prompts.saturating_sub(1);
                    let _ = conn
                        .tx
                        .send(Outbound::Answer(pending.query_id.clone(), action));
                    true
                }
                None => false,
            };
            (pending, delivered)
        };
        if !delivered {
            self.announce_withdrawn(&pending);
            return;
        }
        self.record(&pending.prompt, outcome, by, detail);
        let _ = self
            .inner
            .events
            .send(BrokerEvent::Resolved { id, outcome, by });
    }

    pub(super) fn announce_withdrawn(&self, pending: &Pending) {
        let prompt = &pending.prompt;
        self.record(prompt, Outcome::Withdrawn, Decider::RunEnded, None);
        let _ = self.inner.events.send(BrokerEvent::Resolved {
            id: prompt.id,
            outcome: Outcome::Withdrawn,
            by: Decider::RunEnded,
        });
    }

    /// Re-applies the automatic rules to every pending prompt (after a grant, or after the
    /// policy files changed) and answers those they now settle. Returns the ids answered.
    pub fn sweep(&self, turn: &SweepTurn<'_>) -> Vec<PromptId> {
        self.sweep_after(turn, false)
    }

    /// [`Broker::sweep`]; `after_answer` when a person's answer made the change, so what
    /// it allows is journaled as that answer's (what a session grant allows always is).
    fn sweep_after(&self, _turn: &SweepTurn<'_>, after_answer: bool) -> Vec<PromptId> {
        let candidates: Vec<SweepCandidate> = self
            .table()
            .prompts
            .values()
            .filter(|p| !p.claimed)
            .map(|p| {
                (
                    p.prompt.id,
                    p.project.clone(),
                    p.key.clone(),
                    p.prompt.query.clone(),
                    p.prompt.connection,
                )
            })
            .collect();
        let mut done = Vec::new();
        for (id, project, key, query, run) in candidates {
            let access = query.access();
            let asker = Asker {
                key: &key,
                run,
                program: query.process.as_ref().and_then(|p| p.exe.as_deref()),
                after_secret: self.after_secret_for(run, &key, &access),
            };
            if let Verdict::Auto(action, by) = decide(
                &project,
                &self.inner.grants,
                self.own_state(),
                self.canaries(),
                &asker,
                &access,
            ) {
                let outcome = Outcome::from(action);
                let journaled = Self::journals(action, by, after_answer)
                    && self.journal().is_some_and(|j| j.enabled());
                if !journaled {
                    if self.settle(id, action, outcome, by, None) {
                        done.push(id);
                    }
                    continue;
                }
                // Claimed first, so the prior state is kept only for a write this sweep
                // really allows, and before the allow goes out.
                if !self.claim(id) {
                    continue;
                }
                self.journal_query(run, key.session.as_deref(), project.dir(), &query);
                if self.settle_as(id, action, outcome, by, None, true) {
                    done.push(id);
                }
            }
        }
        done
    }

    /// Removes a prompt, sends its answer, records and announces it. False if it was no
    /// longer pending or an answer has claimed it: every prompt is settled once.
    pub(super) fn settle(
        &self,
        id: PromptId,
        action: Action,
        outcome: Outcome,
        by: Decider,
        detail: Option<String>,
    ) -> bool {
        self.settle_as(id, action, outcome, by, detail, false)
    }

    /// Claims an unclaimed pending prompt; false when it is gone or claimed already.
    fn claim(&self, id: PromptId) -> bool {
        let mut table = self.table();
        match table.prompts.get_mut(&id) {
            Some(pending) if !pending.claimed => {
                pending.claimed = true;
                true
            }
            _ => false,
        }
    }

    /// [`Broker::settle`] of a prompt in the claim state `claimed` (true: this caller
    /// claimed it). A claimed prompt whose run ended meanwhile is recorded withdrawn.
    fn settle_as(
        &self,
        id: PromptId,
        action: Action,
        outcome: Outcome,
        by: Decider,
        detail: Option<String>,
        claimed: bool,
    ) -> bool {
        let pending = {
            let mut table = self.table();
            if table.prompts.get(&id).is_none_or(|p| p.claimed != claimed) {
                return false;
            }
            let Some(pending) = table.prompts.remove(&id) else {
                return false;
            };
            if table.conns.contains_key(&pending.prompt.connection) {
                self.note_answer_locked(&mut table, &pending, action);
            }
            if let Some(conn) = table.conns.get_mut(&pending.prompt.connection) {
                conn.open_prompts = conn.open_prompts.saturating_sub(1);
                let _ = conn
                    .tx
                    .send(Outbound::Answer(pending.query_id.clone(), action));
            } else if claimed {
                // Its run ended while it was claimed: nobody to answer.
                drop(table);
                self.announce_withdrawn(&pending);
                return false;
            }
            pending
        };
        self.record(&pending.prompt, outcome, by, detail);
        let _ = self
            .inner
            .events
            .send(BrokerEvent::Resolved { id, outcome, by });
        true
    }

    /// Records what happened to a prompt, with the command behind it.
    pub(super) fn record(
        &self,
        prompt: &PendingPrompt,
        outcome: Outcome,
        by: Decider,
        detail: Option<String>,
    ) {
        let mut entry = activity_entry(
            &prompt.project,
            prompt.session.as_deref(),
            &prompt.query,
            outcome,
            by,
            detail,
        );
        if let Some(origin) = &prompt.origin {
            entry.command = origin.logged_command();
            entry.chain = origin.logged_chain();
        }
        // The mark a person saw, for whoever reads the log later (the path only).
        if let Some(read) = &prompt.after_secret {
            let note = format!("after a secret: its run read {}", read.path);
            entry.detail = Some(match entry.detail.take() {
                Some(detail) => format!("{detail}; {note}"),
                None => note,
            });
        }
        self.inner.activity.record(entry);
    }

    /// Denies every held query, for good: used when the app quits. New queries are denied
    /// from now on. Returns how many prompts were denied.
    pub fn shutdown(&self) -> usize {
        self.inner.closed.store(true, Ordering::Release);
        self.deny_where(|_| true)
    }

    /// Denies every held query of one project (it stops being served).
    pub fn deny_project(&self, dir: &Path) -> usize {
        self.deny_where(|p| p.prompt.project == dir)
    }

    pub(super) fn deny_where(&self, filter: impl Fn(&Pending) -> bool) -> usize {
        self.deny_where_by(filter, Decider::Quit)
    }

    /// Denies every unclaimed held query `filter` picks, recorded as settled `by`.
    pub(super) fn deny_where_by(&self, filter: impl Fn(&Pending) -> bool, by: Decider) -> usize {
        let ids: Vec<PromptId> = self
            .table()
            .prompts
            .values()
            .filter(|p| !p.claimed && filter(p))
            .map(|p| p.prompt.id)
            .collect();
        ids.into_iter()
            .filter(|id| self.settle(*id, Action::Deny, Outcome::Deny, by, None))
            .count()
    }
}

/// The activity log's words for a session grant an answer added.
fn grant_detail(effect: Effect, what: &str, limits: &crate::decision::grants::Limits) -> String {
    let mut detail = match effect {
        Effect::Allow => format!("session grant {what}"),
        Effect::Deny => format!("session denial {what}"),
    };
    match limits.lifetime {
        Some(crate::decision::grants::Lifetime::Run) => detail.push_str(" for this run"),
        Some(lifetime @ crate::decision::grants::Lifetime::For(_)) => {
            detail.push_str(&format!(" for {}", lifetime.as_text()));
        }
        None => {}
    }
    if let Some(program) = &limits.program {
        detail.push_str(&format!(" to {program} only"));
    }
    detail
}
