//! `/a2a/{agent}`: each agent as an A2A 1.0 agent, for agents of other frameworks (pydantic-ai,
//! Google's ADK, LangGraph, ...) and any client on an A2A SDK. The agent card is at
//! `/a2a/{agent}/.well-known/agent-card.json`; the JSON-RPC binding answers `POST
//! /a2a/{agent}` and the HTTP+JSON binding the paths under it (`/message:send`, `/tasks/...`).
//! With `--a2a-root AGENT`, that agent is also served at the origin's root (its card at
//! `/.well-known/agent-card.json`), where A2A clients look first.
//!
//! A task is one actor's conversation turn with the agent: its messages run as kiln runs in
//! the task's context, a kiln session (see `turns`), so the run log, the console, traces and
//! `/v1/runs` see them. The walls are every door's: the token's actor owns its tasks (another
//! actor's task is not found), its ceiling narrows the runs' grants, bodies are bounded and
//! keys appear once, approvals are a person's (`input-required`), and webhooks go through the
//! egress policy (see `push`). On a fleet's front door (`--restate-ingress`) tasks are
//! durable turns run by any worker (see `front`).

pub(crate) mod caller;
pub(crate) mod card;
mod forms;
mod front;
mod jsonrpc;
mod listing;
mod ops;
mod params;
pub(crate) mod push;
mod rest;
mod turns;

use crate::error::ApiError;
use crate::guard::same_site;
use crate::state::AppState;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kiln_a2a::A2aError;
use kiln_a2a::error::ErrorKind;
use std::collections::HashMap;
use std::sync::Arc;

/// The door's routes, under `/a2a/{agent}` and (with a root agent) at the root.
pub(crate) fn routes(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    let rest = |prefix: &str| {
        Router::new()
            .route(&format!("{prefix}/message:send"), post(rest::send))
            .route(&format!("{prefix}/message:stream"), post(rest::stream))
            .route(&format!("{prefix}/tasks"), get(rest::list))
            .route(
                &format!("{prefix}/tasks/{{id}}"),
                get(rest::get).post(rest::act),
            )
            .route(
                &format!("{prefix}/tasks/{{id}}/pushNotificationConfigs"),
                get(rest::push_list).post(rest::push_create),
            )
            .route(
                &format!("{prefix}/tasks/{{id}}/pushNotificationConfigs/{{cid}}"),
                get(rest::push_get).delete(rest::push_delete),
            )
            .route(
                &format!("{prefix}/extendedAgentCard"),
                get(rest::extended_card),
            )
    };
    let mut api = rest("/a2a/{agent}").route("/a2a/{agent}", post(jsonrpc::endpoint));
    if state.options.a2a.root.is_some() {
        api = api.merge(rest(""));
    }
    let api = api.route_layer(middleware::from_fn_with_state(state.clone(), same_site));
    let mut cards =
        Router::new().route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card));
    if state.options.a2a.root.is_some() {
        cards = cards.route("/.well-known/agent-card.json", get(agent_card));
    }
    api.merge(cards)
}

/// The agent a request is for: the path's, else the root agent; an unknown one is `404`.
pub(crate) fn agent_of(
    state: &AppState,
    path: &HashMap<String, String>,
) -> Result<Arc<kiln_registry::agent_spec::AgentSpec>, ApiError> {
    let name = path
        .get("agent")
        .or(state.options.a2a.root.as_ref())
        .ok_or_else(|| ApiError::not_found("unknown_url", "no such endpoint"))?;
    crate::launch::find_agent(state, name)
}

/// Refuses a request that does not speak A2A 1.0 (`A2A-Version`, as a header or a query
/// parameter; none means 0.3).
pub(crate) fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<(), A2aError> {
    let header = headers
        .get(kiln_a2a::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let query = uri.query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.eq_ignore_ascii_case(kiln_a2a::VERSION_HEADER))
            .map(|(_, v)| v.to_string())
    });
    let asked = header.or(query).unwrap_or_default();
    match asked.trim() {
        "1.0" | "1" => Ok(()),
        other => Err(A2aError::new(
            ErrorKind::VersionNotSupported,
            format!(
                "A2A version not supported: this server speaks A2A {} (send the header {}: {}), not {}",
                kiln_a2a::PROTOCOL_VERSION,
                kiln_a2a::VERSION_HEADER,
                kiln_a2a::PROTOCOL_VERSION,
                if other.is_empty() { "0.3 (no version given)" } else { other },
            ),
        )
        .with("supportedVersions", serde_json::json!([kiln_a2a::PROTOCOL_VERSION]))),
    }
}

/// `GET /a2a/{agent}/.well-known/agent-card.json` (and the root agent's at
/// `/.well-known/agent-card.json`): the public card, for anyone.
async fn agent_card(
    State(state): State<Arc<AppState>>,
    Path(path): Path<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    match agent_of(&state, &path) {
        Ok(spec) => {
            let origin = card::origin(&state, &headers);
            axum::Json(card::card(&state, &spec, &origin, None)).into_response()
        }
        Err(e) => e.into_response(),
    }
}
