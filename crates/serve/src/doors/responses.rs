//! The Responses door: `POST /v1/responses` runs the agent named by `model` (whole, or as the
//! Responses stream), `GET /v1/responses/{id}`, `.../cancel`, `.../input_items` and `DELETE`.
//! A response continues the conversation of `previous_response_id` (its stored transcript and
//! `ctx.state`, the actor's own only); the client's function tools come back as
//! `function_call` items and the conversation goes on with their `function_call_output`s.
//! `POST /v1/responses/compact` makes a long conversation short ([`compact`]).
//! Every run is a [`launch`]ed one: the token's ceiling, limits, approvals, the run log and
//! traces hold here as on `/v1/runs`.

pub(crate) mod compact;
pub(crate) mod front;
pub(crate) mod input;
pub(crate) mod output;
pub(crate) mod parts;
pub(crate) mod stream;

use crate::body::JsonBody;
use crate::doors::chat::CancelOnDrop;
use crate::error::{ApiError, from_run_error};
use crate::launch::launch;
use crate::running::Shape;
use crate::state::AppState;
use crate::table::RunEntry;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use input::{ResponsesRequest, append_items, check_tool_names, parse, split_prompt, with_ids};
use kiln_agent::{Event, RunErrorKind};
use kiln_db::responses::StoredResponse;
use kiln_providers::ProviderError;
use output::{ending, items, now, report_of};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use stream::Streamer;

/// The prefix of a response id; the rest is the run's id.
const PREFIX: &str = "resp_";

fn db(state: &AppState) -> Option<&Arc<kiln_db::Db>> {
    state.host.database()
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("response_not_found", format!("no response \"{id}\""))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e.to_string())
}

/// The stored response `id` of the caller, or its `404`.
fn stored(state: &AppState, who: &Principal, id: &str) -> Result<StoredResponse, ApiError> {
    let db = db(state).ok_or_else(|| not_found(id))?;
    db.response(who.actor.as_deref(), id)
        .map_err(internal)?
        .ok_or_else(|| not_found(id))
}

/// The conversation a request continues: the previous response's transcript and state, and
/// the request's items appended; the system and developer messages join the instructions.
async fn conversation(
    state: &AppState,
    who: &Principal,
    req: &mut ResponsesRequest,
) -> Result<usize, ApiError> {
    let (mut messages, run_state) = match &req.previous {
        Some(prev) => {
            let stored = previous(state, who, prev).await?;
            (stored.messages, stored.state)
        }
        None => (Vec::new(), json!({})),
    };
    let mut system = Vec::new();
    append_items(&mut messages, &req.input_items, &mut system)?;
    if !system.is_empty() {
        let instructions = req.run.overrides.extra_system.take();
        system.splice(0..0, instructions);
        req.run.overrides.extra_system = Some(system.join("\n\n"));
    }
    let (history, prompt, attachments) = split_prompt(messages)?;
    let from = history.len();
    req.run.history = history;
    req.run.prompt = prompt;
    req.run.attachments = attachments;
    req.run.state = Some(Arc::new(Mutex::new(run_state)));
    Ok(from)
}

/// The stored response a request continues. One still in progress has no conversation yet,
/// so continuing it would drop its context: `409`, unless its run just ended here (then its
/// whole copy is waited for, briefly). One whose run was cut off (its server stopped) never
/// will have one.
async fn previous(
    state: &AppState,
    who: &Principal,
    prev: &str,
) -> Result<StoredResponse, ApiError> {
    let found = settled(state, who, prev).await.map_err(|_| {
        ApiError::not_found(
            "previous_response_not_found",
            format!("no stored response \"{prev}\" to continue (responses made with \"store\": false are not kept)"),
        )
        .with_field("param", json!("previous_response_id"))
    })?;
    if found.body["status"] == "in_progress" {
        let run_id = prev.strip_prefix(PREFIX).unwrap_or(prev);
        return Err(in_progress(state, prev, run_id));
    }
    Ok(found)
}

/// The stored copy of response `id`. When its run has just ended here its whole copy is
/// waited for, briefly: a stream's last event goes out before the copy is stored, and what
/// was streamed is what a `GET` right after it reads.
async fn settled(state: &AppState, who: &Principal, id: &str) -> Result<StoredResponse, ApiError> {
    let run_id = id.strip_prefix(PREFIX).unwrap_or(id).to_string();
    let mut stored_since = state.responses.on_stored();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let found = stored(state, who, id)?;
        if found.body["status"] != "in_progress" {
            return Ok(found);
        }
        let ended_here = state
            .runs
            .get(&run_id, who)
            .is_some_and(|e| e.end().is_some());
        let waited = ended_here
            && tokio::time::timeout_at(deadline, stored_since.changed())
                .await
                .is_ok_and(|r| r.is_ok());
        if !waited {
            return Ok(found);
        }
    }
}

/// The `409` for continuing `prev`, which has not ended (or never will).
fn in_progress(state: &AppState, prev: &str, run_id: &str) -> ApiError {
    let logged = db(state).and_then(|db| db.run(run_id).ok().flatten());
    let cut_off = state.responses.get(run_id).is_none()
        && logged.is_some_and(|r| r.shown_status() == "interrupted");
    let message = if cut_off {
        format!(
            "response \"{prev}\" never finished (the server running it stopped first), so it has no conversation to continue; continue the response before it, or start anew"
        )
    } else {
        format!(
            "response \"{prev}\" is still in progress; continue it once it has ended (GET /v1/responses/{prev} shows its status)"
        )
    };
    ApiError::conflict("previous_response_in_progress", message)
        .with_field("param", json!("previous_response_id"))
}

/// `POST /v1/responses`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    who: Principal,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    if let Some(front) = &state.front {
        return front::create(&state, front, &who, &headers, &body).await;
    }
    let mut req = parse(&body)?;
    if req.store && db(&state).is_none() {
        // Nothing could be kept: the response is answered, not stored.
        req.store = false;
    }
    let from = conversation(&state, &who, &mut req).await?;
    check_tool_names(&state, &req)?;
    let run_state = req.run.state.clone();
    let (stream, store, previous, echo) = (req.run.stream, req.store, req.previous, req.echo);
    let tool_notes = req.tool_notes;
    let input_items = with_ids(req.input_items);
    let entry = launch(&state, &who, req.run).await?;
    let shape = Shape {
        id: format!("{PREFIX}{}", entry.id),
        run_id: entry.id.clone(),
        agent: entry.agent.clone(),
        created_at: now(),
        previous,
        store,
        echo,
        from,
    };
    let keep = Keep {
        state: state.clone(),
        owner: who.actor.clone(),
        shape: shape.clone(),
        input_items,
        run_state,
    };
    keep.started()?;
    let ended = entry.clone();
    let kept = tokio::spawn(async move { keep.ended(&ended).await });
    if stream {
        return Ok(streamed(entry, shape, tool_notes).into_response());
    }
    let mut guard = CancelOnDrop(Some(entry.cancel.clone()));
    let end = entry.wait().await;
    guard.0 = None;
    // Answered only once the stored copy is whole, so a `GET` right after it reads the same
    // response, never the in-progress one. (The task goes on if this client goes away.)
    let _ = kept.await;
    let Event::Finished(result) = &*end else {
        return Err(ApiError::internal("the run ended without a result"));
    };
    if let Err(e) = result.as_ref() {
        // An image or file the agent's model cannot take is the request's fault: nothing was
        // sent to the model.
        if let RunErrorKind::Provider(p @ ProviderError::Unsupported { .. }) = &e.kind {
            return Err(ApiError::bad_request("input", p.to_string()));
        }
        if state.stop_runs.is_cancelled() {
            return Err(from_run_error(e));
        }
    }
    let result = result.as_ref();
    let output = items(&shape, report_of(result));
    Ok(Json(shape.object(output, &ending(result))).into_response())
}

/// A stored response kept up to date: in progress when it starts, whole when it ends.
struct Keep {
    state: Arc<AppState>,
    owner: Option<String>,
    shape: Shape,
    input_items: Vec<Value>,
    run_state: Option<Arc<Mutex<Value>>>,
}

impl Keep {
    fn row(&self, body: Value, messages: Vec<kiln_providers::Message>) -> StoredResponse {
        let state = self
            .run_state
            .as_ref()
            .and_then(|s| s.lock().ok().map(|s| s.clone()))
            .unwrap_or(Value::Null);
        StoredResponse {
            id: self.shape.id.clone(),
            owner: self.owner.clone(),
            agent: self.shape.agent.clone(),
            created_at: self.shape.created_at as f64,
            body,
            input_items: self.input_items.clone(),
            messages,
            state,
        }
    }

    fn save(&self, row: &StoredResponse) -> Result<(), ApiError> {
        match db(&self.state).filter(|_| self.shape.store) {
            Some(db) => db.save_response(row).map_err(internal),
            None => Ok(()),
        }
    }

    /// Stores the whole response over its in-progress copy, unless that was deleted meanwhile
    /// (`DELETE` while it ran): deleted stays deleted.
    fn finish(&self, row: &StoredResponse) -> Result<(), ApiError> {
        let Some(db) = db(&self.state).filter(|_| self.shape.store) else {
            return Ok(());
        };
        if !db.finish_response(row).map_err(internal)? {
            tracing::info!(response = %self.shape.id, "deleted while it ran: not stored");
        }
        Ok(())
    }

    /// The response is running: known to `cancel`, stored as in progress.
    fn started(&self) -> Result<(), ApiError> {
        self.state.responses.insert(&self.shape);
        let end = output::Ending {
            status: "in_progress",
            usage: None,
            error: Value::Null,
            incomplete: None,
        };
        self.save(&self.row(self.shape.object(Vec::new(), &end), Vec::new()))
    }

    /// The run ended: the response is stored whole (when it is kept at all, and was not
    /// deleted while it ran).
    async fn ended(self, entry: &RunEntry) {
        let end = entry.wait().await;
        self.state.responses.remove(&self.shape.run_id);
        let Event::Finished(result) = &*end else {
            return;
        };
        let result = result.as_ref();
        let report = report_of(result);
        let output = items(&self.shape, report);
        let row = self.row(
            self.shape.object(output, &ending(result)),
            report.messages.clone(),
        );
        if let Err(e) = self.finish(&row) {
            tracing::error!(response = %self.shape.id, "the response could not be stored: {}", e.body());
        }
        self.state.responses.stored_one();
    }
}

fn streamed(entry: Arc<RunEntry>, shape: Shape, tool_notes: bool) -> impl IntoResponse {
    let guard = Arc::new(Mutex::new(CancelOnDrop(Some(entry.cancel.clone()))));
    let streamer = Arc::new(Mutex::new(Streamer::new(shape).with_tool_notes(tool_notes)));
    let first = streamer.lock().map(|mut s| s.start()).unwrap_or_default();
    let events = entry.events().flat_map(move |ev| {
        if matches!(&*ev, Event::Finished(_))
            && let Ok(mut g) = guard.lock()
        {
            // The run ended: the client going away now cancels nothing.
            g.0 = None;
        }
        let out = streamer.lock().map(|mut s| s.on(&ev)).unwrap_or_default();
        futures_util::stream::iter(out)
    });
    let all = futures_util::stream::iter(first)
        .chain(events)
        .map(|(kind, data)| {
            Ok::<_, std::convert::Infallible>(
                SseEvent::default().event(kind).data(data.to_string()),
            )
        });
    Sse::new(all).keep_alive(KeepAlive::default())
}

/// `GET /v1/responses/{id}`.
pub async fn get(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if let Some(front) = &state.front {
        return front::get(front, &who, &id).await.map(Json);
    }
    Ok(Json(settled(&state, &who, &id).await?.body))
}

/// `DELETE /v1/responses/{id}`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if let Some(front) = &state.front {
        return Err(front::delete(front, &who, &id).await);
    }
    let db = db(&state).ok_or_else(|| not_found(&id))?;
    if !db
        .delete_response(who.actor.as_deref(), &id)
        .map_err(internal)?
    {
        return Err(not_found(&id));
    }
    Ok(Json(
        json!({"id": id, "object": "response.deleted", "deleted": true}),
    ))
}

/// `POST /v1/responses/{id}/cancel`: stops a response still running and answers it as it
/// ended; one that has ended is answered as it is.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
    _: crate::body::NoBody,
) -> Result<Json<Value>, ApiError> {
    if let Some(front) = &state.front {
        return front::cancel(front, &who, &id).await.map(Json);
    }
    let run_id = id.strip_prefix(PREFIX).ok_or_else(|| not_found(&id))?;
    let running = state
        .runs
        .get(run_id, &who)
        .zip(state.responses.get(run_id));
    let Some((entry, shape)) = running else {
        return Ok(Json(stored(&state, &who, &id)?.body));
    };
    entry.cancel.cancel();
    let end = entry.wait().await;
    let Event::Finished(result) = &*end else {
        return Err(ApiError::internal("the run ended without a result"));
    };
    let result = result.as_ref();
    let output = items(&shape, report_of(result));
    Ok(Json(shape.object(output, &ending(result))))
}

/// `?limit=&order=&after=` of `input_items`.
#[derive(Deserialize)]
pub struct ListQuery {
    limit: Option<usize>,
    order: Option<String>,
    after: Option<String>,
}

/// `GET /v1/responses/{id}/input_items`: the items the response was asked with.
pub async fn input_items(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(id): Path<String>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad_request("limit", "limit must be 1 to 100"));
    }
    let mut list = match &state.front {
        Some(front) => front::input_items(front, &who, &id).await?,
        None => stored(&state, &who, &id)?.input_items,
    };
    match q.order.as_deref() {
        None | Some("desc") => list.reverse(),
        Some("asc") => {}
        Some(_) => {
            return Err(ApiError::bad_request(
                "order",
                "order is \"asc\" or \"desc\"",
            ));
        }
    }
    if let Some(after) = &q.after {
        let at = list
            .iter()
            .position(|i| i["id"].as_str() == Some(after.as_str()))
            .ok_or_else(|| ApiError::bad_request("after", format!("no input item \"{after}\"")))?;
        list.drain(..=at);
    }
    let has_more = list.len() > limit;
    list.truncate(limit);
    let id_of = |i: Option<&Value>| i.and_then(|i| i["id"].as_str()).map(str::to_string);
    Ok(Json(json!({
        "object": "list",
        "first_id": id_of(list.first()),
        "last_id": id_of(list.last()),
        "has_more": has_more,
        "data": list,
    })))
}
