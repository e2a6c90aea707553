//! `kiln logs RUN_ID --scenario`: a logged run as a `kiln mock` scenario. Each turn is a model
//! reply as it was received (text, tool calls, usage) and carries in `expect` the messages the
//! request before it added (the prompt, then each round's tool results), which a strict replay
//! compares against, and in `expect_calls` the calls the programs it asked for made.
//!
//! `kiln logs RUN_ID --as-case`: a logged run as a case of `kiln eval` ([`case_from_log`]).

use super::TestError;
use super::agent::request_deltas;
use kiln_db::{Db, args};
use kiln_registry::eval_spec::Case;
use serde_json::{Value, json};

/// Token usage per round of a logged run.
fn usage_by_round(db: &Db, run_id: &str) -> Result<Vec<(u32, u64, u64)>, TestError> {
    let rows = db.query(
        "SELECT round, input_tokens, output_tokens FROM model_calls WHERE run_id = ?1 ORDER BY round",
        &args![run_id],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let n = |i| r.int(i).unwrap_or(0).max(0);
            (n(0) as u32, n(1) as u64, n(2) as u64)
        })
        .collect())
}

/// The calls made inside other calls (a code-mode program's), per round, in order, as strict
/// replays compare them: `{"tool", "args"}`.
fn nested_by_round(db: &Db, run_id: &str) -> Result<Vec<(u32, Value)>, TestError> {
    let rows = db.query(
        "SELECT round, name, args FROM tool_calls WHERE run_id = ?1 AND call_id LIKE '%/%' ORDER BY step, part",
        &args![run_id],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let args = r
                .text(2)
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or(Value::Null);
            (
                r.int(0).unwrap_or(0).max(0) as u32,
                json!({"tool": r.str(1), "args": args}),
            )
        })
        .collect())
}

fn run_exists(db: &Db, run_id: &str) -> Result<bool, TestError> {
    let row = db.query_row("SELECT COUNT(*) FROM runs WHERE id = ?1", &args![run_id])?;
    Ok(row.and_then(|r| r.int(0)).unwrap_or(0) > 0)
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

/// `kiln logs RUN_ID --as-case`: a logged run as a case of `kiln eval`, named
/// `AGENT-SHORTID`, with the run's first user prompt as its input and, when the run ended
/// well with an answer, that answer as its expected one; its metadata says where it came from
/// (`run_id`, `agent`, `model`, and `tool_calls`: the names of the calls it made, code mode's
/// nested ones included, in order).
pub fn case_from_log(db: &Db, run_id: &str) -> Result<Case, TestError> {
    let run = db
        .run(run_id)?
        .ok_or_else(|| TestError::UnknownRun(run_id.to_string()))?;
    let messages = db.run_messages(run_id)?;
    // The log keeps the messages from the run's prompt on; a run without them (logged by an
    // older kiln) still has its prompt on its row.
    let prompt = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .map(str::to_string)
        .or(run.prompt.clone())
        .filter(|p| !p.is_empty())
        .ok_or_else(|| TestError::NoPrompt(run_id.to_string()))?;
    let expected = run
        .answer
        .as_ref()
        .filter(|a| run.status == "ok" && !a.is_empty())
        .map(|a| json!(a));
    let calls: Vec<&str> = run.tool_calls.iter().map(|c| c.name.as_str()).collect();
    Ok(Case {
        name: format!("{}-{}", run.agent, short_id(&run.id)),
        input: json!(prompt),
        expected,
        metadata: json!({
            "run_id": run.id,
            "agent": run.agent,
            "model": run.model,
            "tool_calls": calls,
        }),
        loc: Default::default(),
    })
}

/// The end of a run id, which tells runs apart (`run_` ids start with the time in
/// microseconds, shared by runs close together, and end with a counter).
fn short_id(id: &str) -> &str {
    let id = id.strip_prefix("run_").unwrap_or(id);
    let cut = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    &id[cut..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(sql: &str) -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(&dir.path().join("k.db")).expect("db");
        db.sqlite()
            .expect("an SQLite file")
            .execute_batch(sql)
            .expect("rows");
        (dir, db)
    }

    #[test]
    fn a_run_becomes_a_case_with_its_first_prompt_answer_and_calls() {
        let (_dir, db) = logged(
            r#"INSERT INTO runs(id, agent, model, prompt, started_at, status, answer)
                 VALUES('run_18c0ffee00001', 'support', 'm1', 'later', 1.0, 'ok', 'Paris');
               INSERT INTO steps(run_id, step, part, kind, at, seq, role, body)
                 VALUES('run_18c0ffee00001', 0, 0, 'message', 1.0, 0, 'user', '{"role":"user","content":"capital?"}');
               INSERT INTO steps(run_id, step, part, kind, at, round, call_id, name, args, outcome, is_error)
                 VALUES('run_18c0ffee00001', 1, 0, 'tool', 1.0, 1, 'c1', 'search', '{}', '{}', 0);"#,
        );
        let case = case_from_log(&db, "run_18c0ffee00001").expect("case");
        assert_eq!(case.name, "support-fee00001");
        assert_eq!(case.input, json!("capital?"));
        assert_eq!(case.expected, Some(json!("Paris")));
        assert_eq!(
            case.metadata,
            json!({"run_id": "run_18c0ffee00001", "agent": "support", "model": "m1",
                   "tool_calls": ["search"]})
        );
    }

    #[test]
    fn a_failed_run_has_no_expected_and_a_run_without_prompt_is_refused() {
        let (_dir, db) = logged(
            "INSERT INTO runs(id, agent, prompt, started_at, status, answer, error)
               VALUES('r1', 'a', 'go', 1.0, 'error', 'half', 'boom');
             INSERT INTO runs(id, agent, prompt, started_at, status) VALUES('r2', 'a', '', 1.0, 'ok');",
        );
        let case = case_from_log(&db, "r1").expect("case");
        assert_eq!((case.name.as_str(), case.expected), ("a-r1", None));
        assert_eq!(case.input, json!("go"));
        let err = case_from_log(&db, "r2").expect_err("no prompt").to_string();
        assert!(err.contains("\"r2\" has no user prompt"), "{err}");
        assert!(matches!(
            case_from_log(&db, "r3"),
            Err(TestError::UnknownRun(id)) if id == "r3"
        ));
    }
}
