//! Model-graded evaluators (`judge(rubric)`): a model is shown the case, the run's answer and
//! its tool calls, and answers with a verdict as JSON. A malformed verdict is sent back with
//! what is wrong (the output contract's repair message), a bounded number of times; the tokens
//! of every attempt are counted, whether a verdict came or not.

use crate::report::{RunRecord, Usage};
use crate::score::flatten_calls;
use kiln_agent::connect::{ProviderDefaults, ProviderOverrides, connect};
use kiln_core::error::SourceLoc;
use kiln_core::model::{Message, ModelRequest, TextSink, ToolChoice};
use kiln_providers::Provider;
use kiln_registry::agent_spec::{AgentMode, AgentSpec, ProviderKind};
use kiln_registry::contract::OutputContract;
use kiln_registry::eval_spec::{Case, JudgeSpec, Verdict};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Output tokens one verdict may take.
const VERDICT_MAX_TOKENS: u32 = 1024;
/// Characters of the answer and of each call's arguments shown to the judge.
const SHOWN_CHARS: usize = 8000;

/// What the runner passes to every judge.
#[derive(Debug, Clone, Default)]
pub struct JudgeSettings {
    /// Per-request timeout (none: kiln's default).
    pub timeout: Option<Duration>,
    /// The project's provider settings (`kiln.toml`'s `[providers.NAME]`).
    pub defaults: ProviderDefaults,
    /// Stops a judge between and during its requests.
    pub cancel: CancellationToken,
}

/// A judge's verdict with what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    /// The verdict.
    pub verdict: Verdict,
    /// Tokens (and dollars, when priced) of every request.
    pub usage: Usage,
    /// Requests made: 1, plus one per repair.
    pub attempts: u32,
}

/// Why a judge gave no verdict. Each variant made after a request carries the tokens spent,
/// so they are counted anyway.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    /// The judge's model cannot be used (an unknown provider, a missing key).
    #[error("judge \"{model}\": {message}")]
    Setup {
        /// The judge (`provider:model`).
        model: String,
        /// What is wrong.
        message: String,
    },
    /// A request failed (the provider unreachable, an error status).
    #[error("judge \"{model}\" is unreachable: {message}")]
    Unreachable {
        /// The judge.
        model: String,
        /// The provider's error.
        message: String,
        /// What the requests before it spent.
        usage: Usage,
    },
    /// Every answer was malformed.
    #[error("judge \"{model}\" gave no valid verdict in {attempts} attempts: {last}")]
    NoVerdict {
        /// The judge.
        model: String,
        /// Requests made.
        attempts: u32,
        /// What was wrong with the last answer.
        last: String,
        /// What they spent.
        usage: Usage,
    },
    /// The eval was stopped.
    #[error("judge \"{model}\" cancelled")]
    Cancelled {
        /// The judge.
        model: String,
        /// What the requests before it spent.
        usage: Usage,
    },
}

impl JudgeError {
    /// Tokens spent before the judge gave up.
    pub fn usage(&self) -> Usage {
        match self {
            JudgeError::Setup { .. } => Usage::default(),
            JudgeError::Unreachable { usage, .. }
            | JudgeError::NoVerdict { usage, .. }
            | JudgeError::Cancelled { usage, .. } => *usage,
        }
    }
}

/// The JSON Schema of a verdict.
pub fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pass": {"type": "boolean"},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string"}
        },
        "required": ["pass", "score", "reason"]
    })
}

/// Asks `spec`'s model to grade `run` of `case` against its rubric; a malformed verdict is
/// sent back for repair up to `spec.retries` times.
pub async fn grade(
    spec: &JudgeSpec,
    case: &Case,
    run: &RunRecord,
    settings: &JudgeSettings,
) -> Result<Graded, JudgeError> {
    let setup = |message: String| JudgeError::Setup {
        model: spec.model.clone(),
        message,
    };
    let contract = OutputContract::new(verdict_schema(), spec.retries).map_err(setup)?;
    let (provider, model) = provider(spec, settings).map_err(setup)?;
    let mut messages = vec![Message::user(user_message(case, run))];
    let system = system_prompt(spec);
    let mut usage = Usage::default();
    let sink: TextSink = Arc::new(|_: &str| {});
    let mut attempts = 0;
    loop {
        attempts += 1;
        let req = ModelRequest {
            model: model.clone(),
            system: Some(system.clone()),
            messages: messages.as_slice().into(),
            tools: Vec::new(),
            temperature: None,
            max_tokens: VERDICT_MAX_TOKENS,
            stream: false,
            unchanged_prefix: 0,
            output: Some(contract.schema.clone()),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
        };
        let prepared = provider.prepare(&req);
        let reply = tokio::select! {
            biased;
            _ = settings.cancel.cancelled() => {
                return Err(JudgeError::Cancelled { model: spec.model.clone(), usage });
            }
            reply = provider.send(prepared, &sink) => reply,
        };
        let reply = reply.map_err(|e| JudgeError::Unreachable {
            model: spec.model.clone(),
            message: e.to_string(),
            usage,
        })?;
        usage.add(&Usage {
            input_tokens: reply.usage.input_tokens,
            output_tokens: reply.usage.output_tokens,
            cost_usd: spec
                .price
                .map(|p| p.cost(reply.usage.input_tokens, reply.usage.output_tokens)),
        });
        let violations = match contract.check(&reply.text) {
            Ok(value) => {
                return Ok(Graded {
                    verdict: verdict_of(&value),
                    usage,
                    attempts,
                });
            }
            Err(v) => v,
        };
        if attempts > spec.retries {
            return Err(JudgeError::NoVerdict {
                model: spec.model.clone(),
                attempts,
                last: violations.join("; "),
                usage,
            });
        }
        messages.push(Message::Assistant {
            content: reply.text,
            tool_calls: Vec::new(),
            replay: reply.replay,
        });
        messages.push(Message::user(contract.repair(&violations)));
    }
}

/// A checked verdict's value as a [`Verdict`].
fn verdict_of(value: &Value) -> Verdict {
    Verdict {
        passed: value["pass"].as_bool().unwrap_or(false),
        score: value["score"].as_f64().unwrap_or(0.0).clamp(0.0, 1.0),
        label: None,
        reason: value["reason"].as_str().unwrap_or_default().to_string(),
    }
}

/// The judge's provider and model, connected as an agent's are (`spec.base_url` as the
/// run's base URL override; keys from the environment).
fn provider(spec: &JudgeSpec, settings: &JudgeSettings) -> Result<(Provider, String), String> {
    let (name, model) = match spec.model.split_once(':') {
        Some((p, m)) if !m.trim().is_empty() => (p.trim(), Some(m.trim().to_string())),
        Some((p, _)) => (p.trim(), None),
        None => (spec.model.trim(), None),
    };
    let kind = ProviderKind::parse(name).ok_or_else(|| {
        format!(
            "unknown provider \"{name}\" (expected one of {}; write provider:model)",
            ProviderKind::names()
        )
    })?;
    if kind == ProviderKind::Script {
        return Err("a judge needs a model provider, not \"script\"".into());
    }
    let overrides = ProviderOverrides {
        provider: Some(kind.name().to_string()),
        model,
        base_url: spec.base_url.clone(),
        timeout: settings.timeout,
        ..ProviderOverrides::default()
    };
    connect(&judge_agent(kind), &overrides, &settings.defaults).map_err(|e| e.to_string())
}

/// The agent a judge is connected as: the provider and nothing else.
fn judge_agent(provider: ProviderKind) -> AgentSpec {
    AgentSpec {
        name: "judge".into(),
        description: String::new(),
        provider,
        model: None,
        system: None,
        tools: Vec::new(),
        grants: Default::default(),
        max_iterations: 1,
        temperature: None,
        max_tokens: None,
        base_url: None,
        api_key_env: None,
        max_reply_bytes: None,
        max_line_bytes: None,
        max_parallel: 1,
        mode: AgentMode::Tools,
        max_steps: 1,
        loc: SourceLoc::new("judge", 0, 0),
        code_mode: None,
        contract: Default::default(),
        handoffs: Vec::new(),
        fallback: Vec::new(),
        text_tool_calls: Default::default(),
        skills: Vec::new(),
        compaction: None,
        defer_loading: Vec::new(),
        defer_with_kiln: false,
        script: None,
    }
}

/// The judge's job and the rubric.
fn system_prompt(spec: &JudgeSpec) -> String {
    format!(
        "You are an evaluator. You grade one run of an AI system: its answer to a task (and the \
         tool calls it made) against the rubric below. Judge only by the rubric; be strict and \
         fair.\n\nRubric:\n{}\n\nAnswer with ONLY a JSON object, no other text: \
         {{\"pass\": true or false, \"score\": a number from 0 to 1, \"reason\": \"one or two \
         sentences saying why\"}}",
        spec.rubric.trim()
    )
}

/// The case, the expected answer, the run's answer and its tool calls.
fn user_message(case: &Case, run: &RunRecord) -> String {
    let mut text = format!("## Task given\n{}\n", shown(&case.input));
    if let Some(expected) = &case.expected {
        text.push_str(&format!("\n## Expected answer\n{}\n", shown(expected)));
    }
    text.push_str(&format!("\n## The answer to grade\n{}\n", cut(&run.answer)));
    let calls = flatten_calls(run);
    if !calls.is_empty() {
        text.push_str("\n## Tool calls it made, in order\n");
        for c in calls {
            let failed = if c.is_error { " (failed)" } else { "" };
            text.push_str(&format!(
                "- {} {}{failed}\n",
                c.name,
                cut(&c.args.to_string())
            ));
        }
    }
    if let Some(error) = &run.error {
        text.push_str(&format!("\n## The run failed\n{}\n", cut(error)));
    }
    text.push_str(
        "\nGrade the answer. Reply with ONLY the JSON object {\"pass\": bool, \"score\": number 0..1, \"reason\": string}.",
    );
    text
}

/// A string as itself, other JSON compact; cut to [`SHOWN_CHARS`].
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => cut(s),
        other => cut(&other.to_string()),
    }
}

fn cut(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}...")
    } else {
        head
    }
}
