//! A run's trace spans, after the OpenTelemetry GenAI semantic conventions: `invoke_agent
//! {agent}` around the run and `chat {model}` around each model request (the tool calls'
//! `execute_tool` spans are kiln-core's). Attributes that are known only later are declared
//! empty and recorded when known.

use super::report::{RunErrorKind, RunReport};
use crate::options::RunOptions;
use kiln_providers::{ModelResponse, StopReason};
use tracing::field::Empty;

/// The span of a whole run.
pub(super) fn run_span(agent: &str, opts: &RunOptions) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.provider.name = Empty,
        gen_ai.request.model = Empty,
        gen_ai.conversation.id = opts.session.as_deref(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        kiln.run_id = Empty,
        kiln.parent_run = opts.parent.as_deref(),
        kiln.rounds = Empty,
        kiln.tool_calls = Empty,
    )
}

/// Records what the run is once it is set up: its id, provider and model.
pub(super) fn record_setup(span: &tracing::Span, report: &RunReport) {
    span.record("kiln.run_id", report.run_id.as_str());
    span.record("gen_ai.provider.name", provider_name(&report.provider));
    span.record("gen_ai.request.model", report.model.as_str());
}

/// Records how the run ended.
pub(super) fn record_end(span: &tracing::Span, report: &RunReport, error: Option<&RunErrorKind>) {
    record_setup(span, report);
    span.record("gen_ai.usage.input_tokens", report.usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", report.usage.output_tokens);
    span.record("kiln.rounds", report.rounds);
    span.record("kiln.tool_calls", report.tool_calls.len());
    if let Some(kind) = error {
        fail(span, kind);
    }
}

/// The span of one model request.
pub(super) fn chat_span(provider: &str, model: &str, round: u32) -> tracing::Span {
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        kiln.usage.reasoning_tokens = Empty,
        error.type = Empty,
        kiln.round = round,
    )
}

/// Records a model reply on its span: usage, why it stopped and, when a fallback chain chose
/// the model, the provider and model that answered.
pub(super) fn record_reply(span: &tracing::Span, reply: &ModelResponse) {
    span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
    if reply.usage.reasoning_tokens > 0 {
        let reasoning = reply.usage.reasoning_tokens;
        span.record("kiln.usage.reasoning_tokens", reasoning);
    }
    if let Some(by) = &reply.answered_by {
        span.record("gen_ai.provider.name", provider_name(&by.provider));
        span.record("gen_ai.response.model", by.model.as_str());
    }
    let reason = finish_reason(&reply.stop);
    kiln_otel::context::set_string_array(span, "gen_ai.response.finish_reasons", &[reason]);
}

/// Marks a span failed with the run error's kind.
pub(super) fn fail(span: &tracing::Span, kind: &RunErrorKind) {
    let name = kind.name();
    span.record("error.type", name);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", kind.to_string().as_str());
}

/// `gen_ai.provider.name`: the conventions' names where one exists.
fn provider_name(provider: &str) -> &str {
    match provider {
        "script" | "planner" => "kiln.script",
        "openai-responses" => "openai",
        "azure" | "azure-responses" => "azure.ai.openai",
        "gemini" => "gcp.gemini",
        "bedrock" => "aws.bedrock",
        other => other,
    }
}

/// A finish reason in the words of OpenAI's API, which the conventions' examples use.
fn finish_reason(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::StopSequence => "stop",
        StopReason::Other(other) => other,
    }
}

#[cfg(test)]
mod provider_name_tests {
    #[test]
    fn the_new_wires_are_named_as_the_genai_conventions_name_their_providers() {
        assert_eq!(super::provider_name("openai-responses"), "openai");
        assert_eq!(super::provider_name("azure"), "azure.ai.openai");
        assert_eq!(super::provider_name("azure-responses"), "azure.ai.openai");
        assert_eq!(super::provider_name("anthropic"), "anthropic");
    }
}
