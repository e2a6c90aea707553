//! The HTTP+JSON binding: the operations as paths under `/a2a/{agent}` (and at the root for
//! the root agent), their params read from the path, the query and the body into the shape the
//! JSON-RPC binding has, errors as RFC 9457 problem details with the operation's HTTP status,
//! and streams as Server-Sent Events of bare stream responses.

use super::caller::{Caller, Reply, to_json};
use super::ops;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kiln_a2a::A2aError;
use kiln_a2a::error::ErrorKind;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

type PathParams = Path<HashMap<String, String>>;
type QueryParams = Query<HashMap<String, String>>;

/// What every operation of this binding reads.
struct Request {
    state: Arc<AppState>,
    who: Principal,
    path: HashMap<String, String>,
    headers: HeaderMap,
    uri: Uri,
}

impl Request {
    /// Runs `method` with `params` and renders its reply.
    async fn run(self, method: &str, params: Value) -> Response {
        let spec = match super::agent_of(&self.state, &self.path) {
            Ok(spec) => spec,
            Err(e) => return e.into_response(),
        };
        if let Err(e) = super::check_version(&self.headers, &self.uri) {
            return problem(&e);
        }
        let caller = Caller {
            state: &self.state,
            who: &self.who,
            agent: &spec.name,
            origin: super::card::origin(&self.state, &self.headers),
        };
        match ops::call(&caller, method, &params).await {
            Ok(Reply::Json(Value::Null)) => StatusCode::NO_CONTENT.into_response(),
            Ok(Reply::Json(v)) => axum::Json(v).into_response(),
            Ok(Reply::Stream(events)) => {
                let events = events.map(|ev| {
                    let data = to_json(&ev).to_string();
                    Ok::<_, std::convert::Infallible>(SseEvent::default().data(data))
                });
                let sse = Sse::new(events).keep_alive(KeepAlive::default());
                // A stream's connection is not reused: a client that stops reading early
                // (they read a few events) would find it mid-response.
                ([(header::CONNECTION, "close")], sse).into_response()
            }
            Err(e) => problem(&e),
        }
    }

    fn id(&self) -> String {
        self.path.get("id").cloned().unwrap_or_default()
    }
}

/// An error as problem details, with the operation's status. Its connection is not kept:
/// a client whose request went wrong starts afresh (the TCK's shared client, among others,
/// cannot reuse a connection across its tests' event loops).
fn problem(e: &A2aError) -> Response {
    let status =
        StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [
            (header::CONTENT_TYPE, "application/problem+json"),
            (header::CONNECTION, "close"),
        ],
        e.to_problem().to_string(),
    )
        .into_response()
}

/// The body as a JSON object (an empty body is `{}`), within the server's body limit.
async fn body_of(state: &AppState, body: Body) -> Result<Map<String, Value>, A2aError> {
    let bytes = axum::body::to_bytes(body, state.options.max_body)
        .await
        .map_err(|_| {
            A2aError::invalid_params(
                "body",
                format!(
                    "the body is larger than {} bytes (kiln serve --max-body)",
                    state.options.max_body
                ),
            )
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let v = crate::body::parse_json(&bytes).map_err(|e| {
        A2aError::new(
            ErrorKind::Parse,
            format!("Invalid JSON payload: {}", e.message),
        )
    })?;
    match v {
        Value::Object(map) => Ok(map),
        _ => Err(A2aError::invalid_params(
            "body",
            "the body must be a JSON object",
        )),
    }
}

/// The query's parameters as strings (the params readers take numbers and booleans in them).
fn query_params(q: HashMap<String, String>) -> Map<String, Value> {
    q.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
}

macro_rules! request {
    ($state:expr, $who:expr, $path:expr, $headers:expr, $uri:expr) => {
        Request {
            state: $state,
            who: $who,
            path: $path,
            headers: $headers,
            uri: $uri,
        }
    };
}

/// A handler for an operation whose params are its JSON body, with the path's task (`{id}`,
/// as `taskId`) when the path names one.
macro_rules! by_body {
    ($(#[$doc:meta])* $name:ident, $method:literal) => {
        $(#[$doc])*
        pub(crate) async fn $name(
            State(state): State<Arc<AppState>>,
            who: Principal,
            Path(path): PathParams,
            headers: HeaderMap,
            uri: Uri,
            body: Body,
        ) -> Response {
            let mut params = match body_of(&state, body).await {
                Ok(b) => b,
                Err(e) => return problem(&e),
            };
            if let Some(id) = path.get("id") {
                params.remove("task_id");
                params.insert("taskId".into(), json!(id));
            }
            request!(state, who, path, headers, uri)
                .run($method, Value::Object(params))
                .await
        }
    };
}

by_body!(
    /// `POST .../message:send`.
    send,
    "SendMessage"
);
by_body!(
    /// `POST .../message:stream`.
    stream,
    "SendStreamingMessage"
);
by_body!(
    /// `POST .../tasks/{id}/pushNotificationConfigs`.
    push_create,
    "CreateTaskPushNotificationConfig"
);

/// `GET .../tasks`.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(path): PathParams,
    Query(q): QueryParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let params = Value::Object(query_params(q));
    request!(state, who, path, headers, uri)
        .run("ListTasks", params)
        .await
}

/// `GET .../tasks/{id}` (and `GET .../tasks/{id}:subscribe`).
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(path): PathParams,
    Query(q): QueryParams,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let req = request!(state, who, path, headers, uri);
    let id = req.id();
    let mut params = query_params(q);
    match id.strip_suffix(":subscribe") {
        Some(task) => {
            params.insert("id".into(), json!(task));
            req.run("SubscribeToTask", Value::Object(params)).await
        }
        None => {
            params.insert("id".into(), json!(id));
            req.run("GetTask", Value::Object(params)).await
        }
    }
}

/// `POST .../tasks/{id}:cancel` and `POST .../tasks/{id}:subscribe`.
pub(crate) async fn act(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(path): PathParams,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let mut params = match body_of(&state, body).await {
        Ok(b) => b,
        Err(e) => return problem(&e),
    };
    let req = request!(state, who, path, headers, uri);
    let id = req.id();
    let (task, method) = match id.rsplit_once(':') {
        Some((task, "cancel")) => (task.to_string(), "CancelTask"),
        Some((task, "subscribe")) => (task.to_string(), "SubscribeToTask"),
        _ => {
            let e = A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no operation at tasks/{id}: POST tasks/ID:cancel or tasks/ID:subscribe"),
            );
            return problem(&e);
        }
    };
    params.insert("id".into(), json!(task));
    req.run(method, Value::Object(params)).await
}

/// A handler for an operation whose params are its path's alone: the task (`{id}`, as
/// `taskId`) and the push config (`{cid}`, as `id`) when the path names one.
macro_rules! by_path {
    ($(#[$doc:meta])* $name:ident, $method:literal) => {
        $(#[$doc])*
        pub(crate) async fn $name(
            State(state): State<Arc<AppState>>,
            who: Principal,
            Path(path): PathParams,
            headers: HeaderMap,
            uri: Uri,
        ) -> Response {
            let mut params = Map::new();
            if let Some(id) = path.get("id") {
                params.insert("taskId".into(), json!(id));
            }
            if let Some(cid) = path.get("cid") {
                params.insert("id".into(), json!(cid));
            }
            request!(state, who, path, headers, uri)
                .run($method, Value::Object(params))
                .await
        }
    };
}

by_path!(
    /// `GET .../tasks/{id}/pushNotificationConfigs`.
    push_list,
    "ListTaskPushNotificationConfigs"
);
by_path!(
    /// `GET .../tasks/{id}/pushNotificationConfigs/{cid}`.
    push_get,
    "GetTaskPushNotificationConfig"
);
by_path!(
    /// `DELETE .../tasks/{id}/pushNotificationConfigs/{cid}`.
    push_delete,
    "DeleteTaskPushNotificationConfig"
);
by_path!(
    /// `GET .../extendedAgentCard`.
    extended_card,
    "GetExtendedAgentCard"
);
