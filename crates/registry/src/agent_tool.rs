//! Agents as tools: an agent listing `"agent:researcher"` in `.tools([...])` is offered a tool
//! `ask_researcher` taking a `prompt`. A call runs the other agent as a run of its own (logged
//! as any run is), within the caller's grants and the other agent's own (their meet), under
//! the caller's deadline and cancellation, at most [`kiln_core::tool::MAX_CALL_DEPTH`] deep.

use crate::agent_spec::AgentSpec;
use crate::native::NativeTool;
use kiln_core::context::CallContext;
use kiln_core::context::runner::AgentCall;
use kiln_core::tool::{FailureKind, MAX_CALL_DEPTH, Tool, ToolFailure};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a run of an agent called as a tool may take when the caller has no deadline.
const AGENT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

pub use crate::agent_spec::{AGENT_PREFIX, named_agent};

/// The tool name `agent` is offered as.
pub fn tool_name(agent: &str) -> String {
    format!("ask_{agent}")
}

/// The tool running `agent`, with `reaches`: the hints of everything its tools reach
/// ([`crate::registry::Registry::agent_reach_hints`]).
pub fn agent_tool(agent: &AgentSpec, reaches: kiln_core::tool::ResolvedHints) -> Option<Arc<Tool>> {
    let name = agent.name.clone();
    let description = match agent.description.as_str() {
        "" => format!("Ask the agent \"{name}\"; its answer is the result"),
        d => format!("{d} (the agent \"{name}\"; its answer is the result)"),
    };
    NativeTool::new(tool_name(&name), move |args: Value, ctx: &CallContext| {
        let runner = ctx.run.agents.as_ref().and_then(std::sync::Weak::upgrade);
        let call = AgentCall {
            agent: name.clone(),
            prompt: args["prompt"].as_str().unwrap_or_default().to_string(),
            grants: ctx.granted.grants.clone(),
            context: ctx.run.context.clone(),
            actor_id: ctx.who.actor_id.clone(),
            deadline: ctx
                .run.deadline
                .unwrap_or_else(|| Instant::now() + AGENT_CALL_TIMEOUT),
            cancel: ctx.run.cancel.clone(),
            depth: ctx.who.depth + 1,
            parent: (!ctx.who.run_id.is_empty()).then(|| ctx.who.run_id.clone()),
            approver: ctx.approval.approver.clone(),
            events: ctx.run.events.clone(),
        };
        let name = name.clone();
        async move {
            if call.depth > MAX_CALL_DEPTH {
                return Err(ToolFailure::visible(
                    FailureKind::Denied,
                    format!("agent \"{name}\" refused: agents calling agents deeper than {MAX_CALL_DEPTH}"),
                ));
            }
            let Some(runner) = runner else {
                return Err(ToolFailure::visible(
                    FailureKind::Runtime,
                    format!("agent \"{name}\" needs a host built with Host::builder() to run"),
                ));
            };
            // The other agent lacking a grant is its run's failure, not the caller's: the
            // model reads it as the tool's error and the caller's run goes on.
            runner.run_agent(call).await.map(Value::String).map_err(|f| {
                match f.kind {
                    FailureKind::Capability => ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("agent \"{name}\" failed: {}", f.message),
                    ),
                    _ => f,
                }
            })
        }
    })
    .description(description)
    .param(
        "prompt",
        "string",
        json!({"desc": "what to ask the agent"}),
    )
    .hints(crate::reach::explicit(reaches))
    .located(agent.loc.clone())
    .into_tool()
    .ok()
    .map(Arc::new)
}

/// The tool name a handoff to `agent` is offered as.
pub fn handoff_name(agent: &str) -> String {
    format!("handoff_to_{agent}")
}

/// The tool handing the conversation to `agent` (`.handoffs([...])`): the run goes on as
/// `agent`'s, with the transcript and `ctx.state` so far.
pub fn handoff_tool(agent: &AgentSpec) -> Option<Arc<Tool>> {
    let name = agent.name.clone();
    let description = match agent.description.as_str() {
        "" => format!("Hand the conversation to the agent \"{name}\""),
        d => format!("Hand the conversation to the agent \"{name}\": {d}"),
    };
    NativeTool::new(
        handoff_name(&name),
        move |_args: Value, _ctx: &CallContext| {
            let said = format!("The conversation is now with the agent \"{name}\".");
            async move { Ok(Value::String(said)) }
        },
    )
    .description(description)
    .param(
        "reason",
        "string",
        json!({"desc": "why it goes there", "optional": true}),
    )
    .located(agent.loc.clone())
    .into_tool()
    .ok()
    .map(Arc::new)
}
