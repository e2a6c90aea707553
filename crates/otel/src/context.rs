//! W3C trace context (`traceparent`, `tracestate`) read into and written from `tracing` spans,
//! so one trace follows a request from a client through kiln to the servers kiln calls.
//!
//! Without an OpenTelemetry layer installed (no export), spans have no trace context: reading
//! gives `None` and continuing does nothing.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header (and `_meta` key) carrying the trace and parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The header (and `_meta` key) carrying vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// The span context a `traceparent` value names (version 00, or a later version read as 00
/// does); `None` for a malformed or all-zero one, which the W3C spec says to ignore.
pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let version = parts.next()?;
    let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8());
    let state = tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(trace_id, span_id, flags, true, state))
}

/// The `traceparent` value of a span context.
pub fn format(cx: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        cx.trace_flags().to_u8()
    )
}

/// Makes `span` a child of the trace a caller sent (a `traceparent` header or `_meta` entry).
/// Call before the span is first entered. A missing or malformed value starts a new trace.
pub fn continue_from(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    if let Some(remote) = traceparent.and_then(|t| parse(t, tracestate)) {
        let parent = opentelemetry::Context::new().with_remote_span_context(remote);
        // Fails only without an OpenTelemetry layer: nothing to continue then.
        let _ = span.set_parent(parent);
    }
}

/// `span`'s own context, when it is being traced.
pub fn span_context(span: &tracing::Span) -> Option<SpanContext> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// The `traceparent` naming `span` as the parent, for a response header or a request kiln
/// sends on.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    span_context(span).map(|sc| format(&sc))
}

/// The trace id of `span` (32 hex digits), for the run log.
pub fn trace_id_of(span: &tracing::Span) -> Option<String> {
    span_context(span).map(|sc| sc.trace_id().to_string())
}

/// Sets a string-array attribute on `span` (a `tracing` field holds one value only), such as
/// `gen_ai.response.finish_reasons`.
pub fn set_string_array(span: &tracing::Span, key: &'static str, values: &[&str]) {
    if span.is_disabled() {
        return;
    }
    let values = values
        .iter()
        .map(|v| opentelemetry::StringValue::from(v.to_string()));
    span.set_attribute(
        key,
        opentelemetry::Value::Array(opentelemetry::Array::String(values.collect())),
    );
}

/// The `traceparent` and `tracestate` entries naming the current span, for an MCP request's
/// `_meta` (the MCP semantic conventions carry trace context there).
pub fn current_entries() -> Vec<(&'static str, String)> {
    let Some(sc) = span_context(&tracing::Span::current()) else {
        return Vec::new();
    };
    let mut out = vec![(TRACEPARENT, format(&sc))];
    let state = sc.trace_state().header();
    if !state.is_empty() {
        out.push((TRACESTATE, state));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_read_as_the_w3c_spec_says() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sc = parse(tp, Some("vendor=x")).expect("valid");
        assert_eq!(format(&sc), tp);
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(sc.trace_state().header(), "vendor=x");
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "garbage",
        ] {
            assert!(parse(bad, None).is_none(), "{bad}");
        }
        // A later version may add fields: read as 00.
        assert!(
            parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz",
                None
            )
            .is_some()
        );
    }
}
