//! What an agent's run promises and may spend: a typed final answer (`.output(schema)`, with
//! bounded repair) and a budget (`.budget(#{ ... })`). The loop checks both; this module only
//! says what matches and what is spent.

use serde_json::Value;
use std::sync::Arc;

/// How many times a non-matching answer is sent back by default (`.output_retries(n)`).
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// A final answer that must be JSON matching a schema.
#[derive(Clone)]
pub struct OutputContract {
    /// The JSON Schema the answer must match.
    pub schema: Value,
    /// How many times a non-matching answer is sent back with its violations.
    pub retries: u32,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for OutputContract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputContract")
            .field("schema", &self.schema)
            .field("retries", &self.retries)
            .finish()
    }
}

impl OutputContract {
    /// A contract over `schema`; `Err` says why the schema does not compile.
    pub fn new(schema: Value, retries: u32) -> Result<Self, String> {
        let validator = kiln_core::schema::validate::compile_schema(&schema)
            .map_err(|e| format!("invalid output schema: {e}"))?;
        Ok(OutputContract {
            schema,
            retries,
            validator: Arc::new(validator),
        })
    }

    /// The answer as JSON when it matches; else every violation (`/path: reason`), or why it
    /// is not JSON. A fenced block (```json ... ```) counts as its content.
    pub fn check(&self, answer: &str) -> Result<Value, Vec<String>> {
        let text = unfenced(answer.trim());
        let value: Value = serde_json::from_str(text).map_err(|e| {
            vec![format!(
                "/: the answer is not JSON ({e}); answer with the JSON value only"
            )]
        })?;
        match kiln_core::schema::validate::violations(&self.validator, &value) {
            v if v.is_empty() => Ok(value),
            v => Err(v),
        }
    }

    /// What the model is told on every turn, beside the agent's system prompt.
    pub fn instruction(&self) -> String {
        format!(
            "When you give your final answer (a reply without tool calls), it must be only JSON matching this JSON Schema, with no other text:\n{}",
            self.schema
        )
    }

    /// The message a non-matching answer gets back.
    pub fn repair(&self, violations: &[String]) -> String {
        format!(
            "Your answer does not match the required JSON Schema:\n{}\nAnswer again with only the corrected JSON.",
            violations
                .iter()
                .map(|v| format!("- {v}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    }
}

/// The text of a ```json fence, or the text itself.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// What a run may spend at most; each limit is optional.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// Prompt tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Tool calls, a code-mode program's own calls included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Dollars, from the model's prices (`prices(#{ ... })`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What a run has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spend {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Tool calls, nested ones included.
    pub tool_calls: u64,
    /// Dollars, when the model has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// A limit reached: which, what it allows and what was spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceeded {
    /// `input_tokens`, `output_tokens`, `tool_calls` or `cost_usd`.
    pub limit: &'static str,
    /// What the budget allows.
    pub allowed: f64,
    /// What the run has spent.
    pub spent: f64,
    /// What the step about to be made asks for on top (tool calls), or 0.
    pub asked: f64,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: f64| {
            if self.limit == "cost_usd" {
                format!("${v:.4}")
            } else {
                format!("{v}")
            }
        };
        write!(
            f,
            "budget {} of {} reached (spent {}",
            self.limit,
            show(self.allowed),
            show(self.spent)
        )?;
        if self.asked > 0.0 {
            write!(f, "; the next round asks for {} more", self.asked)?;
        }
        f.write_str(")")
    }
}

impl Budget {
    /// True when it sets no limit.
    pub fn is_empty(&self) -> bool {
        *self == Budget::default()
    }

    /// The tighter of two budgets, limit by limit (a request's within the agent's).
    pub fn within(&self, other: &Budget) -> Budget {
        fn min<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        Budget {
            input_tokens: min(self.input_tokens, other.input_tokens),
            output_tokens: min(self.output_tokens, other.output_tokens),
            tool_calls: min(self.tool_calls, other.tool_calls),
            cost_usd: min(self.cost_usd, other.cost_usd),
        }
    }

    /// The first limit `spend` has reached, checked before a model request (tokens and cost
    /// must still be under their limits) or with `calls` more tool calls about to be made.
    pub fn exceeded(&self, spend: &Spend, calls: u64) -> Option<Exceeded> {
        let over = |limit: &'static str, allowed: Option<u64>, spent: u64| {
            allowed.filter(|a| spent >= *a).map(|a| Exceeded {
                limit,
                allowed: a as f64,
                spent: spent as f64,
                asked: 0.0,
            })
        };
        if calls > 0 {
            return self
                .tool_calls
                .filter(|a| spend.tool_calls + calls > *a)
                .map(|a| Exceeded {
                    limit: "tool_calls",
                    allowed: a as f64,
                    spent: spend.tool_calls as f64,
                    asked: calls as f64,
                });
        }
        over("input_tokens", self.input_tokens, spend.input_tokens)
            .or_else(|| over("output_tokens", self.output_tokens, spend.output_tokens))
            .or_else(|| {
                let (allowed, spent) = (self.cost_usd?, spend.cost_usd?);
                (spent >= allowed).then_some(Exceeded {
                    limit: "cost_usd",
                    allowed,
                    spent,
                    asked: 0.0,
                })
            })
    }

    /// Parses `limit=value,...` (`kiln ask --budget tool_calls=5,cost_usd=0.5`).
    pub fn parse(text: &str) -> Result<Budget, String> {
        let mut b = Budget::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("budget \"{part}\": expected limit=value"))?;
            let count = || {
                value
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("budget {key}: \"{value}\" is not a whole number"))
            };
            match key.trim() {
                "input_tokens" => b.input_tokens = Some(count()?),
                "output_tokens" => b.output_tokens = Some(count()?),
                "tool_calls" => b.tool_calls = Some(count()?),
                "cost_usd" => {
                    b.cost_usd = Some(value.trim().parse::<f64>().map_err(|_| {
                        format!("budget cost_usd: \"{value}\" is not a number of dollars")
                    })?)
                }
                other => {
                    return Err(format!(
                        "unknown budget limit \"{other}\" (input_tokens, output_tokens, tool_calls, cost_usd)"
                    ));
                }
            }
        }
        Ok(b)
    }
}

/// Dollars per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_mtok: f64,
    /// Per million completion tokens.
    pub output_per_mtok: f64,
}

impl Price {
    /// The cost of these tokens.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_matches_or_names_every_violation() {
        let c = OutputContract::new(
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}),
            2,
        )
        .expect("schema");
        assert_eq!(
            c.check("```json\n{\"name\": \"Ada\", \"age\": 36}\n```"),
            Ok(json!({"name": "Ada", "age": 36}))
        );
        let bad = c.check(r#"{"name": 5}"#).expect_err("violations");
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad.iter().any(|v| v.starts_with("/name:")), "{bad:?}");
        assert!(c.check("The answer is Ada").expect_err("not json")[0].contains("not JSON"));
    }

    #[test]
    fn budgets_stop_at_their_limit_and_take_the_tighter() {
        let b = Budget::parse("tool_calls=2, input_tokens=100").expect("parse");
        let spend = Spend {
            tool_calls: 2,
            input_tokens: 40,
            ..Spend::default()
        };
        assert_eq!(b.exceeded(&spend, 0), None);
        let over = b.exceeded(&spend, 1).expect("a third call is over");
        assert_eq!(
            (over.limit, over.allowed, over.spent, over.asked),
            ("tool_calls", 2.0, 2.0, 1.0)
        );
        assert_eq!(
            over.to_string(),
            "budget tool_calls of 2 reached (spent 2; the next round asks for 1 more)"
        );
        let spend = Spend {
            input_tokens: 100,
            ..spend
        };
        assert_eq!(b.exceeded(&spend, 0).map(|e| e.limit), Some("input_tokens"));
        let tight = b.within(&Budget {
            tool_calls: Some(1),
            ..Budget::default()
        });
        assert_eq!((tight.tool_calls, tight.input_tokens), (Some(1), Some(100)));
        assert!(
            Budget::parse("calls=1")
                .unwrap_err()
                .contains("unknown budget limit")
        );
    }
}
