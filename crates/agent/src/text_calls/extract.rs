//! Finding JSON in what a model said: one plan object (planner mode), or every tool call written
//! into free text (`{"tool": ..., "parameters" | "args": ...}`), run with the usual guards.

use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, ToolFailure, ToolOutcome};
use kiln_registry::Registry;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// The model's text held no single JSON object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("JsonParseError: {reason}; the model said: {said:?}")]
pub struct JsonParseError {
    /// What was wrong.
    pub reason: String,
    /// What the model said (shortened).
    pub said: String,
}

/// Top-level `{...}` spans of `text`, with braces inside strings ignored.
fn object_spans(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let (mut depth, mut start, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if depth > 0 => in_str = true,
            b'{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    spans.push(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    spans
}

/// Every JSON object written at the top level of `text` (in fences or prose).
pub fn all_objects(text: &str) -> Vec<Value> {
    object_spans(text)
        .into_iter()
        .filter_map(|s| serde_json::from_str::<Value>(s).ok())
        .filter(Value::is_object)
        .collect()
}

/// The contents of ```json (or plain ```) fences.
fn fenced(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("```") {
        let after = &rest[i + 3..];
        let body_start = after.find('\n').map_or(0, |n| n + 1);
        let lang = after[..body_start].trim();
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        if lang.is_empty() || lang.eq_ignore_ascii_case("json") {
            out.push(&after[body_start..body_start + end]);
        }
        rest = &after[body_start + end + 3..];
    }
    out
}

/// Exactly one JSON object from bare JSON, a ```json fence, or prose around one object.
pub fn one_object(text: &str) -> Result<Value, JsonParseError> {
    let said = kiln_providers::truncate(text.trim(), 300);
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text.trim()) {
        return Ok(v);
    }
    let fences = fenced(text);
    let candidates: Vec<Value> = if fences.is_empty() {
        all_objects(text)
    } else {
        fences.iter().flat_map(|f| all_objects(f)).collect()
    };
    match candidates.len() {
        1 => Ok(candidates.into_iter().next().unwrap_or_default()),
        0 => Err(JsonParseError {
            reason: "no JSON object found".into(),
            said,
        }),
        n => Err(JsonParseError {
            reason: format!("expected one JSON object, found {n}"),
            said,
        }),
    }
}

/// One tool call found in free text and what running it gave.
#[derive(Debug, Clone, Serialize)]
pub struct ExtractedCall {
    /// Tool name.
    pub tool: String,
    /// Arguments as written.
    pub args: Value,
    /// `{success, result | error, duration_ms}`.
    pub outcome: Value,
    /// True when it succeeded.
    pub ok: bool,
    /// The result text (or error message) for feedback.
    pub text: String,
}

/// The `{"tool": NAME, "parameters" | "args": {...}}` objects in `text`.
pub fn tool_calls_in(text: &str) -> Vec<(String, Value)> {
    all_objects(text)
        .into_iter()
        .filter_map(|o| {
            let name = o.get("tool")?.as_str()?.to_string();
            let args = o
                .get("parameters")
                .or_else(|| o.get("args"))
                .cloned()
                .unwrap_or(Value::Object(Default::default()));
            Some((name, args))
        })
        .collect()
}

/// Runs every tool call written in `text` concurrently, validated and guarded as usual.
pub async fn execute_from_text(
    registry: &Arc<Registry>,
    text: &str,
    ctx: &CallContext,
) -> Vec<ExtractedCall> {
    let calls = tool_calls_in(text);
    let futures = calls.into_iter().map(|(name, args)| {
        let tool = registry.find(&name);
        let ctx = ctx.clone();
        let known = registry.tool_names().join(", ");
        async move {
            let outcome = match tool {
                Some(t) => t.execute_async(args.clone(), ctx).await,
                None => ToolOutcome::failed(
                    ToolFailure::visible(
                        FailureKind::UnknownTool,
                        format!("Unknown tool: {name}. Available tools: {known}"),
                    ),
                    std::time::Instant::now(),
                ),
            };
            ExtractedCall {
                tool: name,
                args,
                outcome: outcome.to_json(false),
                ok: outcome.is_ok(),
                text: outcome.model_text(),
            }
        }
    });
    futures_util::future::join_all(futures).await
}

/// `Tool Results:` then one `✓ name: result` / `✗ name: error` line per call.
pub fn format_results(results: &[ExtractedCall]) -> String {
    let mut out = String::from("Tool Results:");
    for r in results {
        out.push_str(&format!(
            "\n{} {}: {}",
            if r.ok { "✓" } else { "✗" },
            r.tool,
            r.text
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_one_object_bare_fenced_or_in_prose() {
        assert_eq!(
            one_object(r#" {"tool": "a", "args": {}} "#).ok(),
            Some(json!({"tool": "a", "args": {}}))
        );
        assert_eq!(
            one_object("Sure:\n```json\n{\"tool\": \"a\"}\n```\nDone.").ok(),
            Some(json!({"tool": "a"}))
        );
        assert_eq!(
            one_object(r#"I will call {"tool": "a", "args": {"s": "} { \" }"}} now."#).ok(),
            Some(json!({"tool": "a", "args": {"s": "} { \" }"}}))
        );
    }

    #[test]
    fn none_or_two_objects_are_errors_quoting_the_text() {
        let e = one_object("no json here").expect_err("none");
        assert!(
            e.to_string().contains("no JSON object found")
                && e.to_string().contains("no json here")
        );
        let e = one_object(r#"{"tool": "a"} or {"tool": "b"}"#).expect_err("two");
        assert!(e.to_string().contains("found 2"));
        assert!(one_object("{\"tool\": ").is_err());
    }

    #[test]
    fn tool_calls_in_free_text_take_parameters_or_args() {
        let calls = tool_calls_in(
            r#"First {"tool": "calculator", "parameters": {"a": 1}} then {"tool": "x", "args": {"b": 2}} and {"other": 1}"#,
        );
        assert_eq!(
            calls,
            vec![
                ("calculator".into(), json!({"a": 1})),
                ("x".into(), json!({"b": 2}))
            ]
        );
    }
}
