//! Runs this server does not hold (it restarted since, or forgot them past its table's limit),
//! as the run log keeps them: `GET /v1/runs/{id}` answers with the stored run and its status
//! (`interrupted` for one whose process is gone), and `/v1/runs/{id}/events` replays its
//! stored rounds and calls and ends with that status.

use crate::error::ApiError;
use crate::state::AppState;
use crate::table::api_status;
use crate::walls::auth::Principal;
use kiln_db::runs::{RunRow, ToolRow};
use serde_json::{Value, json};

/// The logged run `id`, when the caller may see it: its own (the open server's one caller sees
/// the whole log, as `GET /v1/runs` lists it).
pub(crate) fn find(
    state: &AppState,
    who: &Principal,
    id: &str,
) -> Result<Option<RunRow>, ApiError> {
    let Some(db) = state.host.database() else {
        return Ok(None);
    };
    let row = db
        .run(id)
        .map_err(|e| ApiError::internal(format!("reading the run log: {e}")))?;
    Ok(row.filter(|r| who.is_open() || r.actor == who.actor))
}

/// A logged call as a finished run's report shows it: the error without its detail (script
/// positions stay in the log), the calls it made (a program's) under it.
fn call_json(call: &ToolRow, nested: Vec<Value>) -> Value {
    let mut outcome = call.outcome.clone();
    if let Some(err) = outcome.get_mut("error").and_then(Value::as_object_mut) {
        err.remove("detail");
    }
    let mut shown = json!({
        "round": call.round, "id": call.call_id, "name": call.name, "args": call.args,
        "outcome": outcome, "is_error": call.is_error, "duration_ms": call.duration_ms,
    });
    if !nested.is_empty() {
        shown["nested"] = json!(nested);
    }
    shown
}

/// The run's calls, each with the calls it made (`ID/N`, at any depth) under it.
fn calls(row: &RunRow) -> Vec<Value> {
    fn under(all: &[ToolRow], parent: Option<&str>) -> Vec<Value> {
        all.iter()
            .filter(|c| {
                let id = c.call_id.as_deref().unwrap_or_default();
                match parent {
                    None => !c.is_nested(),
                    Some(p) => id
                        .strip_prefix(p)
                        .and_then(|rest| rest.strip_prefix('/'))
                        .is_some_and(|rest| !rest.contains('/')),
                }
            })
            .map(|c| {
                let nested = match c.call_id.as_deref() {
                    Some(id) if !id.is_empty() => under(all, Some(id)),
                    _ => Vec::new(),
                };
                call_json(c, nested)
            })
            .collect()
    }
    under(&row.tool_calls, None)
}

/// Why a stored run did not complete, as the API says it (`None` for a completed or still
/// running one).
fn error_json(row: &RunRow, status: &str) -> Option<Value> {
    let message = row.error.as_deref().map(kiln_core::error::public::scrub);
    match status {
        "interrupted" => Some(json!({
            "kind": "interrupted",
            "message": message.unwrap_or_else(|| "the process running it stopped before the run ended (the run log keeps its steps)".into()),
        })),
        "cancelled" => Some(
            json!({"kind": "cancelled", "message": message.unwrap_or_else(|| "the run was cancelled".into())}),
        ),
        "failed" => Some(
            json!({"kind": null, "message": message.unwrap_or_else(|| "the run failed".into())}),
        ),
        _ => None,
    }
}

/// `{id, agent, status, report, error?}` of a logged run, as `GET /v1/runs/{id}` shows a
/// finished one, with `"stored": true` (what the run log keeps: no typed output or planner
/// steps).
pub(crate) fn status(state: &AppState, row: &RunRow) -> Value {
    let status = api_status(row.shown_status());
    let messages = state
        .host
        .database()
        .and_then(|db| db.run_messages(&row.id).ok())
        .unwrap_or_default();
    let report = json!({
        "run_id": row.id, "agent": row.agent, "provider": row.provider, "model": row.model,
        "messages": messages, "tool_calls": calls(row),
        "usage": {"input_tokens": row.input_tokens, "output_tokens": row.output_tokens},
        "rounds": row.rounds, "answer": row.answer.clone().unwrap_or_default(),
        "actor": row.actor, "cost_usd": row.cost_usd, "trace_id": row.trace_id,
    });
    let mut shown = json!({
        "id": row.id, "agent": row.agent, "status": status, "stored": true,
        "started_at": row.started_at, "ended_at": row.ended_at,
        "report": kiln_core::error::public::report(report),
    });
    if let Some(error) = error_json(row, status) {
        shown["error"] = error;
    }
    if status == "running" {
        // Running on another server sharing the database: what it waits for is shared too.
        let waiting = state
            .host
            .database()
            .and_then(|db| db.approvals_waiting(Some(&row.id), kiln_db::now()).ok())
            .unwrap_or_default();
        if !waiting.is_empty() {
            shown["status"] = json!("awaiting_approval");
            shown["approvals"] = waiting
                .iter()
                .map(|a| json!({"id": a.ask.id, "capability": a.ask.capability, "question": a.ask.question}))
                .collect();
        }
    }
    shown
}

/// The events of a logged run, as its live stream sent them: each round's model request and
/// reply and the calls it made, the answer, and `end` with the stored status.
pub(crate) fn events(state: &AppState, row: &RunRow) -> Vec<(&'static str, Value)> {
    let mut rounds: Vec<i64> = row.model_calls.iter().map(|m| m.round).collect();
    rounds.extend(row.tool_calls.iter().map(|c| c.round));
    rounds.sort_unstable();
    rounds.dedup();
    let calls = calls(row);
    let mut out = Vec::new();
    for round in rounds {
        out.push(("model_request", json!({"round": round})));
        out.push(("model_reply", json!({"round": round})));
        for call in calls.iter().filter(|c| c["round"] == round) {
            let started = json!({"round": round, "id": call["id"], "name": call["name"], "args": call["args"]});
            out.push(("tool_started", started));
            out.push(("tool_finished", call.clone()));
        }
    }
    if let Some(answer) = row.answer.as_deref().filter(|a| !a.is_empty()) {
        out.push(("text", json!({"text": answer})));
    }
    out.push(("end", status(state, row)));
    out
}
