//! Starting a run for a request: the agent, grants within the token's ceiling, the session, a
//! run slot, then [`Host::run_spawned`](kiln_host::Host::run_spawned) with the same run log `kiln
//! ask` writes. The run's events go into its [`RunEntry`] as they happen; a driver task waits
//! for its end.

mod sink;

use super::error::ApiError;
use super::error::error_kind;
use super::metrics::Metrics;
use super::state::{AppState, session_key};
use super::table::RunEntry;
use crate::feed::Audience;
use crate::walls::auth::Principal;
use futures_util::StreamExt;
use kiln_agent::Event;
use kiln_agent::connect::ProviderOverrides;
use kiln_agent::record::runlog::RunLogger;
use kiln_agent::record::{Commit, committed};
use kiln_agent::{RecordError, Recorder, RunOptions, RunReport, ToolCallRecord};
use kiln_core::capability::Grants;
use kiln_db::sessions::ResumeError;
use kiln_host::admission::check_within;
use kiln_providers::{AnsweredBy, Message, StopReason, Usage};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What a request asks to run.
#[derive(Default)]
pub struct RunRequest {
    /// The agent.
    pub agent: String,
    /// The new user message.
    pub prompt: String,
    /// Earlier messages the client sent (Chat Completions).
    pub history: Vec<Message>,
    /// System additions, temperature and max tokens.
    pub overrides: ProviderOverrides,
    /// Capabilities asked for (within the token's ceiling); `None`: the agent's own.
    pub caps: Option<Vec<String>>,
    /// The JSON field `caps` came from, for errors.
    pub caps_param: &'static str,
    /// `ctx.context`.
    pub context: serde_json::Map<String, Value>,
    /// `ctx.actor_id` when the token names none.
    pub actor: Option<String>,
    /// A session to continue.
    pub session: Option<String>,
    /// The client sends the whole conversation each time (AG-UI, the AI SDK's `useChat`): the
    /// session serializes its runs and keeps them in the run log, and its stored history
    /// does not replace the client's (nor its state one the client sent).
    pub keep_history: bool,
    /// Stream the model's replies (text events as they arrive).
    pub stream: bool,
    /// This run's budget, within the agent's.
    pub budget: Option<kiln_registry::contract::Budget>,
    /// Function tools the client runs itself (Responses): the run stops when the model calls
    /// one.
    pub client_tools: Vec<kiln_providers::ToolDef>,
    /// `ctx.state` to continue from (a stored response's), shared so the door reads it after.
    pub state: Option<Arc<Mutex<Value>>>,
    /// Images and files on the prompt.
    pub attachments: Vec<kiln_providers::Attachment>,
    /// The person behind the door, as the run's tools may ask them (a form, `elicit`) or reach
    /// their files; `None`: the tools cannot ask.
    pub person: Option<Arc<dyn kiln_core::context::call_events::CallObserver>>,
}

/// The run log, plus the run id as soon as the run starts and the server's metrics.
struct Tap {
    log: Option<RunLogger>,
    metrics: Arc<Metrics>,
    started: Mutex<Option<oneshot::Sender<String>>>,
}

impl Recorder for Tap {
    fn started(&self, report: &RunReport) -> Result<(), RecordError> {
        if let Some(l) = &self.log {
            l.started(report)?;
        }
        self.metrics.run_started(&report.agent);
        let tx = self.started.lock().ok().and_then(|mut s| s.take());
        if let Some(tx) = tx {
            let _ = tx.send(report.run_id.clone());
        }
        Ok(())
    }

    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        by: &AnsweredBy,
        took: Duration,
    ) {
        if let Some(l) = &self.log {
            l.model_reply(run_id, round, usage, stop, by, took);
        }
        self.metrics.model_reply(took, usage);
    }

    fn step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Result<(), RecordError> {
        if let Some(l) = &self.log {
            l.step(run_id, first_seq, messages, calls, state)?;
        }
        self.metrics.tool_calls(calls);
        Ok(())
    }

    fn ended(&self, report: &RunReport) -> Result<(), RecordError> {
        match &self.log {
            Some(l) => l.ended(report),
            None => Ok(()),
        }
    }

    fn commit_started(&self, report: &RunReport) -> Commit {
        let logged = self.log.as_ref().map(|l| l.commit_started(report));
        let metrics = self.metrics.clone();
        let tx = self.started.lock().ok().and_then(|mut s| s.take());
        let (agent, run_id) = (report.agent.clone(), report.run_id.clone());
        Box::pin(async move {
            let logged = match logged {
                Some(logged) => logged.await,
                None => Ok(()),
            };
            metrics.run_started(&agent);
            // Known by its own id even when its start could not be logged (it lands later).
            if let Some(tx) = tx {
                let _ = tx.send(run_id);
            }
            logged
        })
    }

    fn commit_step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Commit {
        let logged = self
            .log
            .as_ref()
            .map(|l| l.commit_step(run_id, first_seq, messages, calls, state));
        self.metrics.tool_calls(calls);
        match logged {
            Some(logged) => logged,
            None => committed(Ok(())),
        }
    }

    fn commit_ended(&self, report: &RunReport) -> Commit {
        match &self.log {
            Some(l) => l.commit_ended(report),
            None => committed(Ok(())),
        }
    }

    fn failing(&self) -> bool {
        self.log.as_ref().is_some_and(|l| l.failing())
    }
}

/// The grants a run gets: the meet of the agent's own, the token's ceiling, the server's
/// (`--caps`, with its `--ask` marks) and the request's caps; caps asked beyond a ceiling are
/// refused by name.
pub(super) fn grants_for(
    state: &AppState,
    who: &Principal,
    agent_grants: &Grants,
    req: &RunRequest,
) -> Result<Grants, ApiError> {
    let asked = req
        .caps
        .as_ref()
        .map(|caps| Grants::parse(caps))
        .transpose()
        .map_err(|e| ApiError::bad_request(req.caps_param, e.to_string()))?;
    let (token, server) = (who.ceiling.as_ref(), state.options.ceiling.as_ref());
    if let Some(asked) = &asked {
        for ceiling in [token, server].into_iter().flatten() {
            check_within(asked, ceiling, req.caps_param)?;
        }
    }
    Ok(Grants::effective(&[
        Some(agent_grants),
        token,
        server,
        asked.as_ref(),
    ]))
}

/// The agent `name`, or the `404` that names it.
pub(super) fn find_agent(
    state: &AppState,
    name: &str,
) -> Result<Arc<kiln_registry::agent_spec::AgentSpec>, ApiError> {
    state.host.agent(name).map_err(|_| {
        ApiError::not_found(
            "model_not_found",
            format!("no agent named \"{name}\" (GET /v1/models lists the agents)"),
        )
    })
}

/// Starts a run; it goes on in its own task (its events in the returned entry) until it ends,
/// is cancelled, or the server stops it after the grace period.
///
/// The order of the steps is part of the behaviour:
/// - a draining server refuses before anything else is looked at;
/// - the agent and the grants are checked before any waiting, so a request that would be refused
///   is refused at once, not after queueing;
/// - the session's lock is taken before the run slot, so a request waiting behind its own
///   session's run does not hold a slot another run could use;
/// - the session is resumed only once its lock is held, so it continues from where the previous
///   run on it left off;
/// - the run's id is awaited before the entry is made (the run table keys runs by it);
/// - the entry has its approvals attached before it goes in the run table, so an entry found
///   there already holds the approval requests the run made before it existed;
/// - the entry is in the table before the driver starts, so the driver's `finished` always
///   follows the `insert`;
/// - the driver holds the run slot and the session's lock until the run's events end.
pub async fn launch(
    state: &Arc<AppState>,
    who: &Principal,
    mut req: RunRequest,
) -> Result<Arc<RunEntry>, ApiError> {
    if state.draining() {
        return Err(ApiError::unavailable("the server is shutting down"));
    }
    let agent = find_agent(state, &req.agent)?;
    let grants = grants_for(state, who, &agent.grants, &req)?;
    let db = state.host.database().cloned();
    let session = join_session(state, who, &mut req, db.as_ref()).await?;
    let permit = state.limiter.acquire().await?;
    let (started_tx, started_rx) = oneshot::channel();
    let tap = Tap {
        log: db.map(|db| RunLogger::new(db, session.key)),
        metrics: state.metrics.clone(),
        started: Mutex::new(Some(started_tx)),
    };
    let cancel = state.stop_runs.child_token();
    let approvals = Arc::new(crate::table::approvals::Approvals::new(
        state.options.approval_timeout,
    ));
    let agent_name = std::mem::take(&mut req.agent);
    let prompt = std::mem::take(&mut req.prompt);
    let steering = Arc::new(kiln_agent::steer::Steering::default());
    let parts = RunParts {
        grants,
        tap,
        cancel: cancel.clone(),
        approvals: approvals.clone(),
        steering: steering.clone(),
    };
    let mut opts = run_options(state, who, req, parts);
    // The run's events go into its entry from its own task, not through a channel and a task
    // woken for each.
    let sink = Arc::new(sink::EventSink::default());
    let to_sink = sink.clone();
    opts.observer = Some(Arc::new(move |ev: &Event| to_sink.push(ev)));
    let began = Instant::now();
    let stream = state.host.run_spawned(&agent_name, &prompt, opts);
    let run_id = started_rx
        .await
        .unwrap_or_else(|_| kiln_core::context::new_run_id());
    let run = (run_id, agent_name);
    let entry = register(state, who, run, cancel, approvals, steering);
    sink.attach(&entry);
    let held = (permit, session.guard, session.lease);
    drive(state.clone(), entry.clone(), stream, held, began);
    Ok(entry)
}

/// The session a run continues: its key (for the run log) and its lock, held until the run
/// ends. Both `None` for a run without a session.
struct SessionHold {
    key: Option<String>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// The session's turn across the servers sharing a PostgreSQL database.
    lease: Option<kiln_db::Lease>,
}

/// Takes the request's session (waiting in the queue while another run holds it), then resumes
/// it: a session with a stored state replaces the request's history and `ctx.state`. A session
/// needs the database; one started with another agent is refused.
async fn join_session(
    state: &AppState,
    who: &Principal,
    req: &mut RunRequest,
    db: Option<&Arc<kiln_db::Db>>,
) -> Result<SessionHold, ApiError> {
    let key = req
        .session
        .as_deref()
        .map(|name| session_key(who, name))
        .transpose()?;
    let Some(k) = &key else {
        return Ok(SessionHold {
            key,
            guard: None,
            lease: None,
        });
    };
    let Some(db) = db else {
        return Err(ApiError::bad_request(
            "session",
            "the server has no database",
        ));
    };
    // A busy session's next request waits in the queue like one waiting for a slot.
    let lock = state.session_lock(k);
    let guard = match lock.clone().try_lock_owned() {
        Ok(guard) => guard,
        Err(_) => {
            state
                .limiter
                .wait_queued(
                    &format!("session \"{}\"", req.session.as_deref().unwrap_or_default()),
                    lock.lock_owned(),
                )
                .await?
        }
    };
    let name = req.session.as_deref().unwrap_or_default();
    // Then its turn among the servers sharing a PostgreSQL database (waiting in the queue
    // as well).
    let lease = if db.is_postgres() {
        state
            .limiter
            .wait_queued(&format!("session \"{name}\""), db.session_lease(k))
            .await?
            .map_err(|e| ApiError::internal(e.to_string()))?
    } else {
        None
    };
    match db.resume_session(k, name, &req.agent) {
        Ok(resumed) if resumed.state.is_some() && req.keep_history => {
            if req.state.is_none() {
                req.state = resumed.state;
            }
        }
        Ok(resumed) if resumed.state.is_some() => {
            req.history = resumed.messages;
            req.state = resumed.state;
        }
        Ok(_) => {}
        Err(e @ ResumeError::OtherAgent { .. }) => {
            return Err(ApiError::bad_request("session", e.to_string()));
        }
        Err(ResumeError::Db(e)) => return Err(ApiError::internal(e.to_string())),
    }
    Ok(SessionHold {
        key,
        guard: Some(guard),
        lease,
    })
}

/// What `launch` has made for a run besides the request: the grants it checked, the recorder,
/// the cancel token and the approvals the run's entry shares.
struct RunParts {
    grants: Grants,
    tap: Tap,
    cancel: tokio_util::sync::CancellationToken,
    approvals: Arc<crate::table::approvals::Approvals>,
    steering: Arc<kiln_agent::steer::Steering>,
}

/// The run's options: the request's (its agent and prompt already taken out) within the
/// server's timeouts, the actor the token names before the one the request does.
fn run_options(state: &AppState, who: &Principal, req: RunRequest, parts: RunParts) -> RunOptions {
    let mut overrides = req.overrides;
    overrides.timeout = overrides.timeout.or(state.options.request_timeout);
    RunOptions {
        overrides,
        grants: Some(parts.grants),
        context: req.context,
        actor_id: who.actor.clone().or(req.actor),
        stream: req.stream,
        timeout: state.options.run_timeout,
        cancel: parts.cancel,
        history: req.history,
        state: req.state,
        recorder: Some(Arc::new(parts.tap)),
        budget: req.budget,
        approver: Some(parts.approvals),
        steering: Some(parts.steering),
        client_tools: req.client_tools,
        attachments: req.attachments,
        tool_events: req
            .person
            .map(|p| Arc::new(kiln_core::context::call_events::CallEvents::new(p))),
        ..RunOptions::default()
    }
}

/// The started run's entry, with the approvals' events going into it and the console's feed,
/// put in the run table.
pub(super) fn register(
    state: &Arc<AppState>,
    who: &Principal,
    (run_id, agent): (String, String),
    cancel: tokio_util::sync::CancellationToken,
    approvals: Arc<crate::table::approvals::Approvals>,
    steering: Arc<kiln_agent::steer::Steering>,
) -> Arc<RunEntry> {
    if let Some(db) = state.host.database().filter(|db| db.is_postgres()) {
        // Servers sharing the database decide this run's approvals too.
        let book = crate::table::book::Book::new(db.clone(), run_id.clone(), who.actor.clone());
        approvals.share(book);
    }
    let mut entry = RunEntry::new(run_id, agent, who.actor.clone(), cancel, approvals.clone());
    // What a person adds reaches the run through its own queue.
    entry.steering = steering;
    let entry = Arc::new(entry);
    // The feed hears of the run's approvals only after its start: one asked before the entry
    // existed is replayed into it by `attach`, and announced below, after `run_started`.
    let announced = Arc::new(Mutex::new(Announced::default()));
    attach_approvals(state, &entry, &approvals, &announced);
    state.runs.insert(entry.clone());
    {
        let mut said = announced.lock().unwrap_or_else(|e| e.into_inner());
        state.feed.publish(
            "run_started",
            Audience::Owner(entry.owner.clone()),
            serde_json::json!({
                "id": entry.id, "agent": entry.agent, "actor": entry.owner,
                "status": "running", "started_at": entry.started_at,
            }),
        );
        let deciders = Audience::Deciders(entry.owner.clone());
        for item in entry.inbox() {
            let id = item["id"].as_str().unwrap_or_default().to_string();
            if said.sent.insert(id) {
                state
                    .feed
                    .publish("approval_requested", deciders.clone(), item);
            }
        }
        said.started = true;
    }
    tracing::info!(run_id = %entry.id, agent = %entry.agent, actor = ?who.actor, "run started");
    entry
}

/// What the feed was told of a run: its start, and the approvals announced (each once, though
/// `register`'s replay and the live event may both see it).
#[derive(Default)]
struct Announced {
    started: bool,
    sent: std::collections::HashSet<String>,
}

/// Sends the run's approval events into its entry, and to the feed once `announced` (the
/// run's start was). Lock order: the approvals' own, then `announced`, then their pending
/// list (`inbox`); nothing takes them the other way.
fn attach_approvals(
    state: &Arc<AppState>,
    entry: &Arc<RunEntry>,
    approvals: &crate::table::approvals::Approvals,
    announced: &Arc<Mutex<Announced>>,
) {
    let (events, feed, said) = (
        Arc::downgrade(entry),
        Arc::downgrade(state),
        announced.clone(),
    );
    approvals.attach(move |ev| {
        let Some(entry) = events.upgrade() else {
            return;
        };
        let asked = match &ev {
            Event::ApprovalRequested(asked) => Some(asked.id.clone()),
            _ => None,
        };
        entry.push(ev);
        let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
        let started = said.started;
        // An approval asked while `register` announced the run was announced there already.
        let fresh = asked.filter(|id| started && said.sent.insert(id.clone()));
        if let (Some(id), Some(state)) = (fresh, feed.upgrade()) {
            let deciders = Audience::Deciders(entry.owner.clone());
            for item in entry.inbox().into_iter().filter(|a| a["id"] == id.as_str()) {
                state
                    .feed
                    .publish("approval_requested", deciders.clone(), item);
            }
        }
    });
    let (run, owner) = (entry.id.clone(), entry.owner.clone());
    let (feed, said) = (Arc::downgrade(state), announced.clone());
    approvals.on_closed(move |id, decision| {
        // Not before the run's start was announced.
        let _said = said.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(state) = feed.upgrade() {
            let data = serde_json::json!({"run": run, "id": id, "decision": decision});
            let to = Audience::Deciders(owner.clone());
            state.feed.publish("approval_decided", to, data);
        }
    });
}

/// The driver task: waits for the run's end (its other events go into the entry from the run's
/// own task, [`sink::EventSink`]), records how it finished, and marks it finished in the table
/// once the stream ends. `held` (the run slot and the session) is released only then.
fn drive<H: Send + 'static>(
    state: Arc<AppState>,
    entry: Arc<RunEntry>,
    mut stream: kiln_host::RunStream,
    held: H,
    began: Instant,
) {
    tokio::spawn(async move {
        // The slot and the session stay taken until the run has ended.
        let _held = held;
        while let Some(ev) = stream.next().await {
            if let Event::Finished(result) = &ev {
                record_finish(&state, &entry, result, began);
            }
            entry.push(ev);
        }
        announce_end(&state, &entry);
        state.runs.finished(&entry.id);
    });
}

/// Tells the console's feed that a run ended.
pub(super) fn announce_end(state: &AppState, entry: &RunEntry) {
    state.feed.publish(
        "run_ended",
        Audience::Owner(entry.owner.clone()),
        serde_json::json!({
            "id": entry.id, "agent": entry.agent, "actor": entry.owner,
            "status": entry.status_word(),
        }),
    );
}

/// Counts and logs a run's end: `ok`, `cancelled`, `deadline` or `error`.
fn record_finish(
    state: &AppState,
    entry: &RunEntry,
    result: &Result<RunReport, kiln_agent::RunError>,
    began: Instant,
) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(e) => match error_kind(e) {
            k @ ("cancelled" | "deadline") => k,
            _ => "error",
        },
    };
    state.metrics.run_finished(&entry.agent, outcome);
    tracing::info!(
        run_id = %entry.id,
        agent = %entry.agent,
        outcome,
        ms = began.elapsed().as_millis() as u64,
        "run finished"
    );
    // The whole error stays here; its caller sees it scrubbed.
    if let Err(e) = result {
        tracing::warn!(run_id = %entry.id, "run failed: {e}");
    }
}
