//! A finished run or call as evaluators see it: [`RunRecord`] from an agent's [`RunReport`]
//! or a tool's [`ToolOutcome`].

use super::report::{CallRecord, RunRecord, Usage};
use kiln_agent::{CallOutcome, RunReport, ToolCallRecord};
use kiln_core::failure::ToolOutcome;
use serde_json::Value;

/// The most characters of a tool's result a report keeps.
const RESULT_CHARS: usize = 2_000;

/// What an agent's run did; `error` is how it failed, if it did.
pub fn of_run(report: &RunReport, error: Option<String>, duration_ms: f64) -> RunRecord {
    RunRecord {
        run_id: Some(report.run_id.clone()),
        answer: report.answer.clone(),
        output: report.output.clone(),
        tool_calls: report.tool_calls.iter().map(call_of).collect(),
        rounds: report.rounds,
        usage: Usage {
            input_tokens: report.usage.input_tokens,
            output_tokens: report.usage.output_tokens,
            cost_usd: report.cost_usd,
        },
        duration_ms,
        error,
        trace_id: report.trace_id.clone(),
        agent_version: None,
    }
}

fn call_of(c: &ToolCallRecord) -> CallRecord {
    CallRecord {
        name: c.name.clone(),
        args: Value::clone(&c.args),
        is_error: c.is_error,
        result: shortened(c.outcome.to_json()),
        nested: c.nested.iter().map(call_of).collect(),
    }
}

/// What a tool's (or pipeline's) call returned: its text as the answer, a structured result
/// as the output.
pub fn of_call(outcome: &ToolOutcome, duration_ms: f64) -> RunRecord {
    let call = CallOutcome::of(outcome);
    let (answer, output, error) = match (&outcome.result, call.error()) {
        (Ok(v), _) => (text_of(v), Some(v.clone()), None),
        (Err(_), Some(e)) => (
            String::new(),
            None,
            Some(format!("{:?}: {}", e.kind, e.message)),
        ),
        (Err(f), None) => (String::new(), None, Some(f.to_string())),
    };
    RunRecord {
        answer,
        output,
        duration_ms,
        error,
        ..RunRecord::default()
    }
}

/// A value as the answer text: a string as itself, anything else as JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A long result cut for the report (its evaluators saw the whole call's arguments; results
/// are for people).
fn shortened(v: Value) -> Value {
    let text = v.to_string();
    if text.len() <= RESULT_CHARS {
        return v;
    }
    let cut: String = text.chars().take(RESULT_CHARS).collect();
    Value::String(format!("{cut}… ({} bytes)", text.len()))
}
