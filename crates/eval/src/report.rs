//! What an eval run found, as `--json` writes it (and `docs/eval-report.schema.json`
//! describes it): each run of each case on each model with every evaluator's verdict, a
//! summary per model, and the comparison with a baseline when one was given.

use kiln_registry::eval_spec::{Case, EvalTarget, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the report's layout (`schema_version`); a baseline of another version is
/// refused with a clear error.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole eval run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// This run's id (`ev_...`): the run log tags every run of it with this id
    /// (`kiln logs --eval ID`), and `kiln eval --rescore ID` reads it back.
    pub id: String,
    /// The eval's name.
    pub eval: String,
    /// What its cases ran.
    pub target: Option<EvalTarget>,
    /// When it started and finished (RFC 3339, UTC).
    pub started_at: String,
    /// When it finished.
    pub finished_at: String,
    /// The models, in matrix order (`provider:model`, or the target's own as `default`).
    pub models: Vec<String>,
    /// Runs per case and model.
    pub repeat: u32,
    /// The evaluators' names, in order.
    pub evaluators: Vec<String>,
    /// The cases, in order.
    pub cases: Vec<Case>,
    /// Every run: by model, then case, then repeat.
    pub results: Vec<CaseRun>,
    /// One row per model.
    pub summary: Vec<ModelSummary>,
    /// One row per case and model: its repeats' pass rate, pass@k and pass^k.
    #[serde(default)]
    pub per_case: Vec<CaseSummary>,
    /// Why the eval stopped before every run was made (a budget), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Re-scored from the recorded runs of this eval run (`--rescore`), without a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescored_from: Option<String>,
    /// The comparison with `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

impl Report {
    /// What it ran, as reports show it: `agent support`, or `-`.
    pub fn target_label(&self) -> String {
        (self.target.as_ref())
            .map(|t| format!("{} {}", t.kind(), t.name()))
            .unwrap_or_else(|| "-".into())
    }

    /// `2 models × 10 cases × 3 repeats`.
    pub fn shape(&self) -> String {
        format!(
            "{} × {} × {}",
            counted(self.models.len(), "model"),
            counted(self.cases.len(), "case"),
            counted(self.repeat as usize, "repeat")
        )
    }
}

/// `1 case`, `3 cases`.
pub fn counted(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// One run of one case on one model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// The case's name.
    pub case: String,
    /// The model (as in [`Report::models`]).
    pub model: String,
    /// Which repeat, from 0.
    pub repeat: u32,
    /// Whether every evaluator passed and the run did not fail.
    pub passed: bool,
    /// The mean of the evaluators' scores (0 for a failed run).
    pub score: f64,
    /// What the run did.
    pub run: RunRecord,
    /// Each evaluator's verdict, in the evaluators' order.
    pub verdicts: Vec<NamedVerdict>,
    /// Tokens and dollars the judges spent scoring this run.
    pub judge_usage: Usage,
    /// Whether the model's answers were replayed from an earlier run (`--cache`).
    #[serde(default)]
    pub cached: bool,
}

/// An evaluator's verdict with its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedVerdict {
    /// The evaluator's name.
    pub evaluator: String,
    /// Its verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Tokens and dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Dollars, when the model has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Adds `other` to this (a cost known on either side is kept).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// Input and output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// What one run did, as evaluators and reports see it (a custom evaluator's `run`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id in the run log (none for a tool's or pipeline's call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The final answer (a tool's result as text).
    pub answer: String,
    /// The typed output (an agent's `.output`, a tool's structured result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The tool calls in order, code mode's nested calls under their program.
    pub tool_calls: Vec<CallRecord>,
    /// Model requests made.
    pub rounds: u32,
    /// Tokens and dollars of the run itself (not its judges).
    pub usage: Usage,
    /// How long the run took.
    pub duration_ms: f64,
    /// How the run failed, if it did (`kind: message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's trace id, when traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// A hash of what the agent sends besides the conversation (system prompt, provider,
    /// model, its tools' schemas): `--cache` replays only a run of the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
}

/// One tool call of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Value,
    /// Whether it failed.
    pub is_error: bool,
    /// What it returned (or its error), shortened for reports.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub result: Value,
    /// The calls a program made (code mode), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<CallRecord>,
}

/// One model's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// The model.
    pub model: String,
    /// Runs made.
    pub runs: u32,
    /// Runs that passed.
    pub passed: u32,
    /// `passed / runs`.
    pub pass_rate: f64,
    /// The share of cases with at least one passing run among their `repeat` (pass@k, k =
    /// repeat).
    pub pass_at_k: f64,
    /// The share of cases whose every run passed (pass^k, k = repeat).
    pub pass_all_k: f64,
    /// The mean score over its runs.
    pub mean_score: f64,
    /// Tokens and dollars of its runs.
    pub usage: Usage,
    /// Tokens and dollars its runs' judges spent.
    pub judge_usage: Usage,
    /// Median run duration.
    pub p50_ms: f64,
    /// 95th percentile run duration.
    pub p95_ms: f64,
}

/// One case on one model, over its repeats.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// The case.
    pub case: String,
    /// The model.
    pub model: String,
    /// Runs made.
    pub runs: u32,
    /// Runs that passed.
    pub passed: u32,
    /// `passed / runs`.
    pub pass_rate: f64,
    /// 1 when at least one run passed (pass@k, k = its runs), else 0.
    pub pass_at_k: f64,
    /// 1 when every run passed (pass^k), else 0.
    pub pass_all_k: f64,
    /// The mean score of its runs.
    pub mean_score: f64,
}

/// A run compared with a baseline, case by case (per model and case, over its repeats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name.
    pub baseline: String,
    /// The baseline's run id.
    pub baseline_id: String,
    /// The largest pass-rate drop of a case that is not a regression.
    pub tolerance: f64,
    /// Each case and model present in both, in the report's order.
    pub cases: Vec<CaseDelta>,
    /// How many cases got worse beyond the tolerance.
    pub regressions: u32,
    /// How many got better beyond it.
    pub fixes: u32,
}

/// One case on one model against the baseline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseDelta {
    /// The case.
    pub case: String,
    /// The model.
    pub model: String,
    /// Its pass rate over the repeats in the baseline.
    pub before_pass_rate: f64,
    /// And now.
    pub after_pass_rate: f64,
    /// Mean score then and now.
    pub score_delta: f64,
    /// Dollars then and now (when both are priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_delta: Option<f64>,
    /// `regression`, `fix` or `same`.
    pub change: Change,
}

/// How a case moved against the baseline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Its pass rate fell by more than the tolerance.
    Regression,
    /// Its pass rate rose by more than the tolerance.
    Fix,
    /// Neither.
    #[default]
    Same,
}
