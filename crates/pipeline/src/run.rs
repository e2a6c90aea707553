//! Running a pipeline: every node whose values are ready starts (at most `max_parallel` at
//! once), each value is computed once, a failed node fails the nodes that need it while
//! independent branches finish. Each node call takes the normal path: a tool's (or a nested
//! pipeline's) `Tool::execute` (validation, guard, rate limit, sandbox, deadline), an agent's
//! agent run through the [`AgentRunner`] (its own run log), all under the pipeline's grants.

use crate::report::{NodeReport, NodeStatus, PipelineReport};
use crate::spec::{Node, PipelineSpec, Target};
use futures_util::stream::{FuturesUnordered, StreamExt};
use kiln_core::capability::Grants;
use kiln_core::context::runner::{AgentCall, AgentRunner};
use kiln_core::context::{CallContext, Caller};
use kiln_core::tool::{FailureKind, ToolFailure};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tracing::Instrument;

/// The caller's grants narrowed to the capabilities the pipeline declares.
fn pipeline_grants(caller: &Grants, spec: &PipelineSpec) -> Grants {
    let mut grants = Grants::default();
    for g in caller.iter() {
        if spec.requires.iter().any(|r| r.name == g.cap.name) {
            grants.add(g.cap.clone(), g.mode);
        }
    }
    grants
}

/// Runs `spec` on `inputs` (already validated) in the caller's context. `runner` runs agent
/// nodes; without one they fail.
pub async fn run(
    runner: Option<&dyn AgentRunner>,
    spec: &Arc<PipelineSpec>,
    inputs: Value,
    caller: &CallContext,
) -> PipelineReport {
    // A run of its own (an agent's call of a pipeline is logged apart from the agent's run).
    let run_id = kiln_core::context::new_run_id();
    let span = crate::telemetry::pipeline_span(&spec.name, &run_id);
    let report = run_in_span(runner, spec, inputs, caller, run_id)
        .instrument(span.clone())
        .await;
    crate::telemetry::record_pipeline(&span, &report);
    report
}

async fn run_in_span(
    runner: Option<&dyn AgentRunner>,
    spec: &Arc<PipelineSpec>,
    inputs: Value,
    caller: &CallContext,
    run_id: String,
) -> PipelineReport {
    let started = Instant::now();
    let mut ctx = caller.clone();
    ctx.who.run_id = run_id;
    ctx.granted.grants = pipeline_grants(&caller.granted.grants, spec);
    ctx.who.caller = Caller::Pipeline(spec.name.clone());
    let deadline = started + spec.timeout;
    ctx.run.deadline = Some(caller.run.deadline.map_or(deadline, |d| d.min(deadline)));
    let mut values: HashMap<String, Value> = inputs
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let mut reports: HashMap<String, NodeReport> = HashMap::new();
    let mut launched: HashSet<String> = HashSet::new();
    let permits = Arc::new(Semaphore::new(spec.max_parallel.max(1)));
    let mut running = FuturesUnordered::new();
    loop {
        // Launch what is ready and skip what can no longer run, until nothing changes.
        let mut changed = true;
        while changed {
            changed = false;
            for node in &spec.nodes {
                if launched.contains(&node.name) {
                    continue;
                }
                let failed_dep = node.deps.iter().find(|d| {
                    reports
                        .get(d.as_str())
                        .is_some_and(|r| r.status != NodeStatus::Ok)
                });
                if let Some(dep) = failed_dep {
                    reports.insert(node.name.clone(), skipped(node, dep));
                } else if node
                    .deps
                    .iter()
                    .all(|d| spec.is_input(d) || values.contains_key(d))
                {
                    let args: Map<String, Value> = node
                        .deps
                        .iter()
                        .map(|d| (d.clone(), values.get(d).cloned().unwrap_or(Value::Null)))
                        .collect();
                    running.push(run_node(
                        runner,
                        node.clone(),
                        Value::Object(args),
                        ctx.clone(),
                        permits.clone(),
                        started,
                    ));
                } else {
                    continue;
                }
                launched.insert(node.name.clone());
                changed = true;
            }
        }
        let Some(report) = running.next().await else {
            break;
        };
        if let (NodeStatus::Ok, Some(v)) = (report.status, &report.value) {
            values.insert(report.name.clone(), v.clone());
        }
        reports.insert(report.name.clone(), report);
    }
    let outputs = spec
        .outputs
        .iter()
        .filter_map(|o| values.get(&o.name).map(|v| (o.name.clone(), v.clone())))
        .collect();
    PipelineReport {
        pipeline: spec.name.clone(),
        run_id: ctx.who.run_id.clone(),
        inputs,
        outputs,
        nodes: spec
            .nodes
            .iter()
            .filter_map(|n| reports.remove(&n.name))
            .collect(),
        refused: None,
        duration_ms: ms(started.elapsed()),
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

fn skipped(node: &Node, dep: &str) -> NodeReport {
    NodeReport {
        name: node.name.clone(),
        call: node.target.to_string(),
        status: NodeStatus::Skipped,
        args: Value::Null,
        value: None,
        error: Some(ToolFailure::visible(
            FailureKind::ToolError,
            format!("not run: the value \"{dep}\" it needs failed"),
        )),
        started_ms: 0.0,
        duration_ms: 0.0,
    }
}

async fn run_node(
    runner: Option<&dyn AgentRunner>,
    node: Node,
    values: Value,
    ctx: CallContext,
    permits: Arc<Semaphore>,
    run_started: Instant,
) -> NodeReport {
    let span = crate::telemetry::node_span(&node.name, &node.target.to_string());
    let report = run_node_in_span(runner, node, values, ctx, permits, run_started)
        .instrument(span.clone())
        .await;
    if let Some(e) = &report.error {
        kiln_core::telemetry::fail(&span, e.kind.as_str());
    }
    report
}

async fn run_node_in_span(
    runner: Option<&dyn AgentRunner>,
    node: Node,
    values: Value,
    ctx: CallContext,
    permits: Arc<Semaphore>,
    run_started: Instant,
) -> NodeReport {
    let _permit = permits.acquire_owned().await.ok();
    let begun = Instant::now();
    let deadline = ctx
        .run
        .deadline
        .unwrap_or(begun + crate::spec::DEFAULT_PIPELINE_TIMEOUT);
    let (args, result) = match &node.target {
        Target::Tool(name) | Target::Pipeline(name) => {
            call_tool(name, &node, values, ctx, deadline).await
        }
        Target::Agent(name) => call_agent(runner, name, &node, values, ctx, deadline).await,
    };
    let (value, error) = match result {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    NodeReport {
        name: node.name.clone(),
        call: node.target.to_string(),
        status: if error.is_none() {
            NodeStatus::Ok
        } else {
            NodeStatus::Failed
        },
        args,
        value,
        error,
        started_ms: ms(begun.duration_since(run_started)),
        duration_ms: ms(begun.elapsed()),
    }
}

/// The node's arguments: its closure's result, or the values it names.
fn map_values(node: &Node, values: Value, deadline: Instant) -> Result<Value, ToolFailure> {
    match &node.mapper {
        Some(m) => m.map(&values, deadline),
        None => Ok(values),
    }
}

fn runtime_failure(e: impl std::fmt::Display) -> ToolFailure {
    ToolFailure::sanitized(
        FailureKind::Runtime,
        format!("pipeline node task failed: {e}"),
    )
}

async fn call_tool(
    name: &str,
    node: &Node,
    values: Value,
    ctx: CallContext,
    deadline: Instant,
) -> (Value, Result<Value, ToolFailure>) {
    let Some(tool) = ctx.run.registry.as_ref().and_then(|r| r.reach(name)) else {
        let f = ToolFailure::visible(
            FailureKind::UnknownTool,
            format!("\"{name}\" is no longer loaded"),
        );
        return (values, Err(f));
    };
    let node = node.clone();
    // The tool's span is a child of the node's, on the blocking thread too.
    let span = tracing::Span::current();
    let ran = tokio::task::spawn_blocking(move || {
        span.in_scope(|| match map_values(&node, values.clone(), deadline) {
            Err(f) => (values, Err(f)),
            Ok(args) => {
                let result = tool.execute(&args, &ctx).result;
                (args, result)
            }
        })
    })
    .await;
    ran.unwrap_or_else(|e| (Value::Null, Err(runtime_failure(e))))
}

/// The prompt of an agent node without a closure: a lone string as is, else `name: value` lines.
fn render_prompt(values: &Value) -> String {
    let Some(map) = values.as_object() else {
        return values.to_string();
    };
    if let (1, Some(Value::String(s))) = (map.len(), map.values().next()) {
        return s.clone();
    }
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call_agent(
    runner: Option<&dyn AgentRunner>,
    name: &str,
    node: &Node,
    values: Value,
    ctx: CallContext,
    deadline: Instant,
) -> (Value, Result<Value, ToolFailure>) {
    let prompt = match &node.mapper {
        None => render_prompt(&values),
        Some(_) => {
            let n = node.clone();
            let v = values.clone();
            match tokio::task::spawn_blocking(move || map_values(&n, v, deadline)).await {
                Ok(Ok(Value::String(s))) => s,
                Ok(Ok(other)) => render_prompt(&other),
                Ok(Err(f)) => return (values, Err(f)),
                Err(e) => return (values, Err(runtime_failure(e))),
            }
        }
    };
    let args = Value::String(prompt.clone());
    let Some(runner) = runner else {
        let f = ToolFailure::visible(
            FailureKind::Runtime,
            format!(
                "agent node \"{}\" needs a host built with Host::builder()",
                node.name
            ),
        );
        return (args, Err(f));
    };
    let call = AgentCall {
        agent: name.to_string(),
        prompt,
        grants: ctx.granted.grants.clone(),
        context: ctx.run.context.clone(),
        actor_id: ctx.who.actor_id.clone(),
        deadline,
        cancel: ctx.run.cancel.clone(),
        depth: ctx.who.depth,
        parent: (!ctx.who.run_id.is_empty()).then(|| ctx.who.run_id.clone()),
        approver: ctx.approval.approver.clone(),
        events: ctx.run.events.clone(),
    };
    let result = runner.run_agent(call).await.map(Value::String);
    (args, result)
}
