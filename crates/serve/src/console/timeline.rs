//! A run's story for the console (`GET /v1/runs/{id}/timeline`): each round's model request
//! (who answered, tokens, duration), the tool calls it made with their arguments, results or
//! errors and durations, code mode's nested calls under their program, the approvals asked
//! and how they were decided, the output, the cost and the trace. Read from the run log, with
//! what only the live run knows (its approvals, its typed output) added when the server holds
//! it. The caller sees what `GET /v1/runs/{id}` would show it: its own runs only.

use crate::error::ApiError;
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, State};
use kiln_agent::Event;
use kiln_db::runs::{RunRow, ToolRow};
use serde_json::{Value, json};
use std::sync::Arc;

/// A logged call as the timeline shows it: the error without its detail (script positions
/// stay in the server's log), nested calls empty until placed.
fn call_json(call: &ToolRow) -> Value {
    let error = call.outcome.get("error").map(|e| {
        json!({"kind": e["kind"], "message": kiln_core::error::public::scrub(e["message"].as_str().unwrap_or(""))})
    });
    json!({
        "call_id": call.call_id, "name": call.name, "args": call.args,
        "result": if call.is_error { Value::Null } else { call.outcome["result"].clone() },
        "error": error, "duration_ms": call.duration_ms, "nested": [],
        "notes": call.notes,
    })
}

/// The calls of one round with each nested call (`ID/N`) under the call `ID` that made it,
/// at any depth.
fn nest(calls: &[&ToolRow]) -> Vec<Value> {
    fn place(into: &mut [Value], parent: &str, call: Value) -> Result<(), Value> {
        for node in into.iter_mut() {
            let id = node["call_id"].as_str().unwrap_or_default().to_string();
            if id == parent {
                if let Some(list) = node["nested"].as_array_mut() {
                    list.push(call);
                }
                return Ok(());
            }
            if let Some(list) = node["nested"].as_array_mut()
                && parent.starts_with(&format!("{id}/"))
            {
                return place(list, parent, call);
            }
        }
        Err(call)
    }
    let mut top = Vec::new();
    for call in calls {
        let shown = call_json(call);
        let parent = call
            .call_id
            .as_deref()
            .and_then(|id| id.rsplit_once('/'))
            .map(|(parent, _)| parent.to_string());
        match parent {
            Some(parent) => {
                if let Err(orphan) = place(&mut top, &parent, shown) {
                    top.push(orphan);
                }
            }
            None => top.push(shown),
        }
    }
    top
}

/// The rounds of a logged run: each model reply with the calls its round made.
fn rounds(row: &RunRow) -> Vec<Value> {
    let mut numbers: Vec<i64> = row.model_calls.iter().map(|m| m.round).collect();
    numbers.extend(row.tool_calls.iter().map(|c| c.round));
    numbers.sort_unstable();
    numbers.dedup();
    numbers
        .into_iter()
        .map(|round| {
            let model = row.model_calls.iter().find(|m| m.round == round);
            let calls: Vec<&ToolRow> = row.tool_calls.iter().filter(|c| c.round == round).collect();
            json!({
                "round": round,
                "provider": model.and_then(|m| m.provider.clone()),
                "model": model.and_then(|m| m.model.clone()),
                "input_tokens": model.and_then(|m| m.input_tokens),
                "output_tokens": model.and_then(|m| m.output_tokens),
                "duration_ms": model.and_then(|m| m.duration_ms),
                "stop_reason": model.and_then(|m| m.stop_reason.clone()),
                "tool_calls": nest(&calls),
            })
        })
        .collect()
}

/// The approvals a live run asked, in order, with the decision that took effect (`null`:
/// still waiting) and the call's arguments.
fn approvals(entry: &RunEntry) -> Vec<Value> {
    entry
        .approvals
        .history()
        .into_iter()
        .map(|(asked, decision)| {
            let args = asked
                .args
                .clone()
                .or_else(|| entry.asking_args(asked.call_id.as_deref(), asked.tool.as_deref()));
            json!({
                "id": asked.id, "capability": asked.capability, "question": asked.question,
                "tool": asked.tool, "args": args, "asked_at": asked.asked_at,
                "expires_at": asked.expires_at, "decision": decision,
            })
        })
        .collect()
}

/// The run `id` the caller may see: the server's entry, its run log row, or both.
fn find(
    state: &AppState,
    who: &Principal,
    id: &str,
) -> Result<(Option<Arc<RunEntry>>, Option<RunRow>), ApiError> {
    let entry = state.runs.get(id, who);
    let row = match state.host.database() {
        Some(db) => db
            .run(id)
            .map_err(|e| ApiError::internal(e.to_string()))?
            .filter(|r| entry.is_some() || who.is_open() || r.actor == who.actor),
        None => None,
    };
    if entry.is_none() && row.is_none() {
        return Err(ApiError::not_found(
            "run_not_found",
            format!("no run \"{id}\""),
        ));
    }
    Ok((entry, row))
}

/// `GET /v1/runs/{id}/timeline`.
pub async fn timeline(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if state.front.is_some() && state.runs.get(&id, &who).is_none() {
        return Err(ApiError::not_found(
            "timeline_unavailable",
            "a durable run's timeline is in the run log of the worker that ran it (kiln logs there)",
        ));
    }
    let (entry, row) = find(&state, &who, &id)?;
    let mut shown = match &row {
        Some(row) => json!({
            "id": row.id, "agent": row.agent, "actor": row.actor,
            "status": crate::table::api_status(row.shown_status()),
            "provider": row.provider, "model": row.model, "prompt": row.prompt,
            "answer": row.answer, "output": null,
            "error": row.error.as_deref().map(kiln_core::error::public::scrub),
            "started_at": row.started_at, "ended_at": row.ended_at, "cost_usd": row.cost_usd,
            "usage": {"input_tokens": row.input_tokens, "output_tokens": row.output_tokens},
            "trace_id": row.trace_id, "rounds": rounds(row), "approvals": [],
        }),
        None => json!({"id": id, "rounds": [], "approvals": [], "usage": {}}),
    };
    if let Some(entry) = &entry {
        live_parts(&mut shown, entry);
    }
    let trace_url = match (&state.options.trace_url, shown["trace_id"].as_str()) {
        (Some(template), Some(trace)) => Some(template.replace("{trace_id}", trace)),
        _ => None,
    };
    shown["trace_url"] = json!(trace_url);
    // The agent's budget as loaded now (the run log keeps what was spent, not the limits).
    let budget = shown["agent"]
        .as_str()
        .and_then(|a| state.host.agent(a).ok())
        .map(|a| json!(a.contract.budget));
    shown["budget"] = budget.unwrap_or(Value::Null);
    Ok(Json(shown))
}

/// What only the server's entry knows: the live status, the approvals, and once ended the
/// report's output, cost and usage (for a server without a run log, all of the run).
fn live_parts(shown: &mut Value, entry: &RunEntry) {
    shown["status"] = json!(entry.status_word());
    shown["agent"] = json!(entry.agent);
    shown["approvals"] = json!(approvals(entry));
    if shown["started_at"].is_null() {
        shown["started_at"] = json!(entry.started_at);
        shown["actor"] = json!(entry.owner);
    }
    let Some(end) = entry.end() else {
        return;
    };
    let Event::Finished(result) = &*end else {
        return;
    };
    let report = match &**result {
        Ok(r) => r,
        Err(e) => &e.report,
    };
    shown["output"] = json!(report.output);
    if shown["rounds"].as_array().is_none_or(Vec::is_empty) {
        shown["answer"] = json!(report.answer);
        shown["cost_usd"] = json!(report.cost_usd);
        shown["trace_id"] = json!(report.trace_id);
        shown["usage"] = json!({
            "input_tokens": report.usage.input_tokens, "output_tokens": report.usage.output_tokens,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str) -> ToolRow {
        ToolRow {
            round: 1,
            name: name.into(),
            args: json!({}),
            outcome: json!({"success": true, "result": name}),
            is_error: false,
            duration_ms: 1.0,
            script_version: None,
            call_id: Some(id.into()),
            notes: json!([]),
        }
    }

    #[test]
    fn a_programs_calls_sit_under_it_at_any_depth() {
        let calls = [
            call("c1", "run_code"),
            call("c1/1", "search"),
            call("c1/1/1", "fetch"),
            call("c1/2", "save"),
            call("c2", "other"),
            call("gone/1", "orphan"),
        ];
        let refs: Vec<&ToolRow> = calls.iter().collect();
        let shown = nest(&refs);
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| c["name"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(names(&json!(shown)), ["run_code", "other", "orphan"]);
        assert_eq!(names(&shown[0]["nested"]), ["search", "save"]);
        assert_eq!(names(&shown[0]["nested"][0]["nested"]), ["fetch"]);
        assert_eq!(shown[0]["result"], "run_code");
    }
}
