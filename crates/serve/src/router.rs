//! The routes, the body limit, request logging, health and metrics endpoints.

use super::error::ApiError;
use super::state::AppState;
use crate::guard::same_site;
use crate::walls::auth::Principal;
use crate::{
    console::apps_api, console::health, console::inbox, console::listing, console::site,
    console::timeline, console::tools_api, console::ui, doors::ag_ui, doors::chat,
    doors::responses, doors::runs, doors::ui_chat,
};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// `GET /.well-known/oauth-protected-resource`: where to get a token for this server (RFC
/// 9728), when it takes an authorization server's tokens.
async fn resource_metadata(State(state): State<Arc<AppState>>) -> Response {
    match state.tokens.issuer() {
        Some(issuer) => axum::Json(issuer.metadata()).into_response(),
        None => ApiError::not_found("not_found", "this server takes no OAuth access tokens")
            .into_response(),
    }
}

/// Every route of `kiln serve`. `mcp`, when given, is the router of `kiln mcp --http` (it
/// serves `/mcp`), merged in so both commands share one implementation.
pub fn router(state: Arc<AppState>, mcp: Option<Router>) -> Router {
    let max_body = state.options.max_body;
    let api = Router::new()
        .route("/v1/models", get(chat::models))
        .route("/v1/models/{name}", get(chat::model))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/responses", post(responses::create))
        .route("/v1/responses/compact", post(responses::compact::compact))
        .route("/v1/ag-ui/{agent}", post(ag_ui::run))
        .route("/v1/ui-chat/{agent}", post(ui_chat::chat))
        .route(
            "/v1/responses/{id}",
            get(responses::get).delete(responses::delete),
        )
        .route("/v1/responses/{id}/cancel", post(responses::cancel))
        .route(
            "/v1/responses/{id}/input_items",
            get(responses::input_items),
        )
        .route("/v1/runs", post(runs::create).get(listing::runs))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/timeline", get(timeline::timeline))
        .route("/v1/me", get(listing::me))
        .route("/v1/events", get(listing::events))
        .route("/v1/approvals", get(inbox::approvals))
        .route("/v1/tools", get(tools_api::list))
        .route("/v1/tools/{name}", post(tools_api::call))
        .route("/v1/apps", get(apps_api::list))
        .route("/v1/apps/{tool}", get(apps_api::page))
        .route("/v1/apps/{tool}/call", post(apps_api::call))
        .route("/v1/scripts", get(health::scripts))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route("/v1/runs/{id}/input", post(runs::input))
        .route("/v1/runs/{id}/approvals/{approval}", post(runs::approve))
        .route(
            "/v1/sessions/{name}",
            get(runs::session).delete(runs::delete_session),
        )
        .route_layer(middleware::from_fn_with_state(state.clone(), same_site));
    let api = match state.options.console {
        true => api.merge(
            Router::new()
                .route("/ui", get(ui::index))
                .route("/ui/", get(ui::index))
                .route("/ui/{file}", get(ui::file))
                .route_layer(middleware::from_fn_with_state(state.clone(), same_site)),
        ),
        false => api,
    };
    let api = match state.options.static_dir.is_some() {
        true => api.merge(
            Router::new()
                .route("/app/", get(site::index))
                .route("/app/{*path}", get(site::file))
                .route_layer(middleware::from_fn_with_state(state.clone(), same_site)),
        ),
        false => api,
    };
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*path}",
            get(resource_metadata),
        )
        .merge(api)
        .merge(crate::doors::a2a::routes(&state))
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

/// Logs each request, and runs it in a server span that continues the caller's W3C trace
/// (`traceparent`), so a run's spans join the client's trace; the response's `traceparent`
/// names this span.
async fn log_request(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| path.clone(), |m| m.as_str().to_string());
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        url.path = %path,
        http.response.status_code = tracing::field::Empty,
    );
    // Read before any await: a borrow of the request would make this future not `Send`.
    let (parent, state) = {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        (
            header(kiln_otel::context::TRACEPARENT),
            header(kiln_otel::context::TRACESTATE),
        )
    };
    kiln_otel::context::continue_from(&span, parent.as_deref(), state.as_deref());
    let traceparent = kiln_otel::context::traceparent_of(&span);
    let began = Instant::now();
    let mut resp = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let status = resp.status().as_u16();
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
    if let Some(value) = traceparent.and_then(|t| header::HeaderValue::from_str(&t).ok()) {
        resp.headers_mut()
            .insert(header::HeaderName::from_static("traceparent"), value);
    }
    tracing::info!(
        %method,
        path,
        status,
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
