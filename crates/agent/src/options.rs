//! How to run an agent: what the caller sets for one run (overrides, grants, context,
//! deadline, cancellation, history, state, recorder, session, run id).

pub mod steer;

use crate::connect::ProviderOverrides;
use crate::event::Observer;
use kiln_core::capability::Grants;
use kiln_core::context::CallerScope;
use kiln_providers::Message;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How to run an agent.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Provider, model, base URL overrides.
    pub overrides: ProviderOverrides,
    /// What the door and the request allow (`--caps`, a token's ceiling, a request's caps);
    /// the run gets its meet with the agent's own grants, so it can only narrow them.
    pub grants: Option<Grants>,
    /// Application context (`ctx.context`).
    pub context: serde_json::Map<String, Value>,
    /// The actor (`ctx.actor_id`).
    pub actor_id: Option<String>,
    /// Overrides the agent's `max_iterations`.
    pub max_iterations: Option<u32>,
    /// Stream replies.
    pub stream: bool,
    /// Deadline of the whole run.
    pub timeout: Option<Duration>,
    /// Cancels the run (Ctrl-C).
    pub cancel: CancellationToken,
    /// Live events.
    pub observer: Option<Observer>,
    /// Earlier messages of the conversation.
    pub history: Vec<Message>,
    /// Images and files attached to the run's new user message (the prompt).
    pub attachments: Vec<kiln_core::model::Attachment>,
    /// Per-run state to continue from.
    pub state: Option<Arc<Mutex<Value>>>,
    /// Where progress is recorded (run log, session), step by step.
    pub recorder: Option<Arc<dyn crate::Recorder>>,
    /// The session the run log saves this run under, when the host has a database and no
    /// `recorder` is given (continue it by passing its messages as `history` and its `state`).
    pub session: Option<String>,
    /// The run's id (`ctx.run_id`); default: a fresh one. A durable run passes its invocation
    /// id, so the id, and the idempotency keys derived from it, survive a resume elsewhere.
    pub run_id: Option<String>,
    /// This run's budget, within the agent's own (`kiln ask --budget`, a request's `budget`).
    pub budget: Option<kiln_registry::contract::Budget>,
    /// Who approves the run's needs-approval grants and policy questions instead of the terminal (a
    /// door's person: `kiln serve` asks over HTTP).
    pub approver: Option<Arc<dyn kiln_core::context::Approver>>,
    /// How deep in agents calling agents this run is (0 for a door's run).
    pub depth: u32,
    /// The run this one was started by (an agent calling it as a tool, a pipeline), for the
    /// run log.
    pub parent: Option<String>,
    /// Tools the caller declares and runs itself (a Responses client's function tools): offered
    /// to the model beside the agent's own; when the model calls one, the run runs the agent's
    /// calls of that reply, then stops with the caller's in
    /// [`RunReport::pending_calls`](crate::RunReport::pending_calls). The caller continues the
    /// conversation with their results as the history's last message and an empty prompt.
    pub client_tools: Vec<kiln_providers::ToolDef>,
    /// The events of the tool call this run is nested in (an agent called as a tool): its own
    /// tools' progress and events also go there, so they reach the outer caller's door.
    pub tool_events: Option<Arc<kiln_core::context::call_events::CallEvents>>,
    /// What a person adds to the run while it runs: delivered before its next model request
    /// ([`crate::steer`]); closed when the run ends.
    pub steering: Option<Arc<crate::steer::Steering>>,
    /// The eval run this run belongs to (`kiln eval`): the run log tags it, `kiln logs --eval
    /// ID` lists it.
    pub eval_id: Option<String>,
}

impl RunOptions {
    /// The options every call and run share, as the context takes them.
    pub fn scope(&self) -> CallerScope<'_> {
        CallerScope {
            context: &self.context,
            actor_id: self.actor_id.as_deref(),
            timeout: self.timeout,
            cancel: Some(&self.cancel),
            state: self.state.as_ref(),
        }
    }
}
