//! The front door of a fleet (`kiln serve --restate-ingress URL`): `/v1/runs` on any worker
//! submits to Restate's ingress instead of running in this process, so a run outlives the
//! worker that took the request, and any worker answers for any run by attaching to its
//! invocation. The walls are the same as for a local run: the token, its ceiling and the
//! server's (the grants go with the run, and the worker cuts them to its own ceiling again).
//!
//! A run's id is its Restate invocation id (also its id in the run log). Without a session a
//! run is a `KilnRun` workflow keyed by the request's idempotency key, with one a `KilnSession`
//! turn sent with it: the same key again is the same run. Keys are scoped by the token's actor,
//! which is also how a run's owner is told from another's. `/v1/sessions/{name}` reads and
//! clears the session's Virtual Object.

use crate::error::ApiError;
use crate::launch::{find_agent, grants_for};
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use kiln_core::capability::GrantMode;
use kiln_restate::{DurableError, Invocation, Outcome, RestateClient, Target, key_segment};
use serde_json::{Value, json};
use std::sync::Arc;

/// The header a client names its request with, so a retry of it runs once.
const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Longest idempotency key taken from a client.
const MAX_KEY: usize = 256;

pub(crate) fn restate_error(e: DurableError) -> ApiError {
    match e {
        DurableError::Unreachable { .. } => ApiError::unavailable(e.to_string()),
        _ => ApiError::upstream(e.to_string()),
    }
}

/// `text` under the actor's prefix: actors cannot reach each other's runs or sessions.
pub(crate) fn scoped(who: &Principal, text: &str) -> String {
    match &who.actor {
        Some(actor) => format!("{}/{text}", key_segment(actor)),
        None => text.to_string(),
    }
}

/// The client's `Idempotency-Key`, or a new one.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(v) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(uuid::Uuid::new_v4().to_string());
    };
    match v.to_str() {
        Ok(k) if !k.trim().is_empty() && k.len() <= MAX_KEY => Ok(k.trim().to_string()),
        _ => Err(ApiError::bad_request(
            "Idempotency-Key",
            format!("the Idempotency-Key header must be 1 to {MAX_KEY} visible ASCII characters"),
        )),
    }
}

/// `POST /v1/runs` through Restate: the same body and answers as a local run.
pub(crate) async fn create(
    state: &Arc<AppState>,
    front: &RestateClient,
    who: &Principal,
    headers: &HeaderMap,
    body: &Value,
) -> Result<Response, ApiError> {
    let (req, wait) = crate::body::parse(body)?;
    if state.draining() {
        return Err(ApiError::unavailable("the server is shutting down"));
    }
    let agent = find_agent(state, &req.agent)?;
    if agent.mode == kiln_registry::agent_spec::AgentMode::JsonPlanner {
        return Err(ApiError::bad_request(
            "agent",
            format!(
                "agent \"{}\" is a json_planner agent; durable runs support the tool-calling loop only",
                req.agent
            ),
        ));
    }
    let grants = grants_for(state, who, &agent.grants, &req)?;
    let caps: Vec<String> = grants.iter().map(|g| g.cap.to_string()).collect();
    let ask: Vec<String> = grants
        .iter()
        .filter(|g| g.mode == GrantMode::NeedsApproval)
        .map(|g| g.cap.to_string())
        .collect();
    let input = json!({
        "agent": req.agent,
        "prompt": req.prompt,
        "context": req.context,
        "actor": who.actor.clone().or(req.actor),
        "caps": caps,
        "ask": ask,
    });
    let key = idempotency_key(headers)?;
    let (target, target_key) = match &req.session {
        Some(session) => {
            crate::state::check_session_name(session)?;
            (Target::Session, scoped(who, session))
        }
        None => (Target::Run, scoped(who, &key)),
    };
    let id = front
        .submit(target, &target_key, &key, &input)
        .await
        .map_err(restate_error)?;
    tracing::info!(run_id = %id, agent = %req.agent, actor = ?who.actor, "run submitted to Restate");
    if !wait {
        let running = json!({"id": id, "agent": req.agent, "status": "running"});
        return Ok((StatusCode::ACCEPTED, Json(running)).into_response());
    }
    let outcome = front.attach(&id).await.map_err(restate_error)?;
    Ok(Json(ended(&id, Some(&req.agent), outcome)).into_response())
}

/// A run's status as a local run's (`{id, agent, status, report?, error?}`).
fn ended(id: &str, agent: Option<&str>, outcome: Outcome) -> Value {
    match outcome {
        Outcome::Output(report) => json!({
            "id": id,
            "agent": report.get("agent").cloned().unwrap_or(json!(agent)),
            "status": "completed",
            "report": kiln_core::error::public::report(report),
        }),
        Outcome::Failed { code, message } => {
            let (status, kind) = match code {
                409 => ("cancelled", "cancelled"),
                504 => ("failed", "deadline"),
                403 => ("failed", "capability"),
                400 | 404 => ("failed", "invalid_request"),
                _ => ("failed", "error"),
            };
            json!({
                "id": id,
                "agent": agent,
                "status": status,
                "error": {"kind": kind, "message": kiln_core::error::public::scrub(&message)},
            })
        }
    }
}

/// The invocation `id` if it is a run `who` may see.
async fn find(front: &RestateClient, who: &Principal, id: &str) -> Result<Invocation, ApiError> {
    let inv = front.lookup(id).await.map_err(restate_error)?;
    let owned = |inv: &Invocation| {
        matches!(inv.service.as_str(), "KilnRun" | "KilnSession") && who.sees_key(&inv.key)
    };
    inv.filter(owned)
        .ok_or_else(|| ApiError::not_found("run_not_found", format!("no run \"{id}\"")))
}

/// `GET /v1/runs/{id}` through Restate: any worker answers for any run.
pub(crate) async fn get(
    front: &RestateClient,
    who: &Principal,
    id: &str,
    wait: bool,
) -> Result<Value, ApiError> {
    let inv = find(front, who, id).await?;
    if !(wait || inv.completed()) {
        return Ok(running(front, id, &inv).await);
    }
    let outcome = front.attach(id).await.map_err(restate_error)?;
    Ok(ended(id, None, outcome))
}

/// A running run's status: `awaiting_approval` with the approvals it waits for, else
/// `running`.
async fn running(front: &RestateClient, id: &str, inv: &Invocation) -> Value {
    match open_approvals(front, inv).await {
        waiting if waiting.is_empty() => json!({"id": id, "agent": null, "status": "running"}),
        waiting => json!({
            "id": id, "agent": null, "status": "awaiting_approval", "approvals": waiting,
        }),
    }
}

/// The approvals run `inv` waits for now, past-deadline ones left out (none where Restate
/// cannot say).
pub(crate) async fn open_approvals(front: &RestateClient, inv: &Invocation) -> Vec<Value> {
    match front.approvals(inv).await {
        Ok(Value::Array(waiting)) => open(waiting, now_ms()),
        _ => Vec::new(),
    }
}

/// Durable runs looked at for `GET /v1/approvals` at most, and asked at once.
const INBOX_RUNS: usize = 200;
const INBOX_AT_ONCE: usize = 8;

/// The approvals durable runs wait for that `who` may decide (its own runs', or every run's
/// for a token granted `approve`), as the inbox lists them; a run Restate cannot describe is
/// left out.
pub(crate) async fn inbox(front: &RestateClient, who: &Principal) -> Result<Vec<Value>, ApiError> {
    use futures_util::StreamExt;
    let actor = match (who.may_decide_all(), &who.actor) {
        (true, _) => None,
        (false, Some(actor)) => Some(actor.as_str()),
        // The open server's one caller: its runs are keyed without an actor.
        (false, None) => None,
    };
    let runs = front
        .unfinished_runs(actor, INBOX_RUNS)
        .await
        .map_err(restate_error)?;
    let runs: Vec<_> = runs
        .into_iter()
        .filter(|(_, inv)| who.may_decide_all() || who.sees_key(&inv.key))
        .collect();
    let now = now_ms();
    let asked = futures_util::stream::iter(runs)
        .map(|(id, inv)| async move { (id, front.approvals(&inv).await) })
        .buffer_unordered(INBOX_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    let mut rows = Vec::new();
    for (id, waiting) in asked {
        let Ok(Value::Array(waiting)) = waiting else {
            continue;
        };
        for a in waiting {
            let expires = a["expires_at"].as_u64();
            if expires.is_some_and(|at| at <= now) {
                continue;
            }
            rows.push(json!({
                "run": id, "id": a["id"], "capability": a["capability"],
                "question": a["question"], "tool": a.get("tool"), "args": a.get("args"),
                "asked_at": a["asked_at"].as_u64().map(|ms| ms as f64 / 1000.0),
                "expires_at": expires.map(|ms| ms as f64 / 1000.0),
            }));
        }
    }
    Ok(rows)
}

/// The approvals whose deadline (`expires_at`, ms since the epoch) is after `now`, as
/// `{id, capability, question}`: one past its deadline is denied even while no worker runs
/// the run to say so.
fn open(waiting: Vec<Value>, now: u64) -> Vec<Value> {
    waiting
        .into_iter()
        .filter(|a| a["expires_at"].as_u64().is_none_or(|at| at > now))
        .map(|mut a| {
            if let Some(a) = a.as_object_mut() {
                a.remove("expires_at");
            }
            a
        })
        .collect()
}

fn now_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `POST /v1/runs/{id}/approvals/{approval}` through Restate: the decision goes to the
/// approval's one writer in Restate (from whichever worker), which takes the first decision
/// made before the deadline and resolves the durable promise the run waits on. A decision
/// that came too late is a `409` with the decision that won (`error.decision`).
pub(crate) async fn decide(
    front: &RestateClient,
    who: &Principal,
    id: &str,
    approval: &str,
    decision: &crate::table::approvals::Decision,
) -> Result<Value, ApiError> {
    find(front, who, id).await?;
    let value = match decision {
        crate::table::approvals::Decision::Approve => json!({"decision": "approve"}),
        crate::table::approvals::Decision::Deny(reason) => {
            json!({"decision": "deny", "reason": reason})
        }
    };
    let answer = front
        .decide(id, approval, &value)
        .await
        .map_err(restate_error)?;
    let won = &answer["decision"];
    if won.is_null() {
        return Err(ApiError::not_found(
            "approval_not_found",
            format!("no approval \"{approval}\" was asked in this run"),
        ));
    }
    if answer["taken"] != true {
        return Err(crate::table::approvals::decided_already(approval, won));
    }
    Ok(json!({"id": id, "agent": null, "status": "running"}))
}

/// `POST /v1/runs/{id}/cancel` through Restate: the invocation is cancelled there, and the run
/// ends as cancelled at its next step on whichever worker runs it.
pub(crate) async fn cancel(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let inv = find(front, who, id).await?;
    if !inv.completed() {
        front.cancel(id).await.map_err(restate_error)?;
    }
    let status = if inv.completed() {
        ended(id, None, front.attach(id).await.map_err(restate_error)?)
    } else {
        json!({"id": id, "agent": null, "status": "running"})
    };
    Ok((StatusCode::ACCEPTED, Json(status)))
}

/// `POST /v1/runs/{id}/input` through Restate: the message goes to the run's workflow (its
/// `input` handler) or, for a session's turn, its `KilnInbox`, whichever worker runs it.
pub(crate) async fn input(
    front: &RestateClient,
    who: &Principal,
    id: &str,
    text: &str,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let inv = find(front, who, id).await?;
    let ended = || ApiError::conflict("run_ended", "the run has ended: nothing more reaches it");
    if inv.completed() {
        return Err(ended());
    }
    match front.input(&inv, id, text).await {
        Ok(answer) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({"run": id, "waiting": answer["waiting"]})),
        )),
        Err(DurableError::Answered { status: 409, .. }) => Err(ended()),
        Err(DurableError::Answered { status: 429, .. }) => Err(ApiError::conflict(
            "too_many_messages",
            format!(
                "a run through Restate takes at most {} messages",
                kiln_agent::steer::MAX_QUEUED
            ),
        )),
        Err(DurableError::Answered { status: 400, .. }) => Err(ApiError::bad_request(
            "text",
            format!(
                "a message holds 1 to {} bytes",
                kiln_agent::steer::MAX_MESSAGE_BYTES
            ),
        )),
        Err(e) => Err(restate_error(e)),
    }
}

/// `GET /v1/runs/{id}/events` through Restate: the run's steps happen on other workers, so
/// the stream has its end only (as `end`, when the run ends).
pub(crate) async fn events(
    front: &RestateClient,
    who: &Principal,
    id: &str,
) -> Result<Response, ApiError> {
    find(front, who, id).await?;
    let (front, id) = (front.clone(), id.to_string());
    let end = futures_util::stream::once(async move {
        let data = match front.attach(&id).await {
            Ok(outcome) => ended(&id, None, outcome),
            Err(e) => {
                json!({"id": id, "status": "unknown", "error": {"kind": "restate", "message": e.to_string()}})
            }
        };
        Ok::<_, std::convert::Infallible>(SseEvent::default().event("end").data(data.to_string()))
    });
    Ok(Sse::new(end)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The session `name` of `who` as Restate keeps it, or the `404` naming it.
async fn session_of(front: &RestateClient, who: &Principal, name: &str) -> Result<Value, ApiError> {
    crate::state::check_session_name(name)?;
    let key = scoped(who, name);
    let session = front
        .session(&key, "describe")
        .await
        .map_err(restate_error)?;
    if session["agent"].is_null() {
        return Err(ApiError::not_found(
            "session_not_found",
            format!("no session \"{name}\""),
        ));
    }
    Ok(session)
}

/// `GET /v1/sessions/{name}` through Restate: the session's agent, messages and state.
pub(crate) async fn session(
    front: &RestateClient,
    who: &Principal,
    name: &str,
) -> Result<Value, ApiError> {
    let mut session = session_of(front, who, name).await?;
    session["name"] = json!(name);
    Ok(session)
}

/// `DELETE /v1/sessions/{name}` through Restate (after the turn running now, if any).
pub(crate) async fn delete_session(
    front: &RestateClient,
    who: &Principal,
    name: &str,
) -> Result<StatusCode, ApiError> {
    session_of(front, who, name).await?;
    front
        .session(&scoped(who, name), "clear")
        .await
        .map_err(restate_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_past_its_deadline_is_no_longer_pending() {
        let waiting = vec![
            json!({"id": "a", "capability": "net", "question": "q", "expires_at": 1000}),
            json!({"id": "b", "capability": "net", "question": "q", "expires_at": 3000}),
            json!({"id": "c", "capability": "net", "question": "q"}),
        ];
        let open = open(waiting, 1000);
        assert_eq!(
            open,
            vec![
                json!({"id": "b", "capability": "net", "question": "q"}),
                json!({"id": "c", "capability": "net", "question": "q"}),
            ]
        );
    }
}
