//! The JSON-RPC binding: `POST /a2a/{agent}` with a JSON-RPC 2.0 request. Every answer is
//! a JSON-RPC response with the request's id (HTTP 200, as the binding says), streaming
//! methods answer Server-Sent Events each holding one response, and their errors come as an
//! event too. The checks go in the binding's order: the token (a `401` before anything is
//! read), the body, the envelope, the protocol version, then the method.

use super::caller::{Caller, Reply, to_json};
use super::ops;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kiln_a2a::A2aError;
use kiln_a2a::error::ErrorKind;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The methods that answer a stream.
const STREAMING: [&str; 2] = ["SendStreamingMessage", "SubscribeToTask"];

/// `POST /a2a/{agent}`.
pub(crate) async fn endpoint(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(path): Path<HashMap<String, String>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let spec = match super::agent_of(&state, &path) {
        Ok(spec) => spec,
        Err(e) => return e.into_response(),
    };
    let bytes = match axum::body::to_bytes(body, state.options.max_body).await {
        Ok(b) => b,
        Err(_) => {
            let e = A2aError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "Request payload validation error: the body is larger than {} bytes (kiln serve --max-body)",
                    state.options.max_body
                ),
            );
            return (StatusCode::PAYLOAD_TOO_LARGE, answer(&Value::Null, Err(e))).into_response();
        }
    };
    let request = match crate::body::parse_json(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("Invalid JSON payload: {}", e.message);
            return answer(&Value::Null, Err(A2aError::new(ErrorKind::Parse, msg))).into_response();
        }
    };
    let (id, method, params) = match envelope(&request) {
        Ok(parts) => parts,
        Err(refused) => {
            let (id, e) = *refused;
            return answer(&id, Err(e)).into_response();
        }
    };
    let streaming = STREAMING.contains(&method.as_str());
    if let Err(e) = super::check_version(&headers, &uri) {
        return respond(&id, streaming, Err(e));
    }
    let caller = Caller {
        state: &state,
        who: &who,
        agent: &spec.name,
        origin: super::card::origin(&state, &headers),
    };
    let reply = ops::call(&caller, &method, &params).await;
    respond(&id, streaming, reply)
}

/// The request's id, method and params; an invalid envelope is refused with the id when it
/// is one (a string, a number or null).
fn envelope(request: &Value) -> Result<(Value, String, Value), Box<(Value, A2aError)>> {
    let invalid = |id: &Value, why: &str| {
        Box::new((
            id.clone(),
            A2aError::new(
                ErrorKind::InvalidRequest,
                format!("Request payload validation error: {why}"),
            ),
        ))
    };
    let Some(obj) = request.as_object() else {
        return Err(invalid(
            &Value::Null,
            "a request is a JSON object (batches are not supported)",
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err(invalid(
            &Value::Null,
            "id must be a string, a number or null",
        ));
    }
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(&id, "jsonrpc must be \"2.0\""));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err(invalid(&id, "method is required: a string"));
    };
    let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
    if !params.is_object() {
        let e = A2aError::invalid_params("params", "params must be a JSON object");
        return Err(Box::new((id, e)));
    }
    Ok((id, method.to_string(), params))
}

/// A JSON-RPC response: the result, or the error.
fn answer(id: &Value, result: Result<Value, A2aError>) -> axum::Json<Value> {
    axum::Json(envelope_of(id, result))
}

fn envelope_of(id: &Value, result: Result<Value, A2aError>) -> Value {
    match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_jsonrpc()}),
    }
}

/// The reply as JSON, or as events (a streaming method's error is an event too).
fn respond(id: &Value, streaming: bool, reply: Result<Reply, A2aError>) -> Response {
    match (reply, streaming) {
        (Ok(Reply::Json(v)), _) => answer(id, Ok(v)).into_response(),
        (Err(e), false) => answer(id, Err(e)).into_response(),
        (Err(e), true) => {
            let ev = envelope_of(id, Err(e));
            let one = futures_util::stream::once(async move {
                Ok::<_, std::convert::Infallible>(SseEvent::default().data(ev.to_string()))
            });
            Sse::new(one).into_response()
        }
        (Ok(Reply::Stream(events)), _) => {
            let id = id.clone();
            let events = events.map(move |ev| {
                let v = envelope_of(&id, Ok(to_json(&ev)));
                Ok::<_, std::convert::Infallible>(SseEvent::default().data(v.to_string()))
            });
            Sse::new(events)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_is_checked_before_its_method() {
        let (id, e) = *envelope(&json!({"jsonrpc": "aaa", "id": 7, "method": "SendMessage"}))
            .expect_err("bad version");
        assert_eq!((id, e.kind.code()), (json!(7), -32600));
        let (id, e) = *envelope(&json!({"jsonrpc": "2.0", "id": {"bad": 1}, "method": "x"}))
            .expect_err("bad id");
        assert_eq!((id, e.kind.code()), (Value::Null, -32600));
        let (_, e) = *envelope(&json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}))
            .expect_err("bad params");
        assert_eq!(e.kind.code(), -32602);
        let (id, method, _) =
            envelope(&json!({"jsonrpc": "2.0", "id": "a", "method": "GetTask"})).expect("ok");
        assert_eq!((id, method.as_str()), (json!("a"), "GetTask"));
    }
}
