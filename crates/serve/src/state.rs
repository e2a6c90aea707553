//! What every handler shares: the host, tokens, limits, the runs, metrics and the shutdown state.

use super::error::ApiError;
use super::metrics::Metrics;
use super::table::RunTable;
use crate::walls::auth::{Principal, Tokens};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use kiln_core::capability::Grants;
use kiln_host::Host;
use kiln_host::admission::Limiter;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How the server runs agents.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Runs at once.
    pub max_runs: usize,
    /// Runs waiting for a slot before requests get `429`.
    pub queue: usize,
    /// `Retry-After` seconds of a `429`.
    pub retry_after: u64,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Deadline of each run.
    pub run_timeout: Option<Duration>,
    /// How long a call waits for a person's approval before it is denied.
    pub approval_timeout: Duration,
    /// Timeout of one model request.
    pub request_timeout: Option<Duration>,
    /// How long runs may go on after a shutdown signal before they are cancelled.
    pub grace: Duration,
    /// The most any request may be granted (`--caps`); `None`: each agent's own grants.
    pub ceiling: Option<Grants>,
    /// Origins besides this machine's whose pages may call the API (`--allow-origin`).
    pub allowed_origins: Vec<String>,
    /// Host names the API answers to besides loopback ones (the bound address), when it has no
    /// tokens.
    pub allowed_hosts: Vec<String>,
    /// How long a request may wait in the queue (for a run slot or a busy session).
    pub queue_timeout: Duration,
    /// Header and body deadlines and the connection cap of the HTTP listener.
    pub http: kiln_http::HttpLimits,
    /// Serve the web console at `/ui`.
    pub console: bool,
    /// The port of the console's sandbox origin for apps' pages (MCP Apps), on the same
    /// address as the server; 0 picks a free one.
    pub app_sandbox_port: u16,
    /// A folder of pages to serve at `/app/` (`--static DIR`): a project's own front end.
    pub static_dir: Option<std::path::PathBuf>,
    /// A trace viewer's page for one trace, `{trace_id}` standing for its id (Phoenix's, a
    /// Jaeger's), linked from a run's timeline.
    pub trace_url: Option<String>,
    /// The A2A door's wait, webhooks and root agent.
    pub a2a: A2aOptions,
}

impl Default for ServeOptions {
    fn default() -> Self {
        use kiln_project::defaults as d;
        ServeOptions {
            max_runs: d::MAX_RUNS,
            queue: d::QUEUE,
            retry_after: d::RETRY_AFTER,
            max_body: d::MAX_BODY,
            run_timeout: Some(d::RUN_TIMEOUT),
            approval_timeout: d::APPROVAL_TIMEOUT,
            request_timeout: None,
            grace: d::GRACE,
            ceiling: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            queue_timeout: d::QUEUE_TIMEOUT,
            http: kiln_http::HttpLimits {
                header_timeout: d::HEADER_TIMEOUT,
                body_timeout: d::BODY_TIMEOUT,
                max_connections: d::MAX_CONNECTIONS,
                ..kiln_http::HttpLimits::default()
            },
            console: true,
            app_sandbox_port: 0,
            static_dir: None,
            trace_url: None,
            a2a: Default::default(),
        }
    }
}

/// How the A2A door serves (`kiln serve --a2a-*`).
#[derive(Debug, Clone)]
pub struct A2aOptions {
    /// How long a blocking `SendMessage` waits for the task's turn to end before it answers
    /// the task as it is (still working): the client polls or subscribes from there.
    pub wait: Duration,
    /// The `net` scopes webhooks may reach (`None`: unscoped, public addresses only); none:
    /// push notifications are not offered.
    pub push: Vec<Option<String>>,
    /// The agent also served at the origin's root.
    pub root: Option<String>,
}

impl Default for A2aOptions {
    fn default() -> Self {
        A2aOptions {
            wait: Duration::from_secs(60),
            push: Vec::new(),
            root: None,
        }
    }
}

/// The server's shared state.
pub struct AppState {
    /// The host every run goes through.
    pub host: Arc<Host>,
    /// Bearer tokens (none: open, loopback only).
    pub tokens: Tokens,
    /// Limits and flags.
    pub options: ServeOptions,
    /// Run slots and queue.
    pub limiter: Limiter,
    /// Counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Runs by id.
    pub runs: RunTable,
    /// Cancels every run (the grace period ran out).
    pub stop_runs: CancellationToken,
    /// The durable engine `/v1/runs` submits to (`--restate-ingress`); `None`: runs run here.
    pub front: Option<kiln_restate::RestateClient>,
    /// The Responses door's running responses.
    pub(crate) responses: crate::running::Running,
    /// What the console's live feed sends (`GET /v1/events`).
    pub feed: crate::feed::Feed,
    /// The `ctx.state` of the runs the front-end doors started (AG-UI's state deltas).
    pub(crate) run_states: crate::table::states::RunStates,
    /// The A2A door's tasks.
    pub(crate) a2a: crate::table::tasks::TaskTable,
    /// The last script reloads, newest last, as the feed sent them.
    pub(crate) reloads: Mutex<std::collections::VecDeque<serde_json::Value>>,
    draining: AtomicBool,
    bound_port: std::sync::OnceLock<u16>,
    /// The port of the apps' sandbox origin (the console's MCP Apps host), once bound.
    sandbox_port: std::sync::OnceLock<u16>,
    sessions: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
}

impl AppState {
    /// State for a server over `host`.
    pub fn new(host: Arc<Host>, tokens: Tokens, options: ServeOptions) -> Self {
        AppState {
            host,
            tokens,
            limiter: Limiter::new(options.max_runs, options.queue, options.retry_after)
                .with_queue_timeout(options.queue_timeout),
            options,
            metrics: Arc::new(Metrics::default()),
            runs: RunTable::default(),
            stop_runs: CancellationToken::new(),
            front: None,
            responses: Default::default(),
            feed: Default::default(),
            run_states: Default::default(),
            a2a: Default::default(),
            reloads: Mutex::new(Default::default()),
            draining: AtomicBool::new(false),
            bound_port: std::sync::OnceLock::new(),
            sandbox_port: std::sync::OnceLock::new(),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `/v1/runs` to Restate through `front` instead of running them here.
    pub fn with_front(mut self, front: kiln_restate::RestateClient) -> Self {
        self.front = Some(front);
        self
    }

    /// True once shutdown began: no new runs, `/readyz` says 503.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Stops accepting runs.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// The port the server listens on, once [`crate::serve`] bound it: pages of this server
    /// have it in their `Origin`.
    pub fn bound_port(&self) -> Option<u16> {
        self.bound_port.get().copied()
    }

    /// Records the port the server listens on (the first time only).
    pub fn set_bound_port(&self, port: u16) {
        let _ = self.bound_port.set(port);
    }

    /// The port of the apps' sandbox origin, once [`crate::serve`] bound it.
    pub fn sandbox_port(&self) -> Option<u16> {
        self.sandbox_port.get().copied()
    }

    /// Records the port of the apps' sandbox origin (the first time only).
    pub fn set_sandbox_port(&self, port: u16) {
        let _ = self.sandbox_port.set(port);
    }

    /// The lock that keeps two runs from continuing one session at once.
    pub fn session_lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        if let Some(lock) = map.get(key).and_then(Weak::upgrade) {
            return lock;
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        map.insert(key.to_string(), Arc::downgrade(&lock));
        lock
    }
}

/// The longest session name a request may give.
pub const MAX_SESSION_NAME: usize = 256;

/// Refuses an empty, huge or control-character (NUL included) session name.
pub fn check_session_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > MAX_SESSION_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "session",
            format!(
                "a session name is 1 to {MAX_SESSION_NAME} bytes of text without control characters"
            ),
        ));
    }
    Ok(())
}

/// The session name in the database: with tokens, each actor has its own names. The actor is
/// escaped (`%` and `/`), so actor `dave` with session `x/notes` and actor `dave/x` with
/// session `notes` are two sessions; an empty, huge or control-character name is refused.
pub fn session_key(who: &Principal, name: &str) -> Result<String, ApiError> {
    check_session_name(name)?;
    Ok(match &who.actor {
        Some(actor) => {
            let actor = actor.replace('%', "%25").replace('/', "%2F");
            format!("{actor}/{name}")
        }
        None => name.to_string(),
    })
}

impl FromRequestParts<Arc<AppState>> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        state.tokens.authenticate(&parts.headers).await
    }
}
