//! The approvals inbox (`GET /v1/approvals`): every approval the caller may decide, across
//! runs, with its question, the tool and its arguments, when it was asked and its deadline.
//! A token granted `approve` sees every actor's waiting approvals this way, and nothing else
//! of those runs (`GET /v1/runs/{id}` stays 404 for it).

use crate::error::ApiError;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /v1/approvals`: `{"approvals": [{run, id, capability, question, tool, args,
/// asked_at, expires_at}]}`, oldest first; durable runs' too under `--restate-ingress`.
pub async fn approvals(
    State(state): State<Arc<AppState>>,
    who: Principal,
) -> Result<Json<Value>, ApiError> {
    let mut rows: Vec<Value> = state
        .runs
        .awaiting(&who)
        .iter()
        .flat_map(|entry| entry.inbox())
        .collect();
    // The other servers' runs, when they share a database.
    let elsewhere = crate::doors::runs::peers::waiting_elsewhere(&state, &who, &rows).await;
    rows.extend(elsewhere);
    // Restate out of reach leaves this server's own approvals listed (and says so).
    let mut durable_error = None;
    if let Some(front) = &state.front {
        match crate::doors::runs::front::inbox(front, &who).await {
            Ok(durable) => rows.extend(durable),
            Err(e) => durable_error = Some(e.message),
        }
    }
    rows.sort_by(|a, b| {
        let at = |v: &Value| v["asked_at"].as_f64().unwrap_or(0.0);
        at(a).total_cmp(&at(b))
    });
    let mut answer = json!({ "approvals": rows });
    if let Some(message) = durable_error {
        answer["durable_error"] = json!(message);
    }
    Ok(Json(answer))
}
