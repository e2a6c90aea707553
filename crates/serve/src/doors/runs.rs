//! kiln's own API for what Chat Completions cannot say: runs with sessions, context and caps,
//! waiting or not, their live events (SSE), cancellation, and sessions.

pub(crate) mod front;
pub(crate) mod peers;
pub(crate) mod stored;

use crate::body::{JsonBody, NoBody, parse};
use crate::error::ApiError;
use crate::launch::launch;
use crate::state::{AppState, session_key};
use crate::table::{RunEntry, event_json};
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// `POST /v1/runs`: the run's report when it ends, or `202` with its id (`"wait": false`).
pub async fn create(
    State(state): State<Arc<AppState>>,
    who: Principal,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    if let Some(front) = &state.front {
        return front::create(&state, front, &who, &headers, &body).await;
    }
    let (req, wait) = parse(&body)?;
    let entry = launch(&state, &who, req).await?;
    if !wait {
        return Ok((StatusCode::ACCEPTED, Json(entry.status())).into_response());
    }
    entry.wait().await;
    Ok(Json(entry.status()).into_response())
}

/// `POST /v1/runs/{id}/approvals/{approval}`: approves or denies a call the run waits on; the
/// run's actor may (anyone, without tokens), and so may a token granted `approve`.
pub async fn approve(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path((id, approval)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let decision = crate::table::approvals::decision(&body)?;
    // A token granted `approve` decides for any run; anyone else only for their own.
    let approver = who.may_decide_all();
    let decider = Principal {
        every_run: approver,
        ..who.clone()
    };
    if let Some(front) = &state.front {
        let status = front::decide(front, &decider, &id, &approval, &decision).await?;
        tracing::info!(run_id = %id, approval = %approval, actor = ?who.actor, "approval decided");
        return Ok(Json(status));
    }
    let Some(entry) = state.runs.get(&id, &decider) else {
        // Another server's run, when they share a database.
        let shared = peers::decide(&state, &decider, (&id, &approval), &decision);
        return shared.await.unwrap_or_else(|| Err(no_run(&id))).map(Json);
    };
    entry.approvals.decide(&approval, decision)?;
    tracing::info!(run_id = %id, approval = %approval, actor = ?who.actor, "approval decided");
    if !who.sees(entry.owner.as_deref()) {
        // An approver deciding another actor's run learns nothing more of it (as at the
        // durable door): not its report, even when the run ended meanwhile.
        return Ok(Json(json!({"id": id, "agent": null, "status": "running"})));
    }
    Ok(Json(entry.status()))
}

fn find(state: &AppState, id: &str, who: &Principal) -> Result<Arc<RunEntry>, ApiError> {
    state.runs.get(id, who).ok_or_else(|| no_run(id))
}

fn no_run(id: &str) -> ApiError {
    ApiError::not_found("run_not_found", format!("no run \"{id}\""))
}

/// `?wait=true`.
#[derive(Deserialize)]
pub struct WaitQuery {
    #[serde(default)]
    wait: bool,
}

/// `GET /v1/runs/{id}`: the run's status, report and error (`?wait=true` waits for its end);
/// a run this server does not hold (it restarted since) as the run log keeps it.
pub async fn get(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Json<Value>, ApiError> {
    if let Some(front) = &state.front {
        return front::get(front, &who, &id, q.wait).await.map(Json);
    }
    let Some(entry) = state.runs.get(&id, &who) else {
        // Not held here (a restart since, forgotten, or another server's): the run log's.
        let mut row = stored::find(&state, &who, &id)?.ok_or_else(|| no_run(&id))?;
        // Another server sharing the database runs it: its end is read until it is there.
        while q.wait && row.shown_status() == "running" {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            row = stored::find(&state, &who, &id)?.ok_or_else(|| no_run(&id))?;
        }
        return Ok(Json(stored::status(&state, &row)));
    };
    if q.wait {
        entry.wait().await;
    }
    Ok(Json(entry.status()))
}

/// `GET /v1/runs/{id}/events`: every event of the run as SSE (`event: NAME`, JSON data),
/// from its start, ending with `end`; for a run this server does not hold, its stored steps
/// and its end.
pub async fn events(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if let Some(front) = &state.front {
        return front::events(front, &who, &id).await;
    }
    let sse = |(name, data): (&'static str, Value)| {
        Ok::<_, std::convert::Infallible>(SseEvent::default().event(name).data(data.to_string()))
    };
    let Some(entry) = state.runs.get(&id, &who) else {
        // Not held here (a restart since, or forgotten): the run log's steps, then its end.
        let row = stored::find(&state, &who, &id)?.ok_or_else(|| no_run(&id))?;
        let replay = futures_util::stream::iter(stored::events(&state, &row)).map(sse);
        return Ok(Sse::new(replay).into_response());
    };
    let stream = entry.events().map(move |ev| sse(event_json(&ev)));
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// `POST /v1/runs/{id}/cancel` (no body, or JSON): asks the run to stop; it ends with a
/// `cancelled` error.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
    _: NoBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if let Some(front) = &state.front {
        return front::cancel(front, &who, &id).await;
    }
    let entry = find(&state, &id, &who)?;
    entry.cancel.cancel();
    Ok((StatusCode::ACCEPTED, Json(entry.status())))
}

/// `POST /v1/runs/{id}/input` with `{"text": "..."}`: adds a person's message to the running
/// run, delivered before its next model request (202, with how many wait); 409 once the run
/// has ended or was cancelled. Through Restate, the run's workflow takes it (a session turn
/// takes none: 409 `steering_unsupported`).
pub async fn input(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Some(text) = body["text"].as_str() else {
        return Err(ApiError::bad_request(
            "text",
            "text must be the message to add",
        ));
    };
    if let Some(front) = &state.front {
        return front::input(front, &who, &id, text).await;
    }
    let entry = find(&state, &id, &who)?;
    match entry.steering.add(text) {
        Ok(waiting) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({"run": id, "waiting": waiting})),
        )),
        Err(kiln_agent::steer::SteerError::Ended) => Err(ApiError::conflict(
            "run_ended",
            "the run has ended: nothing more reaches it",
        )),
        Err(e) => Err(ApiError::bad_request("text", e.to_string())),
    }
}

fn db(state: &AppState) -> Result<&Arc<kiln_db::Db>, ApiError> {
    state
        .host
        .database()
        .ok_or_else(|| ApiError::not_found("session_not_found", "the server has no database"))
}

/// `GET /v1/sessions/{name}`: the session's agent, messages and state.
pub async fn session(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if let Some(front) = &state.front {
        return front::session(front, &who, &name).await.map(Json);
    }
    let saved = db(&state)?
        .session(&session_key(&who, &name)?)
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or_else(|| {
            ApiError::not_found("session_not_found", format!("no session \"{name}\""))
        })?;
    Ok(Json(json!({
        "name": name,
        "agent": saved.agent,
        "messages": saved.messages,
        "state": saved.state,
        "updated_at": saved.updated_at,
    })))
}

/// `DELETE /v1/sessions/{name}`.
pub async fn delete_session(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if let Some(front) = &state.front {
        return front::delete_session(front, &who, &name).await;
    }
    let db = db(&state)?;
    let key = session_key(&who, &name)?;
    let exists = db
        .session(&key)
        .map_err(|e| ApiError::internal(e.to_string()))?
        .is_some();
    if !exists {
        return Err(ApiError::not_found(
            "session_not_found",
            format!("no session \"{name}\""),
        ));
    }
    // Not while a run continues it: wait for that run to end first.
    let lock = state.session_lock(&key);
    let _held = lock.lock().await;
    db.delete_session(&key)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}
