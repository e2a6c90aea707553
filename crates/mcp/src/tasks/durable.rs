//! Tasks that outlive the process that created them: under `kiln serve --restate` a tool call
//! run as a task is a durable invocation, so any worker answers `tasks/get` for it and it
//! survives the worker that started it. The MCP server knows only this seam; kiln-serve
//! implements it over Restate's ingress.

use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// A boxed future of the seam's answers.
pub type DurableFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// The call a durable task makes: what a worker needs to make it again.
#[derive(Debug, Clone)]
pub struct DurableCall {
    /// The tool.
    pub tool: String,
    /// Its arguments (validated by the worker, as any call's).
    pub args: Value,
    /// Who it acts for.
    pub actor: Option<String>,
    /// Who may see the task: its actor, in the session that started it.
    pub owner: TaskOwner,
    /// The capabilities it was granted here (the worker cuts them to its own ceiling again).
    pub caps: Vec<String>,
    /// Which of them need approval.
    pub ask: Vec<String>,
}

/// Who may see a task: the actor its call acts for and, when it was started in a session
/// (`initialize` on stdio or streamable HTTP), that session. A stateless request (2026-07-28)
/// has no session, so its tasks are bound to the actor alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOwner {
    /// The actor (`None`: the request named none).
    pub actor: Option<String>,
    /// The session's id, unguessable and unique across processes.
    pub session: Option<String>,
}

/// Where a durable task stands.
#[derive(Debug, Clone, PartialEq)]
pub enum DurableState {
    /// Still running (or waiting for a worker).
    Working,
    /// Ended with this `CallToolResult`.
    Completed(Map<String, Value>),
    /// Ended without a result: kiln or the engine could not finish it.
    Failed(String),
    /// Cancelled.
    Cancelled,
}

/// A durable task as its engine knows it.
#[derive(Debug, Clone)]
pub struct DurableTask {
    /// How it stands.
    pub state: DurableState,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

/// An engine that keeps tasks durably.
pub trait DurableTasks: Send + Sync {
    /// Starts `call` as a durable task; its id.
    fn start(&self, call: DurableCall) -> DurableFuture<'_, String>;
    /// Task `id`, or `None` when the engine has no such task (or another owner's).
    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a TaskOwner,
    ) -> DurableFuture<'a, Option<DurableTask>>;
    /// Cancels task `id`; false when there is no such task (or another owner's).
    fn cancel<'a>(&'a self, id: &'a str, owner: &'a TaskOwner) -> DurableFuture<'a, bool>;
    /// True for ids this engine gives (so the server knows where to look).
    fn owns(&self, id: &str) -> bool;
}

/// Tasks seen from every server sharing a database (`kiln serve` on PostgreSQL): a task runs in
/// the process that started it, and its state is kept where every server reads it, so
/// `tasks/get` and `tasks/cancel` work through any of them (a stateless client may reach
/// any server behind a load balancer).
pub trait SharedTasks: Send + Sync {
    /// Task `id` started in this process for `owner` at `created_at` (RFC 3339).
    fn started(&self, id: &str, owner: &TaskOwner, created_at: &str);
    /// Task `id`, started here, ended so.
    fn ended(&self, id: &str, state: &DurableState);
    /// Task `id` as kept, or `None` when there is no such task (or another owner's).
    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a TaskOwner,
    ) -> DurableFuture<'a, Option<DurableTask>>;
    /// Asks the process running task `id` to cancel it; false when there is no such task
    /// running (or another owner's).
    fn cancel<'a>(&'a self, id: &'a str, owner: &'a TaskOwner) -> DurableFuture<'a, bool>;
}
