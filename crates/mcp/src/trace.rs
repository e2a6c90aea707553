//! The span of an MCP request kiln serves, after the MCP semantic conventions: `tools/call
//! {tool}` of kind server, continuing the trace the client put in the request's `_meta`.

use serde_json::{Map, Value};

/// The span of one `tools/call`, a child of the trace in `_meta` (the params' or the
/// request's), else of the HTTP request's span.
pub(crate) fn call_span(
    tool: &str,
    params_meta: Option<&Map<String, Value>>,
    request_meta: &Map<String, Value>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp_call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
    );
    let entry = |key: &str| {
        (params_meta.and_then(|m| m.get(key)))
            .or_else(|| request_meta.get(key))
            .and_then(Value::as_str)
    };
    kiln_otel::context::continue_from(
        &span,
        entry(kiln_otel::context::TRACEPARENT),
        entry(kiln_otel::context::TRACESTATE),
    );
    span
}
