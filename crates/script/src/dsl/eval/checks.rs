//! The built-in evaluators an `evaluation(...)` takes: functions returning an evaluator value,
//! checked when made (a bad regex or schema is a load error where it is given).

use crate::convert;
use kiln_core::duration::{BareUnit, parse_duration};
use kiln_registry::eval_spec::{Check, JudgeSpec};
use rhai::{Array, Dynamic, Engine, Map};
use serde_json::Value;

/// An evaluator value a script holds before giving it to `.evaluator(...)`.
#[derive(Clone, Debug)]
pub struct EvaluatorValue {
    pub(crate) name: String,
    pub(crate) check: Result<Check, String>,
}

impl EvaluatorValue {
    /// A built-in evaluator, or the mistake in making one (reported where it is given).
    pub(crate) fn new(name: &str, check: Result<Check, String>) -> EvaluatorValue {
        EvaluatorValue {
            name: name.to_string(),
            check,
        }
    }
}

/// A judge's settings from `judge(#{ rubric, model, retries, base_url })`.
pub(crate) fn judge_of(m: &Map) -> Result<Check, String> {
    for key in m.keys() {
        if !matches!(
            key.as_str(),
            "rubric" | "model" | "retries" | "base_url" | "price"
        ) {
            return Err(format!(
                "unknown key \"{key}\" (rubric, model, retries, base_url, price)"
            ));
        }
    }
    let text = |k: &str| {
        m.get(k)
            .map(|v| v.to_string())
            .filter(|s| !s.trim().is_empty())
    };
    let rubric = text("rubric").ok_or("a judge needs a `rubric`: what a good answer is")?;
    let model = text("model").ok_or("a judge needs a `model` (`provider:model`)")?;
    if !model.contains(':') {
        return Err(format!(
            "model \"{model}\" must be written `provider:model` (e.g. openai:gpt-5-mini)"
        ));
    }
    let retries = match m.get("retries") {
        None => kiln_registry::contract::DEFAULT_OUTPUT_RETRIES,
        Some(v) => match v.as_int().ok().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n <= 10 => n,
            _ => return Err(format!("retries: {v} is not in 0..=10")),
        },
    };
    Ok(Check::Judge(JudgeSpec {
        rubric,
        model,
        retries,
        base_url: text("base_url"),
        price: judge_price(m.get("price"))?,
    }))
}

/// `price: [input, output]`, dollars per million tokens.
fn judge_price(v: Option<&Dynamic>) -> Result<Option<kiln_registry::contract::Price>, String> {
    let Some(v) = v else { return Ok(None) };
    let number = |d: &Dynamic| {
        d.as_float()
            .ok()
            .or_else(|| d.as_int().ok().map(|i| i as f64))
    };
    let pair = v.clone().try_cast::<Array>().filter(|a| a.len() == 2);
    match pair.as_deref().map(|a| (number(&a[0]), number(&a[1]))) {
        Some((Some(i), Some(o))) if i >= 0.0 && o >= 0.0 => {
            Ok(Some(kiln_registry::contract::Price {
                input_per_mtok: i,
                output_per_mtok: o,
            }))
        }
        _ => Err("price is [input, output]: dollars per million tokens, as numbers".into()),
    }
}

fn json(v: &Dynamic) -> Result<Value, String> {
    convert::to_json(v)
}

fn made(name: &str, check: Result<Check, String>) -> EvaluatorValue {
    EvaluatorValue::new(name, check)
}

fn regex_check(pattern: &str) -> Result<Check, String> {
    regex::Regex::new(pattern)
        .map(|_| Check::AnswerMatches(pattern.to_string()))
        .map_err(|e| format!("not a regular expression: {e}"))
}

fn schema_check(schema: &Dynamic) -> Result<Check, String> {
    let schema = json(schema)?;
    jsonschema::validator_for(&schema).map_err(|e| format!("not a JSON Schema: {e}"))?;
    Ok(Check::OutputMatches(schema))
}

fn called_check(tool: &str, args: Option<&Map>) -> Result<Check, String> {
    if tool.trim().is_empty() {
        return Err("name the tool".into());
    }
    let args = match args {
        None => None,
        Some(m) => Some(json(&Dynamic::from_map(m.clone()))?),
    };
    Ok(Check::Called {
        tool: tool.to_string(),
        args,
    })
}

fn count(n: i64) -> Result<u64, String> {
    u64::try_from(n).map_err(|_| format!("{n} is not a count"))
}

fn duration_check(d: &Dynamic) -> Result<Check, String> {
    let text = d.to_string();
    parse_duration(&text, BareUnit::Millis)
        .map(Check::WithinDuration)
        .map_err(|e| e.to_string())
}

fn cost_check(usd: f64) -> Result<Check, String> {
    match usd.is_finite() && usd >= 0.0 {
        true => Ok(Check::WithinCost(usd)),
        false => Err(format!("{usd} is not an amount of dollars")),
    }
}

/// Registers the built-in evaluators.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn("answer_equals", || {
        made("answer_equals", Ok(Check::AnswerEquals(None)))
    });
    engine.register_fn("answer_equals", |v: Dynamic| {
        made(
            "answer_equals",
            json(&v).map(|v| Check::AnswerEquals(Some(v))),
        )
    });
    engine.register_fn("answer_contains", || {
        made("answer_contains", Ok(Check::AnswerContains(None)))
    });
    engine.register_fn("answer_contains", |text: &str| {
        made(
            "answer_contains",
            Ok(Check::AnswerContains(Some(text.to_string()))),
        )
    });
    engine.register_fn("answer_matches", |pattern: &str| {
        made("answer_matches", regex_check(pattern))
    });
    engine.register_fn("output_equals", || {
        made("output_equals", Ok(Check::OutputEquals(None)))
    });
    engine.register_fn("output_equals", |v: Dynamic| {
        made(
            "output_equals",
            json(&v).map(|v| Check::OutputEquals(Some(v))),
        )
    });
    engine.register_fn("output_matches", |schema: Dynamic| {
        made("output_matches", schema_check(&schema))
    });
    engine.register_fn("called", |tool: &str| {
        made("called", called_check(tool, None))
    });
    engine.register_fn("called", |tool: &str, args: Map| {
        made("called", called_check(tool, Some(&args)))
    });
    engine.register_fn("called_in_order", |tools: Array| {
        let check = crate::dsl::strings(&tools).and_then(|l| match l.is_empty() {
            true => Err("name the tools, in order".to_string()),
            false => Ok(Check::CalledInOrder(l)),
        });
        made("called_in_order", check)
    });
    engine.register_fn("at_most_calls", |n: i64| {
        made(
            "at_most_calls",
            count(n).map(|max| Check::AtMostCalls { tool: None, max }),
        )
    });
    engine.register_fn("at_most_calls", |tool: &str, n: i64| {
        let tool = Some(tool.to_string());
        made(
            "at_most_calls",
            count(n).map(|max| Check::AtMostCalls { tool, max }),
        )
    });
    engine.register_fn("within_duration", |d: Dynamic| {
        made("within_duration", duration_check(&d))
    });
    engine.register_fn("within_tokens", |n: i64| {
        made("within_tokens", count(n).map(Check::WithinTokens))
    });
    engine.register_fn("within_cost", |usd: f64| {
        made("within_cost", cost_check(usd))
    });
    engine.register_fn("within_cost", |usd: i64| {
        made("within_cost", cost_check(usd as f64))
    });
    engine.register_fn("no_tool_error", || {
        made("no_tool_error", Ok(Check::NoToolError))
    });
    engine.register_fn("judge", |m: Map| made("judge", judge_of(&m)));
}
