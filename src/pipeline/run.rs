//! Running a pipeline: every node whose values are ready starts (at most `max_parallel` at
//! once), each value is computed once, a failed node fails the nodes that need it while
//! independent branches finish. Each node call takes the normal path: a tool's (or a nested
//! pipeline's) `Tool::execute` (validation, guard, rate limit, sandbox, deadline), an agent's
//! `Host::run` (its own run log), all under the pipeline's grants.

use super::spec::{Node, PipelineSpec, Target};
use crate::Host;
use crate::agent::{RunErrorKind, RunOptions, ToolCallRecord};
use crate::capability::Grants;
use crate::context::CallContext;
use crate::tool::{FailureKind, ToolFailure, ToolOutcome};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// It computed its value.
    Ok,
    /// Its call failed.
    Failed,
    /// It never ran: a value it needs failed.
    Skipped,
}

/// One node of a run: what it called with, what came back, when.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    /// The value it computes.
    pub name: String,
    /// What it called (`tool`, `agent:NAME`, `pipeline:NAME`).
    pub call: String,
    /// How it ended.
    pub status: NodeStatus,
    /// The arguments (or, for an agent, the prompt) it was called with.
    pub args: Value,
    /// Its value when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Why it failed or was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolFailure>,
    /// When it started, in milliseconds since the run began.
    pub started_ms: f64,
    /// How long it ran, in milliseconds.
    pub duration_ms: f64,
}

/// What a pipeline run did.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineReport {
    /// The pipeline.
    pub pipeline: String,
    /// The run's id.
    pub run_id: String,
    /// The inputs given.
    pub inputs: Value,
    /// The output values that were computed.
    pub outputs: Map<String, Value>,
    /// Every node, in definition order.
    pub nodes: Vec<NodeReport>,
    /// Why the run never started (invalid inputs, a missing capability), if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<ToolFailure>,
    /// Wall time of the run in milliseconds.
    pub duration_ms: f64,
}

impl PipelineReport {
    /// A run that never started.
    pub fn refused(spec: &PipelineSpec, run_id: &str, inputs: Value, why: ToolFailure) -> Self {
        PipelineReport {
            pipeline: spec.name.clone(),
            run_id: run_id.to_string(),
            inputs,
            outputs: Map::new(),
            nodes: Vec::new(),
            refused: Some(why),
            duration_ms: 0.0,
        }
    }

    /// True when it started and every node computed its value.
    pub fn is_ok(&self) -> bool {
        self.refused.is_none() && self.nodes.iter().all(|n| n.status == NodeStatus::Ok)
    }

    /// `node "x" (tool) failed: why` for each failed node, in definition order.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self.refused.iter().map(|f| f.message.clone()).collect();
        out.extend(
            self.nodes
                .iter()
                .filter(|n| n.status == NodeStatus::Failed)
                .map(|n| {
                    let why = n.error.as_ref().map_or("", |e| e.message.as_str());
                    format!("node \"{}\" ({}) failed: {why}", n.name, n.call)
                }),
        );
        out
    }

    /// The run as a tool result: the single output's value, or an object of the outputs; a
    /// failure names the failing nodes.
    pub fn result(&self) -> Result<Value, ToolFailure> {
        if let Some(f) = &self.refused {
            return Err(f.clone());
        }
        if !self.is_ok() {
            let first = self
                .nodes
                .iter()
                .find_map(|n| n.error.as_ref().filter(|_| n.status == NodeStatus::Failed));
            let kind = match first.map(|f| f.kind) {
                Some(k @ (FailureKind::Cancelled | FailureKind::Deadline)) => k,
                _ => FailureKind::ToolError,
            };
            let message = format!(
                "pipeline \"{}\": {}",
                self.pipeline,
                self.failures().join("; ")
            );
            return Err(ToolFailure::visible(kind, message));
        }
        match (self.outputs.len(), self.outputs.values().next()) {
            (1, Some(v)) => Ok(v.clone()),
            _ => Ok(Value::Object(self.outputs.clone())),
        }
    }

    /// One line per node (`✓ name = call 1.2 ms`, `✗ ... failed: why`, `- ... not run: ...`),
    /// failure details included: for people, never for a model. Empty for a refused run.
    pub fn node_lines(&self) -> Vec<String> {
        // A refused run has no nodes; `failures()` names the refusal.
        self.nodes
            .iter()
            .map(|n| {
                let why = n.error.as_ref().map_or(String::new(), |e| match &e.detail {
                    Some(d) => format!("{} ({d})", e.message),
                    None => e.message.clone(),
                });
                match n.status {
                    NodeStatus::Ok => format!("✓ {} = {} {:.1} ms", n.name, n.call, n.duration_ms),
                    NodeStatus::Failed => format!("✗ {} = {} failed: {why}", n.name, n.call),
                    NodeStatus::Skipped => format!("- {} = {} {why}", n.name, n.call),
                }
            })
            .collect()
    }

    /// The outputs as text: a lone string output as is, one value as JSON, several as
    /// `name: json` lines; a failed run shows the outputs it has by name, so a missing one is not mistaken.
    pub fn outputs_text(&self) -> String {
        let lone = if self.is_ok() { self.outputs.len() } else { 0 };
        match (lone, self.outputs.values().next()) {
            (1, Some(Value::String(s))) => s.clone(),
            (1, Some(v)) => serde_json::to_string_pretty(v).unwrap_or_default(),
            _ => self
                .outputs
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The nodes that ran, as tool-call records for the run log.
    pub fn tool_calls(&self) -> Vec<ToolCallRecord> {
        self.nodes
            .iter()
            .filter(|n| n.status != NodeStatus::Skipped)
            .map(|n| {
                let outcome = ToolOutcome {
                    result: match (&n.value, &n.error) {
                        (_, Some(e)) => Err(e.clone()),
                        (v, None) => Ok(v.clone().unwrap_or(Value::Null)),
                    },
                    duration: Duration::from_secs_f64(n.duration_ms / 1000.0),
                    attempts: 1,
                };
                ToolCallRecord::new(1, &n.name, &n.call, n.args.clone(), &outcome, String::new())
            })
            .collect()
    }
}

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

/// Runs `spec` on `inputs` (already validated) in the caller's context. `host` runs agent
/// nodes; without one they fail.
pub async fn run(
    host: Option<&Host>,
    spec: &Arc<PipelineSpec>,
    inputs: Value,
    caller: &CallContext,
) -> PipelineReport {
    let started = Instant::now();
    let mut ctx = caller.clone();
    // A run of its own (an agent's call of a pipeline is logged apart from the agent's run).
    ctx.run_id = crate::context::new_run_id();
    ctx.grants = pipeline_grants(&caller.grants, spec);
    ctx.agent = Some(format!("pipeline:{}", spec.name));
    let deadline = started + spec.timeout;
    ctx.deadline = Some(caller.deadline.map_or(deadline, |d| d.min(deadline)));
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
                        host,
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
        run_id: ctx.run_id.clone(),
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
    host: Option<&Host>,
    node: Node,
    values: Value,
    ctx: CallContext,
    permits: Arc<Semaphore>,
    run_started: Instant,
) -> NodeReport {
    let _permit = permits.acquire_owned().await.ok();
    let begun = Instant::now();
    let deadline = ctx
        .deadline
        .unwrap_or(begun + super::spec::DEFAULT_PIPELINE_TIMEOUT);
    let (args, result) = match &node.target {
        Target::Tool(name) | Target::Pipeline(name) => {
            call_tool(name, &node, values, ctx, deadline).await
        }
        Target::Agent(name) => call_agent(host, name, &node, values, ctx, deadline).await,
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
    let Some(tool) = ctx.registry.as_ref().and_then(|r| r.reach(name)) else {
        let f = ToolFailure::visible(
            FailureKind::UnknownTool,
            format!("\"{name}\" is no longer loaded"),
        );
        return (values, Err(f));
    };
    let node = node.clone();
    let ran =
        tokio::task::spawn_blocking(move || match map_values(&node, values.clone(), deadline) {
            Err(f) => (values, Err(f)),
            Ok(args) => {
                let result = tool.execute(&args, &ctx).result;
                (args, result)
            }
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
    host: Option<&Host>,
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
    let Some(host) = host else {
        let f = ToolFailure::visible(
            FailureKind::Runtime,
            format!(
                "agent node \"{}\" needs a host built with Host::builder()",
                node.name
            ),
        );
        return (args, Err(f));
    };
    let cancel = CancellationToken::new();
    // The run's cancel flag is an atomic that scripts poll; carry it over to the agent's token.
    let watcher = ctx.cancel.clone().map(|flag| {
        let token = cancel.clone();
        tokio::spawn(async move {
            while !flag.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            token.cancel();
        })
    });
    let opts = RunOptions {
        grants: Some(ctx.grants.clone()),
        context: ctx.context.clone(),
        actor_id: ctx.actor_id.clone(),
        timeout: Some(deadline.saturating_duration_since(Instant::now())),
        cancel,
        ..RunOptions::default()
    };
    let result = host.run(name, &prompt, opts).await;
    if let Some(w) = watcher {
        w.abort();
    }
    let result = match result {
        Ok(report) => Ok(Value::String(report.answer)),
        Err(e) => Err(match e.kind {
            RunErrorKind::Capability(m) => ToolFailure::visible(FailureKind::Capability, m),
            RunErrorKind::Cancelled => {
                ToolFailure::visible(FailureKind::Cancelled, "the agent run was cancelled")
            }
            RunErrorKind::Deadline => {
                ToolFailure::visible(FailureKind::Deadline, "the agent run passed its deadline")
            }
            other => ToolFailure::sanitized(
                FailureKind::ToolError,
                format!("agent \"{name}\" failed: {other}"),
            ),
        }),
    };
    (args, result)
}
