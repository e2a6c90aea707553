//! `kiln serve`: agents as an HTTP service. An adapter over the library API: every request
//! becomes a [`Host::run_stream`](kiln_host::Host::run_stream), so validation, the capability
//! guard, the sandbox and the run log apply exactly as for `kiln ask`.
//!
//! - `doors`: one folder per door. `doors::chat`: OpenAI-compatible `/v1/models` and
//!   `/v1/chat/completions` (whole or SSE chunks); `doors::responses`: the Responses API,
//!   `/v1/responses` (`input` reads a request, `parts` its content parts, `output` writes
//!   Response objects, `stream` the event stream, `front` the same through Restate's
//!   ingress); `doors::runs`: kiln's `/v1/runs` (events as SSE, cancel) and `/v1/sessions`
//!   (`stored`: a run the server does not hold, as the run log keeps it; `front`: `/v1/runs`
//!   through Restate's ingress, `--restate-ingress`, for a fleet); `doors::mcp_tasks`: MCP
//!   tasks as Restate invocations ([`RestateTasks`])
//!   `doors::a2a`: each agent as an A2A 1.0 agent at `/a2a/{agent}` (its card, the JSON-RPC
//!   and HTTP+JSON bindings, tasks as runs in a session, push notifications through the
//!   egress policy)
//! - `walls`: `auth` (tokens, their actors and ceilings) and `admission` (kiln-host's run
//!   slots and ceiling check answered as 429, 503 and 403); beside them `guard` (the `Origin`
//!   and `Host` checks) and `body` (JSON bodies only)
//! - `launch`: a request -> grants within the token's ceiling, session, slot, the run
//! - `table`: runs by id with their events (+ `approvals`: calls waiting for a person)
//! - `metrics`, `router` (health, logging), `error` (OpenAI's shape), `logfmt` (JSON log lines)
//! - `console`: the web console: `ui` (its pages at `/ui`, in the binary, with their security
//!   headers), `feed` (`/v1/events`: runs, approvals, reloads as they happen), `listing`
//!   (`/v1/me`, `/v1/runs`), `timeline` (a run's story), `inbox` (`/v1/approvals`),
//!   `tools_api` (`/v1/tools`: list and call), `health` (`/v1/scripts`: files, errors, reloads)
//!
//! kiln calling Restate over plain HTTP is kiln-restate; the worker itself is kiln-durable.
//!
//! May depend on: kiln-core, kiln-otel, kiln-egress, kiln-registry, kiln-project,
//! kiln-providers, kiln-db, kiln-agent, kiln-host, kiln-http, kiln-mcp (the `/mcp` mount
//! point), kiln-restate, kiln-a2a (the A2A door's messages).

#![warn(missing_docs)]

mod body;
pub mod console;
mod doors;
pub mod error;
pub mod feed;
mod guard;
mod launch;
pub mod logfmt;
pub mod metrics;
mod router;
mod running;
pub mod state;
mod table;
pub mod walls;

pub use doors::mcp_tasks::{DatabaseTasks, RestateTasks, share_tasks};
pub use router::router;
pub use state::{A2aOptions, AppState, ServeOptions};
pub use walls::auth::Tokens;

use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long runs cancelled after the grace period get to record their end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Serves `state` on `listener` until `shutdown` resolves, then drains: no new connections or
/// runs, running ones get `options.grace` to finish, the rest are cancelled (each completed
/// step is already committed to the run log). `mcp` is mounted at `/mcp` when given. Scripts
/// are reloaded while [`watch_reloads`]' handle lives (start it before announcing the address,
/// with the same MCP server so its clients hear of reloads).
pub async fn serve(
    state: Arc<AppState>,
    listener: tokio::net::TcpListener,
    mcp: Option<kiln_mcp::McpEndpoint>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        state.set_bound_port(addr.port());
    }
    let stop_accepting = CancellationToken::new();
    let _sandbox = serve_sandbox(&state, &listener, &stop_accepting).await?;
    // With a shared database, the other servers' decisions and feed items are heard.
    let _peers = doors::runs::peers::start(&state);
    let server = kiln_http::serve(
        listener,
        router(state.clone(), mcp.map(|m| m.router)),
        state.options.http,
        stop_accepting.clone(),
    );
    let mut server = tokio::spawn(server);
    tokio::select! {
        done = &mut server => return done.unwrap_or_else(|e| Err(std::io::Error::other(e))),
        () = shutdown => {}
    }
    state.start_draining();
    stop_accepting.cancel();
    tracing::warn!(
        runs = state.limiter.active(),
        grace_secs = state.options.grace.as_secs_f64(),
        "shutting down: no new runs; waiting for running ones"
    );
    if tokio::time::timeout(state.options.grace, state.limiter.idle())
        .await
        .is_err()
    {
        tracing::warn!(
            runs = state.limiter.active(),
            "grace period over: cancelling the runs still going"
        );
        state.stop_runs.cancel();
        let _ = tokio::time::timeout(CANCEL_WAIT, state.limiter.idle()).await;
    }
    // Responses of ended runs are being written; give them a moment, then stop.
    match tokio::time::timeout(Duration::from_secs(5), server).await {
        Ok(done) => done.unwrap_or_else(|e| Err(std::io::Error::other(e))),
        Err(_) => Ok(()),
    }
}

/// With the console on, listens for its apps' sandbox origin beside `listener` (the same
/// address, `app_sandbox_port`) and serves the sandbox proxy there until the server stops.
async fn serve_sandbox(
    state: &AppState,
    listener: &tokio::net::TcpListener,
    stop: &CancellationToken,
) -> std::io::Result<Option<AbortOnDrop>> {
    let Some(ip) = listener.local_addr().ok().map(|a| a.ip()) else {
        return Ok(None);
    };
    if !state.options.console {
        return Ok(None);
    }
    let at = std::net::SocketAddr::new(ip, state.options.app_sandbox_port);
    let sandbox = tokio::net::TcpListener::bind(at).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot listen for the apps' sandbox at {at} (--app-sandbox-port): {e}"),
        )
    })?;
    if let Ok(bound) = sandbox.local_addr() {
        state.set_sandbox_port(bound.port());
    }
    let (limits, stop) = (state.options.http, stop.clone());
    let router = console::sandbox::router();
    let task = tokio::spawn(async move {
        if let Err(e) = kiln_http::serve(sandbox, router, limits, stop).await {
            tracing::warn!(error = %e, "the apps' sandbox stopped");
        }
    });
    Ok(Some(AbortOnDrop(Some(task))))
}

/// Stops a background task when dropped (when the server stops).
pub struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

/// Reloads changed scripts while the handle lives, counting each reload in the metrics and
/// telling the MCP clients that asked (as `kiln mcp` does).
pub fn watch_reloads(
    state: &Arc<AppState>,
    mcp: Option<kiln_mcp::McpServer>,
) -> std::io::Result<AbortOnDrop> {
    use futures_util::StreamExt;
    if state.host.config().scripts.is_empty() {
        return Ok(AbortOnDrop(None));
    }
    let mut reports = state
        .host
        .watch()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let state = state.clone();
    Ok(AbortOnDrop(Some(tokio::spawn(async move {
        while let Some(report) = reports.next().await {
            state.metrics.reloaded();
            tracing::info!("{report}");
            console::health::announce_reload(&state, &report);
            if let Some(mcp) = mcp.as_ref().filter(|_| !report.deferred) {
                mcp.notify_tools_changed();
            }
        }
    }))))
}
