//! The routes, the body limit, request logging, health and metrics endpoints.

use super::auth::Principal;
use super::error::ApiError;
use super::state::AppState;
use super::{chat, runs};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// Every route of `kiln serve`. `mcp`, when given, is the router of `kiln mcp --http` (it
/// serves `/mcp`), merged in so both commands share one implementation.
pub fn router(state: Arc<AppState>, mcp: Option<Router>) -> Router {
    let max_body = state.options.max_body;
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/v1/models", get(chat::models))
        .route("/v1/models/{name}", get(chat::model))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/runs", post(runs::create))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route(
            "/v1/sessions/{name}",
            get(runs::session).delete(runs::delete_session),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state);
    let app = match mcp {
        Some(mcp) => app.merge(mcp),
        None => app,
    };
    app.layer(middleware::from_fn(log_request))
}

async fn log_request(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let began = Instant::now();
    let resp = next.run(req).await;
    tracing::info!(
        %method,
        path,
        status = resp.status().as_u16(),
        ms = began.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    resp
}

async fn not_found() -> ApiError {
    ApiError::not_found("unknown_url", "no such endpoint")
}

async fn method_not_allowed() -> ApiError {
    let mut e = ApiError::bad_request("", "this endpoint does not take that method");
    e.status = StatusCode::METHOD_NOT_ALLOWED;
    e
}

async fn healthz() -> impl IntoResponse {
    axum::Json(json!({"status": "ok"}))
}

/// Ready while accepting runs; `503` once shutdown began.
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let registry = state.host.registry();
    let body = json!({
        "status": if state.draining() { "draining" } else { "ready" },
        "agents": registry.agents().count(),
        "load_errors": registry.errors.len(),
        "runs_active": state.limiter.active(),
        "queue_depth": state.limiter.queued(),
    });
    let status = if state.draining() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>, _who: Principal) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state
            .metrics
            .render(state.limiter.active(), state.limiter.queued()),
    )
        .into_response()
}
