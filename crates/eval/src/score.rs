//! Scoring one run of one case with one built-in or scripted evaluator. Model-graded
//! evaluators (`Check::Judge`) need a model and are scored by `judge::grade`.

pub mod judge;

use crate::report::{CallRecord, RunRecord};
use kiln_registry::eval_spec::{Case, Check, Verdict};
use serde_json::Value;

/// Longest answer (in characters) quoted in a reason.
const QUOTE_CHARS: usize = 200;
/// Most schema violations listed in a reason.
const MAX_VIOLATIONS: usize = 3;

/// Scores `run` of `case` with `check`. Every check but [`Check::Judge`] (which fails here:
/// it is scored by `judge::grade`) is decided from the run's record alone.
pub fn apply(check: &Check, case: &Case, run: &RunRecord) -> Verdict {
    match check {
        Check::AnswerEquals(want) => answer_equals(want.as_ref().or(case.expected.as_ref()), run),
        Check::AnswerContains(want) => answer_contains(want.as_deref(), case, run),
        Check::AnswerMatches(pattern) => answer_matches(pattern, run),
        Check::OutputEquals(want) => output_equals(want.as_ref().or(case.expected.as_ref()), run),
        Check::OutputMatches(schema) => output_matches(schema, run),
        Check::Called { tool, args } => called(tool, args.as_ref(), run),
        Check::CalledInOrder(tools) => called_in_order(tools, run),
        Check::AtMostCalls { tool, max } => at_most_calls(tool.as_deref(), *max, run),
        Check::WithinDuration(limit) => {
            let limit_ms = limit.as_secs_f64() * 1000.0;
            Verdict::of(
                run.duration_ms <= limit_ms,
                format!(
                    "took {:.0} ms (at most {limit_ms:.0} ms allowed)",
                    run.duration_ms
                ),
            )
        }
        Check::WithinTokens(max) => {
            let used = run.usage.tokens();
            Verdict::of(
                used <= *max,
                format!("used {used} tokens (at most {max} allowed)"),
            )
        }
        Check::WithinCost(max) => match run.usage.cost_usd {
            None => Verdict::of(false, "the model has no prices"),
            Some(cost) => Verdict::of(
                cost <= *max,
                format!("cost ${cost:.6} (at most ${max:.6} allowed)"),
            ),
        },
        Check::NoToolError => no_tool_error(run),
        Check::Custom(c) => custom(c.as_ref(), case, run),
        Check::Judge(_) => Verdict::of(false, "judge evaluators are scored by judge::grade"),
    }
}

/// The run's tool calls with code mode's nested calls, depth first in order (a program's
/// call, then the calls it made).
pub fn flatten_calls(run: &RunRecord) -> Vec<&CallRecord> {
    fn walk<'a>(calls: &'a [CallRecord], out: &mut Vec<&'a CallRecord>) {
        for c in calls {
            out.push(c);
            walk(&c.nested, out);
        }
    }
    let mut out = Vec::new();
    walk(&run.tool_calls, &mut out);
    out
}

/// `text` cut to [`QUOTE_CHARS`] characters, quoted.
fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let cut: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{:?}...", cut)
    } else {
        format!("{cut:?}")
    }
}

/// A JSON value, compact and cut like an answer.
fn quote_json(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= QUOTE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(QUOTE_CHARS).collect();
    format!("{cut}...")
}

fn answer_equals(want: Option<&Value>, run: &RunRecord) -> Verdict {
    let answer = run.answer.trim();
    match want {
        None => Verdict::of(
            false,
            "nothing to compare with: the case has no expected answer",
        ),
        Some(Value::String(s)) => Verdict::of(
            answer == s.trim(),
            format!("expected {}, the answer is {}", quote(s), quote(answer)),
        ),
        Some(v) => match serde_json::from_str::<Value>(answer) {
            Ok(found) => Verdict::of(
                &found == v,
                format!(
                    "expected {}, the answer is {}",
                    quote_json(v),
                    quote_json(&found)
                ),
            ),
            Err(_) => Verdict::of(
                false,
                format!(
                    "expected {}, the answer is not JSON: {}",
                    quote_json(v),
                    quote(answer)
                ),
            ),
        },
    }
}

fn answer_contains(want: Option<&str>, case: &Case, run: &RunRecord) -> Verdict {
    let needles: Vec<String> = match (want, &case.expected) {
        (Some(s), _) => vec![s.to_string()],
        (None, Some(Value::String(s))) => vec![s.clone()],
        (None, Some(Value::Array(items))) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        (None, Some(other)) => vec![other.to_string()],
        (None, None) => {
            return Verdict::of(
                false,
                "nothing to look for: the case has no expected answer",
            );
        }
    };
    let answer = run.answer.to_lowercase();
    let missing: Vec<&String> = needles
        .iter()
        .filter(|n| !answer.contains(&n.to_lowercase()))
        .collect();
    if missing.is_empty() {
        let list: Vec<String> = needles.iter().map(|n| quote(n)).collect();
        return Verdict::of(true, format!("the answer contains {}", list.join(", ")));
    }
    let list: Vec<String> = missing.iter().map(|n| quote(n)).collect();
    Verdict::of(
        false,
        format!(
            "expected the answer to contain {}; the answer is {}",
            list.join(", "),
            quote(&run.answer)
        ),
    )
}

fn answer_matches(pattern: &str, run: &RunRecord) -> Verdict {
    match regex::Regex::new(pattern) {
        Err(e) => Verdict::of(false, format!("invalid regex /{pattern}/: {e}")),
        Ok(re) => {
            let ok = re.is_match(&run.answer);
            let verb = if ok { "matches" } else { "does not match" };
            Verdict::of(
                ok,
                format!("the answer {} {verb} /{pattern}/", quote(&run.answer)),
            )
        }
    }
}

fn output_equals(want: Option<&Value>, run: &RunRecord) -> Verdict {
    match (want, &run.output) {
        (None, _) => Verdict::of(
            false,
            "nothing to compare with: the case has no expected output",
        ),
        (Some(v), None) => Verdict::of(
            false,
            format!(
                "expected output {}, the run has no typed output",
                quote_json(v)
            ),
        ),
        (Some(v), Some(found)) => Verdict::of(
            found == v,
            format!(
                "expected output {}, found {}",
                quote_json(v),
                quote_json(found)
            ),
        ),
    }
}

fn output_matches(schema: &Value, run: &RunRecord) -> Verdict {
    let validator = match kiln_core::schema::validate::compile_schema(schema) {
        Ok(v) => v,
        Err(e) => return Verdict::of(false, format!("invalid JSON Schema: {e}")),
    };
    let Some(output) = &run.output else {
        return Verdict::of(
            false,
            "the run has no typed output to check against the schema",
        );
    };
    let violations = kiln_core::schema::validate::violations(&validator, output);
    if violations.is_empty() {
        return Verdict::of(true, "the output matches the schema");
    }
    let shown: Vec<&str> = violations
        .iter()
        .take(MAX_VIOLATIONS)
        .map(String::as_str)
        .collect();
    let more = violations.len().saturating_sub(MAX_VIOLATIONS);
    let tail = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    Verdict::of(
        false,
        format!(
            "the output does not match the schema: {}{tail}",
            shown.join("; ")
        ),
    )
}

/// Whether `args` contains `pattern`: every key of an object pattern present with a matching
/// value (objects recursively), a string pattern with `*` a glob over a string, else equality.
pub fn args_match(pattern: &Value, args: &Value) -> bool {
    match (pattern, args) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| args_match(w, h))),
        (Value::String(p), Value::String(s)) if p.contains('*') => {
            kiln_core::tool::policy::glob(p, s)
        }
        (p, a) => p == a,
    }
}

fn called(tool: &str, args: Option<&Value>, run: &RunRecord) -> Verdict {
    let calls = flatten_calls(run);
    let of_tool: Vec<&&CallRecord> = calls.iter().filter(|c| c.name == tool).collect();
    let with = args.map(|a| format!(" with arguments containing {}", quote_json(a)));
    let with = with.unwrap_or_default();
    if of_tool
        .iter()
        .any(|c| args.is_none_or(|a| args_match(a, &c.args)))
    {
        return Verdict::of(true, format!("\"{tool}\" was called{with}"));
    }
    let found = if of_tool.is_empty() {
        format!("the calls were: {}", names(&calls))
    } else {
        let seen: Vec<String> = of_tool.iter().map(|c| quote_json(&c.args)).collect();
        format!("it was called with {}", seen.join(", "))
    };
    Verdict::of(
        false,
        format!("expected \"{tool}\" to be called{with}; {found}"),
    )
}

/// The calls' names, in order (`none` when there were none).
fn names(calls: &[&CallRecord]) -> String {
    if calls.is_empty() {
        return "none".into();
    }
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    quote(&names.join(", "))
}

fn called_in_order(tools: &[String], run: &RunRecord) -> Verdict {
    let calls = flatten_calls(run);
    let mut want = tools.iter().peekable();
    for c in &calls {
        if want.peek().is_some_and(|t| **t == c.name) {
            want.next();
        }
    }
    let order = tools.join(" -> ");
    match want.next() {
        None => Verdict::of(true, format!("called in order: {order}")),
        Some(missing) => Verdict::of(
            false,
            format!(
                "expected calls in order {order}; \"{missing}\" did not follow; the calls were: {}",
                names(&calls)
            ),
        ),
    }
}

fn at_most_calls(tool: Option<&str>, max: u64, run: &RunRecord) -> Verdict {
    let calls = flatten_calls(run);
    let n = calls
        .iter()
        .filter(|c| tool.is_none_or(|t| c.name == t))
        .count() as u64;
    let what = match tool {
        Some(t) => format!("calls of \"{t}\""),
        None => "tool calls".into(),
    };
    Verdict::of(n <= max, format!("{n} {what} (at most {max} allowed)"))
}

fn no_tool_error(run: &RunRecord) -> Verdict {
    let failed: Vec<String> = flatten_calls(run)
        .into_iter()
        .filter(|c| c.is_error)
        .map(|c| {
            let result = match &c.result {
                Value::String(s) => quote(s),
                other => quote_json(other),
            };
            format!("\"{}\" failed: {result}", c.name)
        })
        .collect();
    if failed.is_empty() {
        return Verdict::of(true, "no tool call failed");
    }
    Verdict::of(false, failed.join("; "))
}

fn custom(c: &dyn kiln_registry::eval_spec::CaseCheck, case: &Case, run: &RunRecord) -> Verdict {
    let case_json = serde_json::to_value(case);
    let run_json = serde_json::to_value(run);
    let (Ok(case_json), Ok(run_json)) = (case_json, run_json) else {
        return Verdict::of(false, "the evaluator failed: the case or run is not JSON");
    };
    match c.check(&case_json, &run_json) {
        Ok(v) => v,
        Err(e) => Verdict::of(false, format!("the evaluator failed: {e}")),
    }
}

#[cfg(test)]
mod tests;
