//! `kiln logs RUN_ID --scenario`: a logged run as a `kiln mock` scenario. Each turn is a model
//! reply as it was received (text, tool calls, usage) and carries in `expect` the messages the
//! request before it added (the prompt, then each round's tool results), which a strict replay
//! compares against, and in `expect_calls` the calls the programs it asked for made.

use super::TestError;
use super::agent::request_deltas;
use kiln_db::Db;
use rusqlite::params;
use serde_json::{Value, json};

/// Token usage per round of a logged run.
fn usage_by_round(db: &Db, run_id: &str) -> Result<Vec<(u32, u64, u64)>, TestError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare("SELECT round, input_tokens, output_tokens FROM model_calls WHERE run_id = ?1 ORDER BY round")
        .map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(params![run_id], |r| {
            Ok((
                r.get::<_, i64>(0)?.max(0) as u32,
                r.get::<_, Option<i64>>(1)?.unwrap_or(0).max(0) as u64,
                r.get::<_, Option<i64>>(2)?.unwrap_or(0).max(0) as u64,
            ))
        })
        .map_err(|e| db.err(e))?;
    Ok(rows.collect::<Result<_, _>>().map_err(|e| db.err(e))?)
}

/// The calls made inside other calls (a code-mode program's), per round, in order, as strict
/// replays compare them: `{"tool", "args"}`.
fn nested_by_round(db: &Db, run_id: &str) -> Result<Vec<(u32, Value)>, TestError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare("SELECT round, name, args FROM tool_calls WHERE run_id = ?1 AND call_id LIKE '%/%' ORDER BY step, part")
        .map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(params![run_id], |r| {
            let args = r
                .get::<_, Option<String>>(2)?
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or(Value::Null);
            Ok((
                r.get::<_, i64>(0)?.max(0) as u32,
                json!({"tool": r.get::<_, String>(1)?, "args": args}),
            ))
        })
        .map_err(|e| db.err(e))?;
    Ok(rows.collect::<Result<_, _>>().map_err(|e| db.err(e))?)
}

fn run_exists(db: &Db, run_id: &str) -> Result<bool, TestError> {
    let conn = db.conn();
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM runs WHERE id = ?1",
            params![run_id],
            |r| r.get(0),
        )
        .map_err(|e| db.err(e))?;
    Ok(n > 0)
}

/// A tool call as a scenario writes it: arguments as an object, or as raw text when the model
/// sent text that is not JSON.
fn scenario_call(call: &Value) -> Value {
    let args = &call["args"];
    match (args.get("raw"), args.get("error")) {
        (Some(Value::String(raw)), Some(_)) => {
            json!({"name": call["name"], "raw_arguments": raw})
        }
        _ => json!({"name": call["name"], "args": args}),
    }
}

/// The scenario of a logged run.
pub fn scenario_from_log(db: &Db, run_id: &str) -> Result<Value, TestError> {
    if !run_exists(db, run_id)? {
        return Err(TestError::UnknownRun(run_id.to_string()));
    }
    let messages = db.run_messages(run_id)?;
    let usage = usage_by_round(db, run_id)?;
    let nested = nested_by_round(db, run_id)?;
    let expects = request_deltas(&messages);
    let replies = messages.iter().filter(|m| m["role"] == "assistant");
    let turns: Vec<Value> = replies
        .zip(expects)
        .enumerate()
        .map(|(i, (reply, expect))| {
            let mut turn = serde_json::Map::new();
            if let Some(text) = reply["content"].as_str().filter(|t| !t.is_empty()) {
                turn.insert("text".into(), json!(text));
            }
            let calls: Vec<Value> = reply["tool_calls"]
                .as_array()
                .map(|c| c.iter().map(scenario_call).collect())
                .unwrap_or_default();
            if !calls.is_empty() {
                turn.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some((_, input, output)) = usage.iter().find(|(r, _, _)| *r as usize == i + 1) {
                turn.insert(
                    "usage".into(),
                    json!({"input_tokens": input, "output_tokens": output}),
                );
            }
            turn.insert("expect".into(), Value::Array(expect));
            // The calls of reply i ran in round i + 1.
            let made: Vec<Value> = nested
                .iter()
                .filter(|(r, _)| *r as usize == i + 1)
                .map(|(_, c)| c.clone())
                .collect();
            if !made.is_empty() {
                turn.insert("expect_calls".into(), Value::Array(made));
            }
            Value::Object(turn)
        })
        .collect();
    Ok(json!({ "turns": turns }))
}
