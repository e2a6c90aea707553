//! What kiln's spans say, after the OpenTelemetry GenAI semantic conventions: the span a tool
//! call runs in (`execute_tool {tool}`), and whether arguments and results go into spans.
//! The spans are `tracing` spans; kiln-otel exports them when asked.

use std::sync::atomic::{AtomicBool, Ordering};

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans carry tool arguments and results (opt-in: they may hold personal data).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Turns the capture of tool arguments and results on or off for the whole process.
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// The span of one tool call: `execute_tool {tool}`, its outcome recorded by
/// [`record_outcome`].
pub fn tool_span(
    tool: &crate::tool::Tool,
    call_id: Option<&str>,
    args: &serde_json::Value,
) -> tracing::Span {
    // A mounted MCP server's tool runs elsewhere; kiln's own run in this process.
    let kind = match tool.name.contains(crate::mount_spec::SEPARATOR) {
        true => "extension",
        false => "function",
    };
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", tool.name),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool.name,
        gen_ai.tool.type = kind,
        gen_ai.tool.description = %tool.description,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        error.type = tracing::field::Empty,
        kiln.attempts = tracing::field::Empty,
    );
    if capture_content() && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", args.to_string());
    }
    span
}

/// Records how a call ended on its span: the failure kind as `error.type` and an error status.
pub fn record_outcome(span: &tracing::Span, outcome: &crate::failure::ToolOutcome) {
    if span.is_disabled() {
        return;
    }
    span.record("kiln.attempts", outcome.attempts);
    match &outcome.result {
        Ok(v) => {
            if capture_content() {
                span.record("gen_ai.tool.call.result", v.to_string());
            }
        }
        Err(f) => {
            span.record("error.type", f.kind.as_str());
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", f.kind.as_str());
        }
    }
}
