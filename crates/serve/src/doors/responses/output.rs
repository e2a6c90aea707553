//! Response objects as the Responses API returns them: the run's new messages as output items
//! (the agent's text as `message` items, kiln's own tool calls as `mcp_call` items of server
//! `kiln`, the client's function calls as `function_call` items), its usage and status, and
//! every field the request set, repeated.

use crate::error::error_kind;
use crate::running::Shape;
use kiln_agent::{RunError, RunErrorKind, RunReport, ToolCallRecord};
use kiln_providers::{Message, StopReason, ToolCall, Usage};
use serde_json::{Value, json};

/// The `server_label` of kiln's own tools in `mcp_call` items.
pub(crate) const SERVER_LABEL: &str = "kiln";

/// How a response ended.
pub(crate) struct Ending<'a> {
    /// `completed`, `incomplete`, `failed`, `cancelled`, `in_progress`.
    pub status: &'static str,
    /// Tokens, once known.
    pub usage: Option<&'a Usage>,
    /// `{code, message}` of a failed one.
    pub error: Value,
    /// Why an incomplete one stopped.
    pub incomplete: Option<&'static str>,
}

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Shape {
    /// The Response object with `output` as it ended (or as it goes, `in_progress`).
    pub fn object(&self, output: Vec<Value>, end: &Ending<'_>) -> Value {
        let e = &self.echo;
        let done = !matches!(end.status, "in_progress" | "queued");
        let mut object = json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": if done { Some(now()) } else { None },
            "status": end.status,
            "incomplete_details": end.incomplete.map(|reason| json!({"reason": reason})),
            "model": self.agent,
            "previous_response_id": self.previous,
            "instructions": e.instructions,
            "output": output,
            "error": end.error,
            "tools": e.tools,
            "tool_choice": e.tool_choice,
            "truncation": "disabled",
            "parallel_tool_calls": e.parallel_tool_calls,
            "text": {"format": {"type": "text"}},
            "top_p": e.top_p.unwrap_or(1.0),
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "top_logprobs": 0,
            "temperature": e.temperature.unwrap_or(1.0),
            "reasoning": null,
            // Zeros until the run ends: both specs want the field, OpenAI's never null.
            "usage": usage_json(end.usage.unwrap_or(&Usage::default())),
            "max_output_tokens": e.max_output_tokens,
            "max_tool_calls": null,
            "store": self.store,
            "background": false,
            "service_tier": "default",
            "metadata": e.metadata,
            "safety_identifier": null,
            "prompt_cache_key": null,
            "kiln": {"run_id": self.run_id},
        });
        if let Some(user) = &e.user {
            object["user"] = json!(user);
        }
        object
    }

    /// The id of the message item of round `round`.
    pub fn message_id(&self, round: u32) -> String {
        format!("msg_{}_{round}", self.run_id)
    }
}

/// Usage in the Responses shape.
pub(crate) fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

/// An assistant `message` item.
pub(crate) fn message_item(id: &str, text: &str, status: &str) -> Value {
    let content = if status == "in_progress" {
        json!([])
    } else {
        json!([text_part(text)])
    };
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

/// An `output_text` content part.
pub(crate) fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// A client's function call (`arguments` as JSON text).
pub(crate) fn function_call_item(call: &ToolCall, status: &str, arguments: &str) -> Value {
    json!({
        "type": "function_call",
        "id": format!("fc_{}", call.id),
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    })
}

/// A call's arguments as JSON text.
pub(crate) fn arguments_text(call: &ToolCall) -> String {
    call.args.to_value().to_string()
}

/// kiln's own call that ran: its output, or its error as the caller may see it.
pub(crate) fn mcp_item(record: &ToolCallRecord) -> Value {
    let (output, error, status) = match (record.outcome.result(), record.outcome.error()) {
        (Some(Value::String(s)), _) => (Some(s.clone()), Value::Null, "completed"),
        (Some(v), _) => (Some(v.to_string()), Value::Null, "completed"),
        (None, Some(e)) => (
            None,
            json!({
                "type": "tool_execution_error",
                "message": kiln_core::error::public::scrub(&e.message),
            }),
            "failed",
        ),
        (None, None) => (None, Value::Null, "failed"),
    };
    json!({
        "type": "mcp_call",
        "id": format!("mcp_{}", record.id),
        "server_label": SERVER_LABEL,
        "name": record.name,
        "arguments": record.args.to_string(),
        "output": output,
        "error": error,
        "status": status,
        "approval_request_id": null,
    })
}

/// kiln's own call as it starts.
pub(crate) fn mcp_started(id: &str, name: &str, args: &Value) -> Value {
    json!({
        "type": "mcp_call",
        "id": format!("mcp_{id}"),
        "server_label": SERVER_LABEL,
        "name": name,
        "arguments": args.to_string(),
        "output": null,
        "error": null,
        "status": "in_progress",
        "approval_request_id": null,
    })
}

/// The output items of the response's messages in its run's transcript.
pub(crate) fn items(shape: &Shape, report: &RunReport) -> Vec<Value> {
    let mut out = Vec::new();
    let mut round = 0;
    for m in report.messages.iter().skip(shape.from) {
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = m
        else {
            continue;
        };
        round += 1;
        if !content.is_empty() {
            out.push(message_item(&shape.message_id(round), content, "completed"));
        }
        for call in tool_calls {
            if report.pending_calls.iter().any(|p| p.id == call.id) {
                out.push(function_call_item(call, "completed", &arguments_text(call)));
            } else if let Some(record) = report.tool_calls.iter().find(|r| r.id == call.id) {
                out.push(mcp_item(record));
            }
        }
    }
    out
}

/// How a run's end reads in a Response: status, error and why it is incomplete.
pub(crate) fn ending(result: &Result<RunReport, RunError>) -> Ending<'_> {
    match result {
        Ok(report) => Ending {
            status: if report.stop_reason == Some(StopReason::MaxTokens) {
                "incomplete"
            } else {
                "completed"
            },
            usage: Some(&report.usage),
            error: Value::Null,
            incomplete: (report.stop_reason == Some(StopReason::MaxTokens))
                .then_some("max_output_tokens"),
        },
        Err(e) => Ending {
            status: if matches!(e.kind, RunErrorKind::Cancelled) {
                "cancelled"
            } else {
                "failed"
            },
            usage: Some(&e.report.usage),
            error: if matches!(e.kind, RunErrorKind::Cancelled) {
                Value::Null
            } else {
                json!({
                    "code": error_kind(e),
                    "message": kiln_core::error::public::scrub(&e.to_string()),
                })
            },
            incomplete: None,
        },
    }
}

/// The report of a run's end, whichever way it ended.
pub(crate) fn report_of(result: &Result<RunReport, RunError>) -> &RunReport {
    match result {
        Ok(r) => r,
        Err(e) => &e.report,
    }
}
