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
/// [`record_outcome`]; `mounted` when the tool is a mounted MCP server's.
pub fn tool_span(
    tool: &str,
    description: &str,
    call_id: Option<&str>,
    args: &serde_json::Value,
    mounted: bool,
) -> tracing::Span {
    // A mounted MCP server's tool runs elsewhere; kiln's own run in this process.
    let kind = match mounted {
        true => "extension",
        false => "function",
    };
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.type = kind,
        gen_ai.tool.description = description,
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
        Err(f) => fail(span, f.kind.as_str()),
    }
}

/// Marks a span failed with a failure kind.
pub fn fail(span: &tracing::Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", kind);
}

/// The span of a wait for a person's approval (how long the person took).
pub fn approval_span(capability: &str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        "approval",
        otel.name = %format_args!("approval {capability}"),
        otel.kind = "internal",
        kiln.approval.capability = capability,
        gen_ai.tool.name = tool,
        kiln.approval.granted = tracing::field::Empty,
    )
}

/// Records a person's answer (or why none came) on an approval's span.
pub fn record_approval(span: &tracing::Span, answer: &Result<bool, String>) {
    span.record("kiln.approval.granted", matches!(answer, Ok(true)));
}

/// The span of a wait for a rate limit's slot (only when the limit says to wait).
pub fn rate_limit_span(tool: &str) -> tracing::Span {
    tracing::info_span!(
        "rate_limit_wait",
        otel.name = %format_args!("rate_limit_wait {tool}"),
        otel.kind = "internal",
        gen_ai.tool.name = tool,
    )
}
