//! One `tools/call` of a tool declared `.task(...)` from a client that declared the tasks
//! extension: it becomes a task at once, or (`#{ start: "background" }`) it is answered in the
//! request as any call until its handler calls `background()`, and becomes a task there, so
//! it can gather its answers through input-required rounds first.

use crate::ask::questions::Askable;
use crate::notify::CallNotifier;
use crate::tasks::durable::{DurableCall, TaskOwner};
use crate::tasks::{Running, Tasks};
use kiln_core::capability::GrantMode;
use kiln_core::error::HostError;
use kiln_core::tool::{TaskMode, Tool, ToolOutcome};
use kiln_host::Host;
use kiln_host::api::CallOptions;
use rmcp::RoleServer;
use rmcp::model::CreateTaskResult;
use rmcp::service::RequestContext;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How the call was answered.
pub enum Ran {
    /// In the request, as any call (the handler finished, or stopped for questions, before it
    /// asked to go on in the background).
    Answered(Result<ToolOutcome, HostError>),
    /// With a task the client polls.
    Task(CreateTaskResult),
    /// With an error: the call's own task ended before it did (a panic).
    Crashed(rmcp::ErrorData),
}

/// A call that may become a task.
pub struct TaskCall {
    /// The host that runs it.
    pub host: Arc<Host>,
    /// The tool called.
    pub tool: Arc<Tool>,
    /// Its arguments.
    pub args: Value,
    /// The call's options; its cancellation is replaced by one the task owns (the request
    /// ends when the task is answered, the call does not).
    pub opts: CallOptions,
    /// How the tool runs as a task.
    pub mode: TaskMode,
    /// Who may see the task: the call's actor, in the session that made it.
    pub owner: TaskOwner,
}

impl TaskCall {
    /// Runs the call: as a task from its start, or in the request until `background()`.
    pub async fn run(
        self,
        tasks: &Tasks,
        notifier: &mut CallNotifier,
        cx: &RequestContext<RoleServer>,
    ) -> Ran {
        let askable = Askable::of(cx);
        let cancel = CancellationToken::new();
        let TaskCall {
            host,
            tool,
            args,
            mut opts,
            mode,
            owner,
        } = self;
        opts.cancel = Some(cancel.clone());
        let structured = tool.meta.output.is_some();
        let timeout = tool.timeout;
        let running = |call| Running {
            call,
            cancel: cancel.clone(),
            structured,
            timeout,
            owner: owner.clone(),
        };
        let observer = notifier.observer.clone();
        if let Some(engine) = tasks.engine().filter(|_| !mode.at_background) {
            // Nothing runs here: a worker of the engine makes the call.
            let grants = opts.grants.clone().unwrap_or_default();
            let call = DurableCall {
                tool: tool.name.clone(),
                args,
                actor: opts.actor_id.clone(),
                owner,
                caps: grants.iter().map(|g| g.cap.to_string()).collect(),
                ask: grants
                    .iter()
                    .filter(|g| g.mode == GrantMode::NeedsApproval)
                    .map(|g| g.cap.to_string())
                    .collect(),
            };
            return match tasks.start_durable(engine, call, timeout).await {
                Ok(task) => Ran::Task(task),
                Err(e) => Ran::Crashed(e),
            };
        }
        if !mode.at_background {
            // The link is set before the call starts, so every question goes to the task.
            let started = tokio::sync::oneshot::channel::<()>();
            let call = tokio::spawn(async move {
                let _ = started.1.await;
                host.call_tool(&tool, args, opts).await
            });
            let go = started.0;
            let task = tasks.start(running(call), |link| {
                observer.task.set(link, askable);
                let _ = go.send(());
            });
            return Ran::Task(task);
        }
        let (escalated, handover) = observer.task.arm(askable);
        let mut call = tokio::spawn(async move { host.call_tool(&tool, args, opts).await });
        // Until it is a task, the request's cancellation is the call's.
        let request = cx.ct.clone();
        let forward = cancel.clone();
        let watch = tokio::spawn(async move {
            request.cancelled().await;
            forward.cancel();
        });
        let first = notifier
            .run(cx, async {
                tokio::select! {
                    done = &mut call => Some(done),
                    Ok(()) = escalated => None,
                }
            })
            .await;
        watch.abort();
        match first {
            Some(Ok(done)) => Ran::Answered(done),
            Some(Err(_)) => Ran::Crashed(rmcp::ErrorData::internal_error(
                "the call stopped before it finished",
                None,
            )),
            None => Ran::Task(tasks.start(running(call), |link| {
                let _ = handover.send(link);
            })),
        }
    }
}
