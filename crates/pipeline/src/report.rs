//! What a pipeline run reports: each node's status, value or failure and timing, the outputs,
//! and the run's result as a tool returns it.

use kiln_core::context::runner::{FinishedCall, FinishedRun, RunKind};
use kiln_core::failure::{FailureKind, ToolFailure, ToolOutcome};
use serde::Serialize;
use serde_json::{Map, Value};

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
    pub fn refused(pipeline: &str, run_id: &str, inputs: Value, why: ToolFailure) -> Self {
        PipelineReport {
            pipeline: pipeline.to_string(),
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

    /// The run as the run log keeps it: a run of `pipeline:NAME` whose calls are the nodes
    /// that ran.
    pub fn finished(&self) -> FinishedRun {
        let calls = self
            .nodes
            .iter()
            .filter(|n| n.status != NodeStatus::Skipped)
            .map(|n| FinishedCall {
                id: n.name.clone(),
                tool: n.call.clone(),
                args: n.args.clone(),
                outcome: ToolOutcome {
                    result: match (&n.value, &n.error) {
                        (_, Some(e)) => Err(e.clone()),
                        (v, None) => Ok(v.clone().unwrap_or(Value::Null)),
                    },
                    duration: std::time::Duration::from_secs_f64(n.duration_ms / 1000.0),
                    attempts: 1,
                },
            })
            .collect();
        FinishedRun {
            kind: RunKind::Pipeline(self.pipeline.clone()),
            run_id: self.run_id.clone(),
            input: self.inputs.clone(),
            calls,
            result: self.result(),
        }
    }
}
