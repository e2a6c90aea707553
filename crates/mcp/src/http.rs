//! `kiln mcp --http`: the server on streamable HTTP at `/mcp`, with the spec's `Origin` check
//! (403 for a foreign origin) and an optional bearer token.

use crate::server::McpServer;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// Who may talk to the HTTP endpoint.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Requests must carry `Authorization: Bearer TOKEN` when set.
    pub token: Option<String>,
    /// Origins allowed besides loopback ones (`scheme://host[:port]`, `:*` for any port).
    pub allowed_origins: Vec<String>,
    /// Host names allowed in the `Host` header besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// The port the endpoint listens on: a page of this machine is accepted only from it (a
    /// page on another port is another site). `None`: from any port.
    pub port: Option<u16>,
    /// Sessions open at once at most (0: the default, 256); one more `initialize` gets `503`.
    pub max_sessions: usize,
    /// A session with no request for this long is closed (`None`: the default, 5 minutes).
    pub session_idle: Option<std::time::Duration>,
    /// Also takes this authorization server's access tokens (`--auth-issuer`): their scopes
    /// narrow each request's grants.
    pub issuer: Option<Arc<crate::issuer::Issuer>>,
}

/// Sessions open at once when [`HttpOptions::max_sessions`] is 0.
pub const DEFAULT_MAX_SESSIONS: usize = kiln_project::defaults::MAX_SESSIONS;
/// How long an idle session lives when [`HttpOptions::session_idle`] is `None`.
pub const DEFAULT_SESSION_IDLE: std::time::Duration = kiln_project::defaults::SESSION_IDLE;

/// Origins of pages served from this machine (on the endpoint's own port, when it is known);
/// anything else is refused (DNS rebinding, another site on this machine).
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://127.0.0.1:*",
    "http://localhost:*",
    "http://[::1]:*",
    "https://127.0.0.1:*",
    "https://localhost:*",
    "https://[::1]:*",
];

/// The `/mcp` endpoint of a bigger app: its router (to `merge`) and the server behind it, which
/// the app tells of reloads ([`McpServer::notify_tools_changed`]).
pub struct McpEndpoint {
    /// Serves `/mcp`.
    pub router: axum::Router,
    /// The handler behind it.
    pub server: McpServer,
}

impl McpEndpoint {
    /// `server` at `/mcp`, admitting what `opts` allows.
    pub fn new(server: McpServer, opts: HttpOptions) -> McpEndpoint {
        McpEndpoint {
            router: router(server.clone(), opts),
            server,
        }
    }
}

/// A router serving `server` at `/mcp` (mount it in a bigger app with `merge`).
pub fn router(server: McpServer, opts: HttpOptions) -> axum::Router {
    let mut origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| match opts.port {
            Some(port) => o.replace(":*", &format!(":{port}")),
            None => o.to_string(),
        })
        .collect();
    origins.extend(opts.allowed_origins.iter().cloned());
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    hosts.extend(opts.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.session_idle.unwrap_or(DEFAULT_SESSION_IDLE));
    let sessions = Arc::new(sessions);
    let service =
        StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
    let max = match opts.max_sessions {
        0 => DEFAULT_MAX_SESSIONS,
        n => n,
    };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(json_rpc_precheck))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let sessions = sessions.clone();
                async move { session_cap(&sessions, max, req, next).await }
            },
        ));
    match (opts.token, opts.issuer) {
        (None, None) => app,
        (token, None) => {
            let token = Arc::new(token.unwrap_or_default());
            app.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let token = token.clone();
                    async move { bearer_guard(&token, req, next).await }
                },
            ))
        }
        (token, Some(issuer)) => {
            let token = Arc::new(token);
            let guard = issuer.clone();
            let meta = issuer.clone();
            app.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let (token, issuer) = (token.clone(), guard.clone());
                    async move { oauth_guard(token.as_deref(), &issuer, req, next).await }
                },
            ))
            .merge(resource_metadata(meta))
        }
    }
}

/// `/.well-known/oauth-protected-resource` (RFC 9728): where a client gets a token.
fn resource_metadata(issuer: Arc<crate::issuer::Issuer>) -> axum::Router {
    let doc = issuer.metadata();
    let answer = move || {
        let doc = doc.clone();
        async move { axum::Json(doc) }
    };
    axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(answer.clone()),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*path}",
            axum::routing::get(answer),
        )
}

/// A request needs the static token (`--token-env`) or a good access token of the issuer,
/// whose subject and scopes go with the request to the server.
async fn oauth_guard(
    token: Option<&str>,
    issuer: &crate::issuer::Issuer,
    mut req: Request,
    next: Next,
) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_credentials)
        .map(str::to_string);
    let refuse = |status: StatusCode, why: String| {
        (
            status,
            [(header::WWW_AUTHENTICATE, issuer.challenge())],
            why,
        )
            .into_response()
    };
    let Some(given) = given else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required".into(),
        );
    };
    if token.is_some_and(|t| same_secret(given.as_bytes(), t.as_bytes())) {
        return next.run(req).await;
    }
    match issuer.verify(&given).await {
        Ok(verified) => {
            req.extensions_mut().insert(verified);
            next.run(req).await
        }
        Err(e @ crate::issuer::TokenRefused::Unreachable) => {
            refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        }
        Err(e) => refuse(StatusCode::UNAUTHORIZED, e.to_string()),
    }
}

/// The credentials of an `Authorization: Bearer ...` value; the scheme is case-insensitive
/// (RFC 9110 section 11.1), so `bearer TOKEN` is the same token.
pub fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

/// A request's head and whole body (the listener has read it within its deadline already).
async fn buffered(req: Request) -> Result<(axum::http::request::Parts, bytes::Bytes), Response> {
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, 16 << 20).await {
        Ok(bytes) => Ok((parts, bytes)),
        Err(_) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        )
            .into_response()),
    }
}

/// JSON-RPC's own errors on a POST, answered here with their codes (see
/// [`crate::frames::precheck`]): rmcp would answer invalid JSON with `415`.
async fn json_rpc_precheck(req: Request, next: Next) -> Response {
    let json_post = req.method() == axum::http::Method::POST
        && req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/json"));
    if !json_post {
        return next.run(req).await;
    }
    let (parts, bytes) = match buffered(req).await {
        Ok(read) => read,
        Err(too_large) => return too_large,
    };
    if let Err(reply) = crate::frames::precheck(&bytes) {
        return (StatusCode::BAD_REQUEST, axum::Json(reply)).into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// An `initialize` (which opens a session) while `max` sessions are open gets `503`: each
/// session holds a task and buffers, so their number is bounded. Stateless requests of the
/// 2026-07-28 revision open none and pass.
async fn session_cap(
    sessions: &LocalSessionManager,
    max: usize,
    req: Request,
    next: Next,
) -> Response {
    let may_open =
        req.method() == axum::http::Method::POST && !req.headers().contains_key("mcp-session-id");
    if !may_open || sessions.sessions.read().await.len() < max {
        return next.run(req).await;
    }
    // At the cap (rare): look at the message to tell an `initialize` from a stateless call.
    let (parts, bytes) = match buffered(req).await {
        Ok(read) => read,
        Err(too_large) => return too_large,
    };
    let initialize = serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|m| m["method"] == "initialize");
    let req = Request::from_parts(parts, axum::body::Body::from(bytes));
    if initialize {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000,
            "message": format!("the server holds {max} sessions, as many as it allows; retry later")}});
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            axum::Json(body),
        )
            .into_response();
    }
    next.run(req).await
}

async fn bearer_guard(token: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_credentials);
    if given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a bearer token is required",
    )
        .into_response()
}

/// Compares without stopping at the first difference, so timing does not reveal the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
