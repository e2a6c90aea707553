//! The A2A door's tasks: each a conversation turn of one actor with one agent, carried out as
//! kiln runs in the task's context (a kiln session). A task keeps its status, its history, its
//! artifacts and its push configs, and tells its watchers (a stream, a blocking send, the push
//! sender) each change as an A2A stream event. Kept in memory, bounded: the oldest ended tasks
//! are forgotten first (the run log keeps their runs).

use super::RunEntry;
use kiln_a2a::{
    A2aError, Artifact, Message, PushConfig, StatusUpdate, StreamResponse, Task, TaskState,
    TaskStatus,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Where a config's notifications may go: its URL's target and the scope that allows it.
#[derive(Debug, Clone)]
pub(crate) struct PushTarget {
    /// The webhook.
    pub url: reqwest::Url,
    /// Its host and port.
    pub target: kiln_egress::Target,
    /// The `--a2a-push` scope that names the target (`None`: unscoped, public addresses).
    pub scope: Option<String>,
}

/// Tasks kept at most; past it the oldest ended ones are forgotten.
pub(crate) const KEEP_TASKS: usize = 10_000;
/// Push configs one task may hold.
pub(crate) const MAX_PUSH_CONFIGS: usize = 16;
/// Messages one task may have waiting for its turn.
pub(crate) const MAX_QUEUED: usize = 32;

/// One task.
pub(crate) struct A2aTask {
    /// The task id.
    pub id: String,
    /// Its context: the kiln session its runs continue.
    pub context_id: String,
    /// The agent.
    pub agent: String,
    /// The token's actor that created it (`None` on an open server).
    pub owner: Option<String>,
    /// Ends the task's driver (a cancel).
    pub cancel: CancellationToken,
    /// Whether its changes go to its webhooks already (see `push::forward`).
    pub forwarding: std::sync::atomic::AtomicBool,
    inner: Mutex<Inner>,
    /// Bumped on every change: a blocking send waits on it.
    changed: watch::Sender<u64>,
    /// Every change as the stream event a watcher sends.
    events: broadcast::Sender<StreamResponse>,
}

/// What changes as the task goes.
struct Inner {
    status: TaskStatus,
    /// Seconds since the epoch of the last status change (for ListTasks' order and filter).
    updated: f64,
    history: Vec<Message>,
    artifacts: Vec<Artifact>,
    /// Messages waiting for the run in progress to end.
    queued: VecDeque<Message>,
    /// The run in progress.
    run: Option<Arc<RunEntry>>,
    /// Every run of the task, oldest first.
    runs: Vec<String>,
    /// The approval the task waits for (`input-required`), by its id in the run.
    asking: Option<String>,
    /// A tool's form the task waits on (`input-required`).
    form: Option<FormWait>,
    push: Vec<(PushConfig, PushTarget)>,
}

/// A tool's form a task waits on: the fields' schema, and where the answer goes (the tool's
/// thread waits on the other end).
pub struct FormWait {
    /// The restricted JSON Schema of the form's fields.
    pub schema: serde_json::Value,
    /// Takes `{"action", "content"}`.
    pub answer: std::sync::mpsc::SyncSender<serde_json::Value>,
}

impl A2aTask {
    /// A new task holding `first`, submitted.
    pub fn new(id: String, context_id: String, agent: String, owner: Option<String>) -> Self {
        let (events, _) = broadcast::channel(256);
        A2aTask {
            id,
            context_id,
            agent,
            owner,
            cancel: CancellationToken::new(),
            forwarding: Default::default(),
            inner: Mutex::new(Inner {
                status: status(TaskState::Submitted, None),
                updated: now(),
                history: Vec::new(),
                artifacts: Vec::new(),
                queued: VecDeque::new(),
                run: None,
                runs: Vec::new(),
                asking: None,
                form: None,
                push: Vec::new(),
            }),
            changed: watch::Sender::new(0),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task's state now.
    pub fn state(&self) -> TaskState {
        self.lock().status.state
    }

    /// When its status last changed (seconds since the epoch).
    pub fn updated(&self) -> f64 {
        self.lock().updated
    }

    /// The task as the protocol shows it: the last `history` messages (`None`: all) and its
    /// artifacts when `artifacts`.
    pub fn snapshot(&self, history: Option<usize>, artifacts: bool) -> Task {
        let inner = self.lock();
        let all = &inner.history;
        let keep = history.map_or(all.len(), |n| n.min(all.len()));
        Task {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: inner.status.clone(),
            artifacts: if artifacts {
                inner.artifacts.clone()
            } else {
                Vec::new()
            },
            history: all[all.len() - keep..].to_vec(),
            // The kiln runs that carried the task out, for `/v1/runs` and the console.
            metadata: (!inner.runs.is_empty()).then(|| {
                let mut m = serde_json::Map::new();
                m.insert("kilnRuns".into(), serde_json::json!(inner.runs));
                m
            }),
        }
    }

    /// Watches every change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<StreamResponse> {
        self.events.subscribe()
    }

    /// Watches the change counter (a blocking send).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn announce(&self, ev: StreamResponse) {
        let _ = self.events.send(ev);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Moves to `state`, with an agent's `message` when it says why; tells the watchers.
    pub fn set_state(&self, state: TaskState, message: Option<Message>) {
        let st = {
            let mut inner = self.lock();
            if inner.status.state.is_terminal() {
                return;
            }
            inner.status = status(state, message.map(|m| self.stamped(m)));
            inner.updated = now();
            inner.status.clone()
        };
        self.announce_status(st);
    }

    /// Shows what the task works on now (`message`), unless it waits for a person: the
    /// check and the change under one lock, as a tool may ask at the same moment.
    pub fn working_on(&self, message: Message) {
        let st = {
            let mut inner = self.lock();
            let s = inner.status.state;
            if s.is_terminal() || s == TaskState::InputRequired || inner.form.is_some() {
                return;
            }
            inner.status = status(TaskState::Working, Some(self.stamped(message)));
            inner.updated = now();
            inner.status.clone()
        };
        self.announce_status(st);
    }

    fn announce_status(&self, status: TaskStatus) {
        self.announce(StreamResponse::StatusUpdate(StatusUpdate {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata: None,
        }));
    }

    /// `message` with this task's ids on it.
    pub fn stamped(&self, mut message: Message) -> Message {
        message.task_id = Some(self.id.clone());
        message.context_id = Some(self.context_id.clone());
        message
    }

    /// Adds a message to the history (stamped with the task's ids).
    pub fn record(&self, message: Message) {
        let m = self.stamped(message);
        self.lock().history.push(m);
    }

    /// Queues a user's message for the next run; refused past [`MAX_QUEUED`].
    pub fn enqueue(&self, message: Message) -> Result<(), A2aError> {
        let m = self.stamped(message);
        let mut inner = self.lock();
        if inner.status.state.is_terminal() {
            return Err(A2aError::new(
                kiln_a2a::error::ErrorKind::UnsupportedOperation,
                format!(
                    "This operation is not supported: the task is {} (send a new message in its context instead)",
                    inner.status.state.name()
                ),
            ));
        }
        if inner.queued.len() >= MAX_QUEUED {
            return Err(A2aError::new(
                kiln_a2a::error::ErrorKind::UnsupportedOperation,
                format!(
                    "this task has {MAX_QUEUED} messages waiting already: wait for its turn to end"
                ),
            ));
        }
        inner.history.push(m.clone());
        inner.queued.push_back(m);
        Ok(())
    }

    /// The next queued message; when none is left, the task completes (with `answer`, the
    /// last run's, as its status message) in the same step, so no message queued meanwhile is
    /// lost. `None` once the task has ended.
    pub fn next_or_complete(&self, answer: Option<Message>) -> Option<Message> {
        let st = {
            let mut inner = self.lock();
            if inner.status.state.is_terminal() {
                return None;
            }
            if let Some(next) = inner.queued.pop_front() {
                return Some(next);
            }
            inner.status = status(TaskState::Completed, answer.map(|m| self.stamped(m)));
            inner.updated = now();
            inner.status.clone()
        };
        self.announce_status(st);
        None
    }

    /// Adds an artifact and tells the watchers.
    pub fn add_artifact(&self, artifact: Artifact) {
        self.lock().artifacts.push(artifact.clone());
        self.announce(StreamResponse::ArtifactUpdate(kiln_a2a::ArtifactUpdate {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append: false,
            last_chunk: true,
            metadata: None,
        }));
    }

    /// A piece of the answer `run` is writing, as it streams: an artifact chunk for the
    /// watchers (appended to the earlier ones), not kept; the whole answer replaces them when
    /// the run ends.
    pub fn stream_text(&self, run: &str, text: &str, first: bool) {
        self.announce(StreamResponse::ArtifactUpdate(kiln_a2a::ArtifactUpdate {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact: Artifact {
                artifact_id: run.to_string(),
                name: Some("answer".into()),
                description: None,
                parts: vec![kiln_a2a::Part::text(text)],
                metadata: None,
            },
            append: !first,
            last_chunk: false,
            metadata: None,
        }));
    }

    /// The run now in progress.
    pub fn set_run(&self, run: Option<Arc<RunEntry>>) {
        let mut inner = self.lock();
        if let Some(r) = &run {
            inner.runs.push(r.id.clone());
        }
        inner.run = run;
    }

    /// The run in progress.
    pub fn run(&self) -> Option<Arc<RunEntry>> {
        self.lock().run.clone()
    }

    /// The approval the task waits for.
    pub fn asking(&self) -> Option<String> {
        self.lock().asking.clone()
    }

    /// Sets (or clears) the approval the task waits for.
    pub fn set_asking(&self, id: Option<String>) {
        self.lock().asking = id;
    }

    /// Sets (or clears) the tool's form the task waits on.
    pub fn set_form(&self, form: Option<FormWait>) {
        self.lock().form = form;
    }

    /// The schema of the form the task waits on, if it waits on one.
    pub fn form_schema(&self) -> Option<serde_json::Value> {
        self.lock().form.as_ref().map(|f| f.schema.clone())
    }

    /// Hands the answer to the waiting tool; false when no form waits (or its tool gave up).
    pub fn answer_form(&self, answer: serde_json::Value) -> bool {
        self.lock()
            .form
            .take()
            .is_some_and(|f| f.answer.try_send(answer).is_ok())
    }

    /// Cancels the task: its run and its queue. An ended task cannot be.
    pub fn cancel(&self) -> Result<(), A2aError> {
        let run = {
            let mut inner = self.lock();
            if inner.status.state.is_terminal() {
                return Err(A2aError::new(
                    kiln_a2a::error::ErrorKind::TaskNotCancelable,
                    format!(
                        "Task cannot be canceled: it is {}",
                        inner.status.state.name()
                    ),
                ));
            }
            inner.queued.clear();
            inner.run.clone()
        };
        self.cancel.cancel();
        if let Some(run) = run {
            run.cancel.cancel();
        }
        self.set_state(TaskState::Canceled, None);
        Ok(())
    }

    /// Adds a push config, replacing one of the same id.
    pub fn add_push(&self, config: PushConfig, target: PushTarget) -> Result<(), A2aError> {
        let mut inner = self.lock();
        inner.push.retain(|(c, _)| c.id != config.id);
        if inner.push.len() >= MAX_PUSH_CONFIGS {
            return Err(A2aError::invalid_params(
                "params",
                format!("a task takes at most {MAX_PUSH_CONFIGS} push notification configs"),
            ));
        }
        inner.push.push((config, target));
        Ok(())
    }

    /// The push configs.
    pub fn push_configs(&self) -> Vec<(PushConfig, PushTarget)> {
        self.lock().push.clone()
    }

    /// Removes push config `id`; whether there was one.
    pub fn remove_push(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.push.len();
        inner.push.retain(|(c, _)| c.id.as_deref() != Some(id));
        before != inner.push.len()
    }
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(kiln_a2a::now_timestamp()),
    }
}

fn now() -> f64 {
    crate::table::approvals::now_secs()
}

/// Every task of the server, by id.
#[derive(Default)]
pub(crate) struct TaskTable {
    tasks: Mutex<HashMap<String, Arc<A2aTask>>>,
}

impl TaskTable {
    /// Adds a task, forgetting the oldest ended ones past [`KEEP_TASKS`].
    pub fn insert(&self, task: Arc<A2aTask>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if tasks.len() >= KEEP_TASKS {
            let mut ended: Vec<(f64, String)> = tasks
                .values()
                .filter(|t| t.state().is_terminal())
                .map(|t| (t.updated(), t.id.clone()))
                .collect();
            ended.sort_by(|a, b| a.0.total_cmp(&b.0));
            let excess = tasks.len() + 1 - KEEP_TASKS;
            for (_, id) in ended.into_iter().take(excess) {
                tasks.remove(&id);
            }
        }
        tasks.insert(task.id.clone(), task);
    }

    /// Task `id` when `actor` owns it: another actor's is not found.
    pub fn get(&self, id: &str, actor: Option<&str>) -> Result<Arc<A2aTask>, A2aError> {
        let tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks
            .get(id)
            .filter(|t| t.owner.as_deref() == actor)
            .cloned()
            .ok_or_else(|| A2aError::task_not_found(id))
    }

    /// `actor`'s tasks of `agent`, newest status first.
    pub fn list(&self, agent: &str, actor: Option<&str>) -> Vec<Arc<A2aTask>> {
        let tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let mut mine: Vec<(f64, Arc<A2aTask>)> = tasks
            .values()
            .filter(|t| t.owner.as_deref() == actor && t.agent == agent)
            .map(|t| (t.updated(), t.clone()))
            .collect();
        mine.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        mine.into_iter().map(|(_, t)| t).collect()
    }
}
