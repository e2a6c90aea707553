//! What a run did: messages, tool calls with their results, usage and how it ended.

pub(crate) mod contract;

pub(crate) mod call_outcome;

use kiln_providers::{AnsweredBy, Message, ProviderError, StopReason, Usage};
use serde::Serialize;
use serde_json::Value;

/// One executed (or refused) tool call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRecord {
    /// The model round (1-based).
    pub round: u32,
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them (shared with the transcript's call).
    pub args: std::sync::Arc<Value>,
    /// How it ended (with detail: this is for people and logs).
    pub outcome: crate::CallOutcome,
    /// True when the model was told of a failure.
    pub is_error: bool,
    /// Milliseconds spent.
    pub duration_ms: f64,
    /// Which version of the tool's script ran it (a hash of the file).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub script_version: String,
    /// The calls it made, in order (a code-mode program's); their ids are `ID/1`, `ID/2`, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<ToolCallRecord>,
    /// What it told its caller while it ran: progress and emitted events (the first 64, the
    /// latest last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<kiln_core::context::call_events::ToolNote>,
}

impl ToolCallRecord {
    /// The record of one call and its outcome.
    pub fn new(
        round: u32,
        id: &str,
        name: &str,
        args: std::sync::Arc<Value>,
        outcome: &kiln_core::tool::ToolOutcome,
        script_version: String,
    ) -> Self {
        ToolCallRecord {
            round,
            id: id.to_string(),
            name: name.to_string(),
            args,
            outcome: crate::CallOutcome::of(outcome),
            is_error: !outcome.is_ok(),
            duration_ms: outcome.duration.as_secs_f64() * 1000.0,
            script_version,
            nested: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The record with what the tool told its caller while it ran.
    pub fn with_notes(mut self, notes: Vec<kiln_core::context::call_events::ToolNote>) -> Self {
        self.notes = notes;
        self
    }

    /// The record with the calls the tool made inside it (a code-mode program's), numbered
    /// under its id: `ID/1`, `ID/2`, ...
    pub fn with_nested(mut self, nested: Vec<kiln_core::context::NestedCall>) -> Self {
        self.nested = nested
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let id = format!("{}/{}", self.id, i + 1);
                ToolCallRecord::new(
                    self.round,
                    &id,
                    &n.tool,
                    n.args.into(),
                    &n.outcome,
                    String::new(),
                )
            })
            .collect();
        self
    }
}

/// The record of a run, also carried by its errors.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Run id.
    pub run_id: String,
    /// Agent name.
    pub agent: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// The conversation, the prompt included.
    pub messages: Vec<Message>,
    /// Every tool call in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Tokens summed over the run.
    pub usage: Usage,
    /// Model requests made.
    pub rounds: u32,
    /// The provider and model that answered each model request, in order (with fallback
    /// models, not always the run's own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answered_by: Vec<AnsweredBy>,
    /// How the last model reply stopped, if there was one.
    pub stop_reason: Option<StopReason>,
    /// The final answer text.
    pub answer: String,
    /// Planner mode: `{thought, action, result}` per step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<serde_json::Value>,
    /// The error that ended the run, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run was cancelled (Ctrl-C or the caller), not failed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// Who the run acted for (`ctx.actor_id`: a token's actor, `mcp:CLIENT`, `--actor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// The final answer as JSON, for an agent with `.output(schema)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// The agents the conversation was handed to, in order (`agent` is the last).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<String>,
    /// What the run cost, from the price of its model (`.price(...)`); `None`: no price known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The run that started this one (an agent calling it as a tool, a pipeline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The OpenTelemetry trace the run is part of (32 hex digits), when traces are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The eval run this run belongs to (`RunOptions::eval_id`), which the run log tags it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_id: Option<String>,
    /// Calls of the caller's own tools (`RunOptions::client_tools`) the model made last: the
    /// run stopped for the caller to run them and continue with their results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_calls: Vec<kiln_providers::ToolCall>,
}

impl RunReport {
    /// A fresh report for a run of `agent` starting from `messages`.
    pub fn new(agent: &str, messages: Vec<Message>) -> Self {
        RunReport {
            run_id: kiln_core::context::new_run_id(),
            agent: agent.to_string(),
            provider: String::new(),
            model: String::new(),
            messages,
            tool_calls: Vec::new(),
            usage: Usage::default(),
            rounds: 0,
            answered_by: Vec::new(),
            stop_reason: None,
            answer: String::new(),
            steps: Vec::new(),
            error: None,
            cancelled: false,
            actor: None,
            output: None,
            handoffs: Vec::new(),
            cost_usd: None,
            parent: None,
            trace_id: None,
            eval_id: None,
            pending_calls: Vec::new(),
        }
    }
}

/// How a run failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RunErrorKind {
    /// The model request failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A tool needs a capability the agent does not hold; the run stops.
    #[error("CapabilityError: {0}")]
    Capability(String),
    /// The model kept calling tools past the limit.
    #[error("ToolLoopError: the model asked for tools in more than {0} rounds (max_iterations)")]
    ToolLoop(u32),
    /// The model kept sending invalid arguments to one tool.
    #[error("the model sent invalid arguments to tool \"{tool}\" {count} times; giving up")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// How many times.
        count: u32,
    },
    /// Planner mode: the model's reply held no single JSON object.
    #[error(transparent)]
    JsonParse(#[from] crate::text_calls::extract::JsonParseError),
    /// Planner mode: the plan named an unknown tool or was not a plan.
    #[error("InvalidPlanError: {0}")]
    InvalidPlan(String),
    /// Planner mode: no tool returned `status: "done"` within `max_steps`.
    #[error("MaxStepsExceeded: no tool returned status \"done\" within {0} steps")]
    MaxSteps(u32),
    /// Ctrl-C or the caller cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The run's deadline passed.
    #[error("the run's deadline passed")]
    Deadline,
    /// A completed step could not be recorded (run log, session).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A durable run's journal failed or held a result this kiln cannot read.
    #[error("JournalError: {0}")]
    Journal(String),
    /// The final answer did not match the agent's `.output(schema)`, repairs included.
    #[error("OutputError: the final answer does not match the output schema after {attempts} attempts:\n{}", violations.iter().map(|v| format!("- {v}")).collect::<Vec<_>>().join("\n"))]
    Output {
        /// Answers the model gave that did not match.
        attempts: u32,
        /// Every violation of the last one.
        violations: Vec<String>,
    },
    /// A run's limit was reached: its transcript grew past `--max-transcript-bytes` (which
    /// limit, what it allows, what the run reached).
    #[error("LimitError: {0}")]
    Limit(String),
    /// A limit of the run's budget was reached (which, what it allows, what was spent).
    #[error("BudgetError: {0}")]
    Budget(String),
}

impl RunErrorKind {
    /// A stable name for the kind (`provider`, `tool_loop`, `deadline`, ...), for tests,
    /// metrics and API answers.
    pub fn name(&self) -> &'static str {
        match self {
            RunErrorKind::Provider(_) => "provider",
            RunErrorKind::Capability(_) => "capability",
            RunErrorKind::ToolLoop(_) => "tool_loop",
            RunErrorKind::InvalidArguments { .. } => "invalid_arguments",
            RunErrorKind::JsonParse(_) => "json_parse",
            RunErrorKind::InvalidPlan(_) => "invalid_plan",
            RunErrorKind::MaxSteps(_) => "max_steps",
            RunErrorKind::Cancelled => "cancelled",
            RunErrorKind::Deadline => "deadline",
            RunErrorKind::Record(_) => "record",
            RunErrorKind::Journal(_) => "journal",
            RunErrorKind::Output { .. } => "output",
            RunErrorKind::Budget(_) => "budget",
            RunErrorKind::Limit(_) => "limit",
        }
    }
}

/// A failed run with everything it did up to the failure.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind}")]
pub struct RunError {
    /// What went wrong.
    pub kind: RunErrorKind,
    /// The transcript so far.
    pub report: Box<RunReport>,
}

/// A write to the run's record failed. The run stops: it never goes on unrecorded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the run log could not record the run's {what}: {message}")]
pub struct RecordError {
    /// What was being recorded (`start`, `step`, `end`).
    pub what: &'static str,
    /// Why it failed.
    pub message: String,
}
