//! Evals as scripts declare them (`eval("name").agent("support").case(#{...})...`): what is
//! run (an agent, a tool or a pipeline), on which cases, over which models, and the
//! evaluators that score each run. `kiln-eval` runs them; the script layer builds them.

use kiln_core::error::SourceLoc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// One declared eval.
#[derive(Clone, Debug)]
pub struct EvalSpec {
    /// Its name (`kiln eval NAME`).
    pub name: String,
    /// What it checks, for reports.
    pub description: Option<String>,
    /// What each case runs.
    pub target: EvalTarget,
    /// The cases, in order: the script's own, then each cases file's.
    pub cases: Vec<Case>,
    /// The evaluators, in order; each scores every run.
    pub evaluators: Vec<Evaluator>,
    /// Models to run every case on (`provider:model`); empty: the target's own.
    pub models: Vec<String>,
    /// Runs per case and model (`--repeat` overrides it).
    pub repeat: Option<u32>,
    /// Runs at once (`--concurrency` overrides it).
    pub concurrency: Option<usize>,
    /// The cases files it reads (canonical paths), so an edit to one re-runs the eval.
    pub case_files: Vec<std::path::PathBuf>,
    /// Where it is declared.
    pub loc: SourceLoc,
}

/// What an eval's cases run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum EvalTarget {
    /// An agent, given the case's input as its prompt.
    Agent(String),
    /// A tool, given the case's input as its arguments.
    Tool(String),
    /// A pipeline, given the case's input as its inputs.
    Pipeline(String),
}

impl EvalTarget {
    /// The target's name.
    pub fn name(&self) -> &str {
        match self {
            EvalTarget::Agent(n) | EvalTarget::Tool(n) | EvalTarget::Pipeline(n) => n,
        }
    }

    /// `agent`, `tool` or `pipeline`.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalTarget::Agent(_) => "agent",
            EvalTarget::Tool(_) => "tool",
            EvalTarget::Pipeline(_) => "pipeline",
        }
    }
}

/// One case of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// Its name, unique within the eval.
    pub name: String,
    /// What the target is given: an agent's prompt (a string), a tool's or pipeline's
    /// arguments (a map).
    pub input: Value,
    /// What a right answer is, for the evaluators that compare with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// Anything else the case carries (tags, sources), for custom evaluators and reports.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// Where it is written (the script, or a line of a cases file).
    #[serde(skip)]
    pub loc: SourceLoc,
}

/// An evaluator with its name (shown in reports) and where it is declared.
#[derive(Clone, Debug)]
pub struct Evaluator {
    /// Its name: the built-in's (`answer_contains`) or the one given.
    pub name: String,
    /// What it checks.
    pub check: Check,
    /// Where it is declared.
    pub loc: SourceLoc,
}

/// What an evaluator checks.
#[derive(Clone, Debug)]
pub enum Check {
    /// The answer equals this (None: the case's `expected`).
    AnswerEquals(Option<Value>),
    /// The answer contains this text (None: the case's `expected`), ignoring case.
    AnswerContains(Option<String>),
    /// The answer matches this regular expression.
    AnswerMatches(String),
    /// The typed output equals this (None: the case's `expected`).
    OutputEquals(Option<Value>),
    /// The typed output is valid against this JSON Schema.
    OutputMatches(Value),
    /// A tool was called (code mode's nested calls included), with arguments containing
    /// `args` when given (a string in it matches as `*` glob).
    Called {
        /// The tool's name.
        tool: String,
        /// What its arguments must contain.
        args: Option<Value>,
    },
    /// These tools were called in this order (others may come between).
    CalledInOrder(Vec<String>),
    /// At most `max` tool calls (of `tool`, when given).
    AtMostCalls {
        /// Only calls of this tool count.
        tool: Option<String>,
        /// The most allowed.
        max: u64,
    },
    /// The run took at most this long.
    WithinDuration(Duration),
    /// The run used at most this many tokens (input and output).
    WithinTokens(u64),
    /// The run cost at most this many dollars.
    WithinCost(f64),
    /// No tool call failed.
    NoToolError,
    /// A script's closure `|c, run| ...` (the case, the run).
    Custom(Arc<dyn CaseCheck>),
    /// A model grades the run against a rubric.
    Judge(JudgeSpec),
}

/// A model-graded evaluator.
#[derive(Clone, Debug, PartialEq)]
pub struct JudgeSpec {
    /// What a good answer is, in words.
    pub rubric: String,
    /// The judge (`provider:model`).
    pub model: String,
    /// Repairs of a malformed verdict before the evaluator fails.
    pub retries: u32,
    /// Where the judge's requests go instead of the provider's default (tests, a proxy).
    pub base_url: Option<String>,
    /// What the judge's tokens cost, so its spending counts in dollars too.
    pub price: Option<crate::contract::Price>,
}

/// An evaluator written in a script: it is given the case and the run (as the report shows
/// them) and says how the run did.
pub trait CaseCheck: Send + Sync + std::fmt::Debug {
    /// Scores one run; an error is the evaluator failing (a thrown error, a wrong value).
    fn check(&self, case: &Value, run: &Value) -> Result<Verdict, String>;
}

/// How one evaluator scored one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the run passes this evaluator.
    pub passed: bool,
    /// A score in 0..=1 (1 or 0 for a pass/fail).
    pub score: f64,
    /// A label the evaluator gave (labels inform; they do not fail a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Why, in words.
    #[serde(default)]
    pub reason: String,
}

impl Verdict {
    /// A pass or a fail with its reason.
    pub fn of(passed: bool, reason: impl Into<String>) -> Verdict {
        Verdict {
            passed,
            score: if passed { 1.0 } else { 0.0 },
            label: None,
            reason: reason.into(),
        }
    }
}
