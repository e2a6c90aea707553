//! Azure OpenAI's routes, as the `openai` SDK's `AzureOpenAI` client calls them: Chat
//! Completions at `/openai/deployments/{deployment}/chat/completions` and Responses at
//! `/openai/responses`, each with an `api-version` query and an `api-key` header (or an Entra
//! ID token as `Authorization: Bearer`). A route's own checks come first, with Azure's error
//! shapes; the body is then checked and answered as OpenAI's (a Chat Completions request
//! names its deployment as a model too, for a turn's `model` filter).

use super::check::Rejection;
use super::{Shared, Wire, handle, json_response};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;

/// Azure's Chat Completions route.
pub const CHAT: &str = "/openai/deployments/{deployment}/chat/completions";

/// Azure's Responses route.
pub const RESPONSES: &str = "/openai/responses";

/// Whether `path` is one of Azure's routes (their credential was checked by [`check`]).
pub fn is_azure(path: &str) -> bool {
    path == CHAT || path == RESPONSES
}

/// Checks what Azure checks before the body: a credential and an `api-version`.
pub fn check(
    headers: &HeaderMap,
    query: Option<&str>,
    require_auth: bool,
) -> Result<(), Rejection> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer "));
    if require_auth && headers.get("api-key").is_none() && !bearer {
        return Err((
            401,
            json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}),
        ));
    }
    let version = (query.unwrap_or("").split('&'))
        .find_map(|kv| kv.strip_prefix("api-version="))
        .filter(|v| !v.is_empty());
    let Some(version) = version else {
        return Err((
            404,
            json!({"error": {"code": "404", "message": "Resource not found"}}),
        ));
    };
    if !valid_version(version) {
        return Err((
            400,
            json!({"error": {"code": "BadRequest", "message": "API version not supported"}}),
        ));
    }
    Ok(())
}

/// `YYYY-MM-DD`, optionally `-preview`.
fn valid_version(v: &str) -> bool {
    let date = v.strip_suffix("-preview").unwrap_or(v);
    let parts: Vec<&str> = date.split('-').collect();
    parts.len() == 3
        && [4, 2, 2]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n && p.bytes().all(|b| b.is_ascii_digit()))
}

async fn route(
    shared: State<Arc<Shared>>,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
    wire: Wire,
    path: &'static str,
    deployment: Option<String>,
) -> Response {
    if let Err((status, err)) = check(&headers, query.as_deref(), shared.scenario.require_auth) {
        return json_response(status, err, &[("x-should-retry", "false".into())]);
    }
    handle(shared, headers, body, wire, path, deployment).await
}

/// `POST /openai/deployments/{deployment}/chat/completions`.
pub(crate) async fn chat(
    s: State<Arc<Shared>>,
    Path(deployment): Path<String>,
    RawQuery(q): RawQuery,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    route(s, q, h, b, Wire::OpenAi, CHAT, Some(deployment)).await
}

/// `POST /openai/responses`.
pub(crate) async fn responses(
    s: State<Arc<Shared>>,
    RawQuery(q): RawQuery,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    route(s, q, h, b, Wire::Responses, RESPONSES, None).await
}
