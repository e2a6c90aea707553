//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a call of a tool
//! declared `.task(...)`, from a client that declared the extension, is answered with a task
//! the client polls (`tasks/get`), answers the questions of (`tasks/update`) and may cancel
//! (`tasks/cancel`). The task is the same call as ever (validation, the guard, the sandbox, the
//! run log); only its answer comes later. rmcp's `TaskManager` keeps the tasks' states.

// Sampling and roots are deprecated by SEP-2577 (after 2026-07-28), which still asks for them.
#![allow(deprecated)]

pub mod durable;

use crate::ask::questions::Askable;
use crate::ask::rounds;
use durable::{DurableCall, DurableState, DurableTask, DurableTasks, SharedTasks, TaskOwner};
use kiln_core::context::call_events::{Answer, AskError, ClientAsk};
use kiln_core::error::HostError;
use kiln_core::tool::{FailureKind, ToolOutcome};
use kiln_host::mcp::convert::outcome_to_mcp;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult,
    Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A session id no other session of any process has (durable tasks outlive this one): a
/// task is its actor's and its session's.
pub(crate) fn new_session_id() -> std::sync::Arc<str> {
    std::sync::Arc::from(uuid::Uuid::new_v4().to_string())
}

/// How often a client is told to poll.
const POLL_INTERVAL_MS: u64 = 500;
/// How long a task stays readable at least: a client may come back for a result much later.
const MIN_TTL: Duration = Duration::from_secs(3600);
/// How long `background()` waits for its task to exist (the request side creates it at once).
const HANDOVER: Duration = Duration::from_secs(5);

/// The tasks of one server, shared by every session and stateless request of it: in this
/// process, or (under `kiln serve --restate`) in a durable engine.
#[derive(Clone, Default)]
pub struct Tasks {
    manager: TaskManager,
    durable: Option<Arc<dyn DurableTasks>>,
    /// Who started each task here (actor and session): anyone else finds no such task.
    owners: Arc<Mutex<std::collections::HashMap<String, TaskOwner>>>,
    /// Where the tasks started here are kept for the other servers sharing a database.
    shared: Option<Arc<dyn SharedTasks>>,
}

/// A tool call running in its own tokio task, with the token that cancels it.
pub struct Running {
    /// The call.
    pub call: JoinHandle<Result<ToolOutcome, HostError>>,
    /// Cancels the call (its `CallOptions::cancel`).
    pub cancel: CancellationToken,
    /// Whether the tool has an output schema (the result then carries structured content).
    pub structured: bool,
    /// The tool's own deadline, so the task outlives the call.
    pub timeout: Duration,
    /// Who the call acts for, and in which session: only they see the task.
    pub owner: TaskOwner,
}

impl Tasks {
    /// Tasks that start in `engine` instead of this process (those that start with the call).
    pub fn durable(engine: Arc<dyn DurableTasks>) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            durable: Some(engine),
            owners: Arc::default(),
            shared: None,
        }
    }

    /// Keeps the tasks started here in `shared` too, and answers for the other servers' tasks
    /// from it.
    pub fn share(&mut self, shared: Arc<dyn SharedTasks>) {
        self.shared = Some(shared);
    }

    /// Cancels task `id`, running here, for the server a client asked (`tasks/cancel` through
    /// another server sharing the database, which checked its owner).
    pub fn cancel_here(&self, id: &str) {
        let _ = self.manager.cancel_task(id);
    }

    /// The durable engine, if tasks start there.
    pub fn engine(&self) -> Option<&Arc<dyn DurableTasks>> {
        self.durable.as_ref()
    }

    /// Starts `call` in the durable engine; the answer to send is the new task.
    pub async fn start_durable(
        &self,
        engine: &Arc<dyn DurableTasks>,
        call: DurableCall,
        timeout: Duration,
    ) -> Result<CreateTaskResult, ErrorData> {
        let id = engine.start(call).await.map_err(|e| {
            ErrorData::internal_error(format!("the task could not be started: {e}"), None)
        })?;
        let now = rmcp::task_manager::current_timestamp();
        let task = Task::new(id, TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(ttl(timeout))
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        Ok(CreateTaskResult::new(task))
    }

    /// Makes `running` a task: `link` receives the task's link to its client before the task
    /// is visible (so the handler's next question goes to the task), and the answer to send
    /// is the new task.
    pub fn start(&self, running: Running, link: impl FnOnce(TaskLink)) -> CreateTaskResult {
        let options = TaskOptions::new()
            .with_ttl_ms(ttl(running.timeout))
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        let owner = running.owner.clone();
        let shared = self.shared.clone();
        let task = self.manager.spawn(options, move |ctx| {
            link(TaskLink {
                ctx: ctx.clone(),
                askable: Askable::default(),
                runtime: tokio::runtime::Handle::current(),
            });
            Box::pin(async move {
                let id = ctx.task_id().to_string();
                let exit = settle(running, ctx).await;
                if let Some(shared) = shared {
                    shared.ended(&id, &ended_state(&exit));
                }
                exit
            })
        });
        if let Some(shared) = &self.shared {
            shared.started(&task.task_id, &owner, &task.created_at);
        }
        if let Ok(mut owners) = self.owners.lock() {
            // Tasks the manager has let go of (past their retention) are forgotten here too.
            owners.retain(|id, _| self.manager.get_task(id).is_ok());
            owners.insert(task.task_id.clone(), owner);
        }
        CreateTaskResult::new(task)
    }

    /// `Err` (unknown task, as for one that never was) unless `owner` started local task `id`.
    fn owned(&self, id: &str, owner: &TaskOwner) -> Result<(), ErrorData> {
        let owners = self.owners.lock().map_err(|_| unknown(id))?;
        match owners.get(id) {
            Some(started) if started == owner => Ok(()),
            _ => Err(unknown(id)),
        }
    }

    /// `tasks/get`: the task's state, its questions while it waits for them, its result or
    /// error once it ended.
    pub async fn get(
        &self,
        req: &GetTaskParams,
        owner: &TaskOwner,
    ) -> Result<GetTaskResult, ErrorData> {
        let Some(engine) = self.durable_for(&req.task_id) else {
            if let Some(found) = self.shared_elsewhere(&req.task_id, owner).await? {
                return Ok(GetTaskResult::new(detailed(&req.task_id, found)));
            }
            self.owned(&req.task_id, owner)?;
            return Ok(GetTaskResult::new(self.manager.get_task(&req.task_id)?));
        };
        let task = engine
            .get(&req.task_id, owner)
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?
            .ok_or_else(|| unknown(&req.task_id))?;
        Ok(GetTaskResult::new(detailed(&req.task_id, task)))
    }

    /// `tasks/update`: answers to some or all of the task's questions (others are ignored; a
    /// durable task asks none).
    pub async fn update(&self, req: UpdateTaskParams, owner: &TaskOwner) -> Result<(), ErrorData> {
        let Some(engine) = self.durable_for(&req.task_id) else {
            if self.shared_elsewhere(&req.task_id, owner).await?.is_some() {
                return Err(ErrorData::invalid_params(
                    format!(
                        "task {} runs on another server: answer its questions there",
                        req.task_id
                    ),
                    None,
                ));
            }
            self.owned(&req.task_id, owner)?;
            return self.manager.update_task(&req.task_id, req.input_responses);
        };
        match engine.get(&req.task_id, owner).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(unknown(&req.task_id)),
            Err(e) => Err(ErrorData::internal_error(e, None)),
        }
    }

    /// `tasks/cancel`: the call is cancelled; the task settles as cancelled once its handler
    /// stops (at its next host call or sleep step; a durable one when its step ends).
    pub async fn cancel(&self, req: &CancelTaskParams, owner: &TaskOwner) -> Result<(), ErrorData> {
        let Some(engine) = self.durable_for(&req.task_id) else {
            if let (Some(shared), Err(_)) = (&self.shared, self.owned(&req.task_id, owner)) {
                return match shared.cancel(&req.task_id, owner).await {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(unknown(&req.task_id)),
                    Err(e) => Err(ErrorData::internal_error(e, None)),
                };
            }
            self.owned(&req.task_id, owner)?;
            return self.manager.cancel_task(&req.task_id);
        };
        match engine.cancel(&req.task_id, owner).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(unknown(&req.task_id)),
            Err(e) => Err(ErrorData::internal_error(e, None)),
        }
    }

    /// Task `id` as the shared database keeps it, when it is not one of this process's.
    async fn shared_elsewhere(
        &self,
        id: &str,
        owner: &TaskOwner,
    ) -> Result<Option<DurableTask>, ErrorData> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        if self.manager.get_task(id).is_ok() {
            return Ok(None);
        }
        shared
            .get(id, owner)
            .await
            .map_err(|e| ErrorData::internal_error(e, None))
    }

    fn durable_for(&self, id: &str) -> Option<&Arc<dyn DurableTasks>> {
        self.durable.as_ref().filter(|e| e.owns(id))
    }
}

/// How long a task stays readable: an hour at least, and twice its tool's deadline.
fn ttl(timeout: Duration) -> u64 {
    MIN_TTL.max(timeout * 2).as_millis() as u64
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task: {id}"), None)
}

/// A durable task as `tasks/get` answers it.
fn detailed(id: &str, task: DurableTask) -> DetailedTask {
    let now = rmcp::task_manager::current_timestamp();
    let base = Task::new(id, TaskStatus::Working, task.created_at, now)
        .with_ttl_ms(MIN_TTL.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    let payload = match task.state {
        DurableState::Working => TaskPayload::Working,
        DurableState::Completed(result) => TaskPayload::Completed { result },
        DurableState::Cancelled => TaskPayload::Cancelled,
        DurableState::Failed(message) => {
            let error = serde_json::json!({ "code": -32603, "message": message });
            TaskPayload::Failed {
                error: error.as_object().cloned().unwrap_or_default(),
            }
        }
    };
    DetailedTask::new(base, payload)
}

/// How a task ended, as the shared database keeps it.
fn ended_state(exit: &Result<CallToolResult, TaskExit>) -> DurableState {
    match exit {
        Ok(result) => DurableState::Completed(
            serde_json::to_value(result)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default(),
        ),
        Err(TaskExit::Cancelled) => DurableState::Cancelled,
        Err(TaskExit::Error(e)) => DurableState::Failed(e.message.to_string()),
    }
}

/// Waits for the call (cancelling it when the client cancels the task) and says how the task
/// ended: a tool result (failures the tool reports are results with `isError`), cancelled, or
/// failed where kiln itself could not finish the call (the sandbox stopped a runaway handler,
/// or the host failed).
async fn settle(running: Running, ctx: TaskContext) -> Result<CallToolResult, TaskExit> {
    let Running {
        mut call,
        cancel,
        structured,
        ..
    } = running;
    let done = tokio::select! {
        done = &mut call => done,
        () = ctx.cancelled() => {
            cancel.cancel();
            call.await
        }
    };
    let outcome = match done {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => {
            let message = kiln_core::error::public::scrub(&e.to_string());
            return Err(TaskExit::Error(ErrorData::internal_error(message, None)));
        }
        Err(_) => {
            return Err(TaskExit::Error(ErrorData::internal_error(
                "the call stopped before it finished",
                None,
            )));
        }
    };
    match &outcome.result {
        Err(f) if f.kind == FailureKind::Cancelled => Err(TaskExit::Cancelled),
        Err(f) if f.kind == FailureKind::Limit => Err(TaskExit::Error(ErrorData::internal_error(
            format!("the sandbox stopped the handler: {}", f.message),
            Some(serde_json::json!({ "kind": f.kind.as_str() })),
        ))),
        _ => Ok(outcome_to_mcp(&outcome, structured)),
    }
}

/// How a task's handler reaches its client: each question becomes one of the task's
/// `inputRequests`, answered by `tasks/update`.
pub struct TaskLink {
    ctx: TaskContext,
    askable: Askable,
    runtime: tokio::runtime::Handle,
}

impl TaskLink {
    /// Asks every question at once (so the task shows them all) and waits up to `timeout` for
    /// the answers, in order.
    pub fn ask(
        &self,
        asks: &[(String, ClientAsk)],
        lenient: bool,
        timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        let mut answers: Vec<Option<Answer>> = Vec::with_capacity(asks.len());
        let mut waits = Vec::new();
        for (key, ask) in asks {
            if let Some(why) = self.askable.why_not(ask) {
                if !lenient {
                    return Err(AskError::MissingCapability(ask.capability()));
                }
                answers.push(Some(Answer::Unsupported(why.clone())));
                continue;
            }
            let request = rounds::input_request(ask).map_err(AskError::Refused)?;
            let (ctx, key) = (self.ctx.clone(), key.clone());
            waits.push((answers.len(), ask.clone(), async move {
                ctx.request_input(key, request).await
            }));
            answers.push(None);
        }
        let (tx, rx) = sync_channel(1);
        let (slots, asked, futures): (Vec<_>, Vec<_>, Vec<_>) = unzip3(waits);
        self.runtime.spawn(async move {
            let _ = tx.send(futures_util::future::join_all(futures).await);
        });
        let got = rx.recv_timeout(timeout).map_err(|_| {
            AskError::Refused(format!(
                "the client did not answer within {} s",
                timeout.as_secs()
            ))
        })?;
        for ((slot, ask), value) in slots.into_iter().zip(asked).zip(got) {
            let value = value.map_err(|_| AskError::Refused("the task was cancelled".into()))?;
            let answer = rounds::decode(&ask, &value).map_err(AskError::Refused)?;
            answers[slot] = Some(Answer::Value(answer));
        }
        Ok(answers.into_iter().flatten().collect())
    }
}

fn unzip3<A, B, C>(items: Vec<(A, B, C)>) -> (Vec<A>, Vec<B>, Vec<C>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (a, b, c) in items {
        out.0.push(a);
        out.1.push(b);
        out.2.push(c);
    }
    out
}

/// Where a call that may become a task stands, for its observer: once it is a task, the
/// handler's questions go to the task; before, `background()` asks the request side to make
/// it one.
#[derive(Default)]
pub struct TaskSlot {
    /// Set while the call may still become a task at the handler's `background()`.
    escalate: Mutex<Option<oneshot::Sender<()>>>,
    /// Brings the task's link to the handler's thread once the task exists.
    handover: Mutex<Option<Receiver<TaskLink>>>,
    link: OnceLock<TaskLink>,
    /// What the client declared it can answer (the questions a task may ask).
    askable: OnceLock<Askable>,
}

impl TaskSlot {
    /// Lets the handler's `background()` make the call a task: the request side waits on the
    /// receiver, then creates the task and sends its link through the sender.
    pub fn arm(&self, askable: Askable) -> (oneshot::Receiver<()>, SyncSender<TaskLink>) {
        let (esc_tx, esc_rx) = oneshot::channel();
        let (link_tx, link_rx) = sync_channel(1);
        let _ = self.askable.set(askable);
        if let Ok(mut e) = self.escalate.lock() {
            *e = Some(esc_tx);
        }
        if let Ok(mut h) = self.handover.lock() {
            *h = Some(link_rx);
        }
        (esc_rx, link_tx)
    }

    /// The call runs in a task from its start.
    pub fn set(&self, link: TaskLink, askable: Askable) {
        let _ = self.link.set(TaskLink { askable, ..link });
    }

    /// The task's link, once the call is a task.
    pub fn link(&self) -> Option<&TaskLink> {
        self.link.get()
    }

    /// The handler's `background()`: true once the call is a task.
    pub fn background(&self) -> bool {
        if self.link.get().is_some() {
            return true;
        }
        let Some(escalate) = self.escalate.lock().ok().and_then(|mut e| e.take()) else {
            return false;
        };
        let Some(handover) = self.handover.lock().ok().and_then(|mut h| h.take()) else {
            return false;
        };
        if escalate.send(()).is_err() {
            return false;
        }
        match handover.recv_timeout(HANDOVER) {
            Ok(link) => {
                let askable = self.askable.get().cloned().unwrap_or_default();
                let _ = self.link.set(TaskLink { askable, ..link });
                true
            }
            Err(_) => false,
        }
    }
}
