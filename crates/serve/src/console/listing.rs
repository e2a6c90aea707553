//! Who the caller is (`GET /v1/me`), the runs it may see (`GET /v1/runs`: the ones this
//! server holds, live, and the run log's, newest first), and the live feed of what it may
//! see (`GET /v1/events`).

use crate::error::ApiError;
use crate::state::AppState;
use crate::table::{RunEntry, api_status};
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::broadcast;

/// How long one `GET /v1/events` stream lasts before the client must connect (and show its
/// token) again.
const FEED_LIFETIME: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs listed when the request names no limit, and the most it may ask.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

/// `GET /v1/me`: the caller's actor, ceiling and whether it decides every run's approvals,
/// and the trace viewer's link template, for the console.
pub async fn me(State(state): State<Arc<AppState>>, who: Principal) -> Json<Value> {
    let caps: Vec<String> = who
        .ceiling
        .as_ref()
        .map(|c| c.iter().map(|g| g.to_string()).collect())
        .unwrap_or_default();
    Json(json!({
        "actor": who.actor,
        "open": who.is_open(),
        "caps": caps,
        "approver": who.may_decide_all(),
        "trace_url": state.options.trace_url,
        // Runs go through Restate (`--restate-ingress`): their approvals are not in the feed.
        "durable": state.front.is_some(),
    }))
}

/// `GET /v1/runs`'s filters.
#[derive(Deserialize, Default)]
pub struct RunsQuery {
    agent: Option<String>,
    status: Option<String>,
    actor: Option<String>,
    limit: Option<usize>,
}

/// The status words a run has in a listing; the run log's `ok` and `error` are said as the
/// API says them.
const STATUSES: [&str; 6] = [
    "running",
    "awaiting_approval",
    "completed",
    "failed",
    "cancelled",
    "interrupted",
];

/// The run log's word for a listing's status: a run waiting for a person, or whose process
/// is gone, is `running` there.
fn logged_status(status: &str) -> &str {
    match status {
        "completed" => "ok",
        "failed" => "error",
        "awaiting_approval" | "interrupted" => "running",
        other => other,
    }
}

fn live_row(entry: &RunEntry) -> Value {
    json!({
        "id": entry.id, "agent": entry.agent, "status": entry.status_word(),
        "actor": entry.owner, "started_at": entry.started_at, "ended_at": null,
        "rounds": null, "input_tokens": null, "output_tokens": null, "cost_usd": null,
        "error": null, "waiting": entry.approvals.waiting().len(),
    })
}

fn logged_row(row: &kiln_db::runs::RunRow) -> Value {
    json!({
        "id": row.id, "agent": row.agent, "status": api_status(row.shown_status()),
        "actor": row.actor, "started_at": row.started_at, "ended_at": row.ended_at,
        "rounds": row.rounds, "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens, "cost_usd": row.cost_usd,
        "error": row.error.as_deref().map(kiln_core::error::public::scrub), "waiting": 0,
    })
}

/// `GET /v1/runs?agent=&status=&actor=&limit=`: the runs the caller may see, newest first.
/// A token sees its actor's runs only; the open server's one caller sees every run.
pub async fn runs(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Query(q): Query<RunsQuery>,
) -> Result<Json<Value>, ApiError> {
    if let Some(status) = q.status.as_deref().filter(|s| !STATUSES.contains(s)) {
        return Err(ApiError::bad_request(
            "status",
            format!(
                "unknown status \"{status}\" (one of {})",
                STATUSES.join(", ")
            ),
        ));
    }
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let wanted = |agent: &str, status: &str, actor: Option<&str>| {
        q.agent.as_deref().is_none_or(|a| a == agent)
            && q.status.as_deref().is_none_or(|s| s == status)
            && q.actor.as_deref().is_none_or(|a| Some(a) == actor)
    };
    let live: HashMap<String, Arc<RunEntry>> = state
        .runs
        .visible(&who)
        .into_iter()
        .map(|e| (e.id.clone(), e))
        .collect();
    let mut rows = Vec::new();
    let mut logged_ids = HashSet::new();
    if let Some(db) = state.host.database() {
        let filter = kiln_db::runs::LogFilter {
            agent: q.agent.clone(),
            // A token's runs only; the open server's caller reads the whole log.
            actor: if who.is_open() {
                q.actor.clone()
            } else {
                who.actor.clone()
            },
            status: q.status.as_deref().map(logged_status).map(str::to_string),
            limit,
            ..Default::default()
        };
        let logged = db
            .run_rows(&filter)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        for row in &logged {
            logged_ids.insert(row.id.clone());
            let mut shown = logged_row(row);
            // A run this server holds says its live status (waiting for a person, say).
            if let Some(entry) = live.get(&row.id) {
                shown["status"] = json!(entry.status_word());
                shown["waiting"] = json!(entry.approvals.waiting().len());
            }
            rows.push(shown);
        }
    }
    for entry in live.values().filter(|e| !logged_ids.contains(&e.id)) {
        rows.push(live_row(entry));
    }
    rows.retain(|r| {
        let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
        wanted(&text("agent"), &text("status"), r["actor"].as_str())
    });
    rows.sort_by(|a, b| {
        let at = |v: &Value| v["started_at"].as_f64().unwrap_or(0.0);
        at(b).total_cmp(&at(a))
    });
    rows.truncate(limit);
    Ok(Json(json!({ "runs": rows })))
}

/// `GET /v1/events`: the feed as SSE, from now on, filtered for the caller. A listener that
/// fell behind gets a `lagged` event (reload what is shown) and goes on.
pub async fn events(
    State(state): State<Arc<AppState>>,
    who: Principal,
) -> Result<Response, ApiError> {
    let rx = state.feed.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(item) => Some((Some(item), rx)),
            Err(broadcast::error::RecvError::Lagged(_)) => Some((None, rx)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    })
    // The stream ends after a while and the page connects again, so its token is checked
    // again (an access token that expired or was revoked stops hearing).
    .take_until(tokio::time::sleep(FEED_LIFETIME))
    .filter_map(move |item| {
        let shown = match item {
            Some(item) if crate::feed::visible(&who, &item) => Some(
                SseEvent::default()
                    .event(item.event)
                    .data(item.data.to_string()),
            ),
            Some(_) => None,
            None => Some(SseEvent::default().event("lagged").data("{}")),
        };
        std::future::ready(shown.map(Ok::<_, std::convert::Infallible>))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
