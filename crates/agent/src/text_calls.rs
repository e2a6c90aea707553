//! The loop's side of tool calls a model wrote as text (`.text_tool_calls(...)`): a reply
//! without structured calls is searched (`parse`), and the calls
//! found become the reply's own, so they are journaled, validated, guarded and answered like
//! any other; a call that cannot be read becomes what the model is told next.

mod call;
pub mod extract;
mod gemma;
mod hermes;
mod json_text;
mod markers;
pub(crate) mod parse;
mod python;

use kiln_core::tool::Tool;
use kiln_providers::{ModelResponse, StopReason, ToolCall};
use kiln_registry::agent_spec::TextCallFormat;
use parse::{Found, Offered, recover};
use std::sync::Arc;

/// Recovers the calls `reply` wrote as text, when `format` allows and it has no structured
/// ones: they go into `reply.tool_calls` (ids `text_ROUND_N`) and the text around them stays
/// its text. Returns what the model must be told when a call could not be read.
pub(super) fn recover_calls(
    reply: &mut ModelResponse,
    format: TextCallFormat,
    offered: &[Arc<Tool>],
    round: u32,
) -> Option<String> {
    if format == TextCallFormat::Off || !reply.tool_calls.is_empty() {
        return None;
    }
    let tools: Vec<Offered> = (offered.iter())
        .map(|t| Offered {
            name: &t.name,
            schema: &t.schema,
        })
        .collect();
    match recover(&reply.text, format, &tools) {
        Found::Nothing => None,
        Found::Malformed(problem) => {
            tracing::warn!("round {round}: a tool call written as text could not be read");
            Some(problem)
        }
        Found::Calls { text, calls } => {
            reply.text = text;
            reply.tool_calls = calls
                .into_iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: format!("text_{round}_{}", i + 1),
                    name: c.name,
                    args: c.args,
                })
                .collect();
            reply.stop = StopReason::ToolUse;
            None
        }
    }
}
