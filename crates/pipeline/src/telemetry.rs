//! The spans of a pipeline run and of its nodes, named after the OpenTelemetry GenAI
//! conventions as the core's tool spans are.

/// The span of a pipeline run: `invoke_workflow {pipeline}`.
pub fn pipeline_span(pipeline: &str, run_id: &str) -> tracing::Span {
    tracing::info_span!(
        "invoke_workflow",
        otel.name = %format_args!("invoke_workflow {pipeline}"),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        gen_ai.operation.name = "invoke_workflow",
        gen_ai.workflow.name = pipeline,
        error.type = tracing::field::Empty,
        kiln.run_id = run_id,
        kiln.nodes = tracing::field::Empty,
    )
}

/// Records how a pipeline run ended: a refusal or a failed node fails it.
pub fn record_pipeline(span: &tracing::Span, report: &crate::report::PipelineReport) {
    span.record("kiln.nodes", report.nodes.len());
    if let Some(f) = &report.refused {
        kiln_core::telemetry::fail(span, f.kind.as_str());
    } else if let Some(f) = report.nodes.iter().find_map(|n| n.error.as_ref()) {
        kiln_core::telemetry::fail(span, f.kind.as_str());
    }
}

/// The span of one pipeline node (the conventions have none; its call's own span is its
/// child): `node {name}`.
pub fn node_span(node: &str, call: &str) -> tracing::Span {
    tracing::info_span!(
        "pipeline_node",
        otel.name = %format_args!("node {node}"),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        error.type = tracing::field::Empty,
        kiln.node = node,
        kiln.node.call = call,
    )
}
