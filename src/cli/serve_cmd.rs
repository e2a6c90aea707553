//! `kiln serve`: the agents over HTTP until SIGTERM or Ctrl-C, then a graceful drain.

mod fds;

use super::project::{Given, fill, note_env_override};
use super::{CliResult, Global, parse_caps};
use clap::{Args, ValueEnum};
use kiln::project::{Project, Seconds, defaults as d};
use kiln::serve::{AppState, ServeOptions, Tokens};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `kiln serve` options.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one). Without tokens only loopback is allowed.
    #[arg(long, default_value = d::SERVE_BIND)]
    pub bind: SocketAddr,
    /// The most any request may be granted (comma-separated, repeatable); default: each
    /// agent's own grants.
    #[arg(long, value_name = "CAPS")]
    pub caps: Vec<String>,
    /// Bearer tokens: a JSON file [{"token": ..., "actor": ..., "caps": [...]}]; the variable
    /// KILN_TOKENS may hold the same JSON instead.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Also take the access tokens (JWTs) this OAuth authorization server issues for kiln:
    /// checked against its published keys, its name, the audience and their expiry; scopes
    /// `kiln:CAP[:SCOPE]` are the token's ceiling, its subject the actor.
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// The audience tokens must name: kiln's own URL as its clients reach it (default:
    /// http://BIND). Published as the resource of /.well-known/oauth-protected-resource.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// Runs at once.
    #[arg(long, value_name = "N", default_value_t = d::MAX_RUNS)]
    pub max_runs: usize,
    /// Runs waiting for a slot before requests get 429.
    #[arg(long, value_name = "N", default_value_t = d::QUEUE)]
    pub queue: usize,
    /// Retry-After seconds sent with 429.
    #[arg(long, value_name = "SECS", default_value_t = d::RETRY_AFTER)]
    pub retry_after: u64,
    /// Largest request body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = d::MAX_BODY)]
    pub max_body: usize,
    /// Deadline of each run (0: none).
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::RUN_TIMEOUT))]
    pub run_timeout: Seconds,
    /// How long a call waits for a person to approve it (POST /v1/runs/ID/approvals/APPROVAL)
    /// before it is denied; keep it under --run-timeout.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::APPROVAL_TIMEOUT))]
    pub approval_timeout: Seconds,
    /// How long one model request may take.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::REQUEST_TIMEOUT))]
    pub request_timeout: Seconds,
    /// How long running requests get to finish after SIGTERM before they are cancelled.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::GRACE))]
    pub grace: Seconds,
    /// Forget runs that ended longer ago than this (30d, 12h), checked at start and then every
    /// tenth of it (hourly at most), a few hundred at a time so runs keep writing; sessions
    /// stay. Default: keep everything.
    #[arg(long, value_name = "DURATION")]
    pub log_retention: Option<Seconds>,
    /// How long a request may wait in the queue (for a run slot or a busy session) before 503.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::QUEUE_TIMEOUT))]
    pub queue_timeout: Seconds,
    /// How long a client may take to send a request's headers (also how long an idle
    /// keep-alive connection stays open).
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::HEADER_TIMEOUT))]
    pub header_timeout: Seconds,
    /// How long a client may take to send a request's body.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::BODY_TIMEOUT))]
    pub body_timeout: Seconds,
    /// Also accept API requests from pages of this Origin (repeatable), e.g.
    /// `https://app.example:*`; only this server's own pages (its port) are accepted otherwise.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Serve this folder's pages at /app/ (a project's own front end, such as a chat page on
    /// the AI SDK), with the console's security headers.
    #[arg(long = "static", value_name = "DIR")]
    pub static_dir: Option<std::path::PathBuf>,
    /// Open connections at most; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = d::MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Log lines as text or JSON (on stderr).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Also be a Restate worker: serve the agent loop as Restate handlers (KilnSession,
    /// KilnRun) on --restate-bind, with the same scripts (hot-reloaded), database and --caps.
    /// See docs/scaling.md.
    #[arg(long)]
    pub restate: bool,
    /// Where Restate calls this worker (HTTP/2, no tokens: keep it private). Register the one
    /// address in front of all workers with `kiln restate register`.
    #[arg(long, value_name = "ADDR", default_value = d::RESTATE_BIND)]
    pub restate_bind: SocketAddr,
    /// Restate's request-signing public key (publickeyv1_...): requests it did not sign are
    /// refused. Needed when --restate-bind is not a loopback address. Repeatable.
    #[arg(long, value_name = "KEY")]
    pub restate_identity_key: Vec<String>,
    /// The front door: POST /v1/runs submits to Restate's ingress at URL (keyed by the
    /// request's Idempotency-Key header, or a new key) instead of running here, and GET
    /// /v1/runs/ID, .../events and .../cancel answer for runs started through any worker.
    /// Needs --restate-admin.
    #[arg(long, value_name = "URL", requires = "restate_admin")]
    pub restate_ingress: Option<String>,
    /// Restate's admin API, e.g. http://127.0.0.1:9070 (the front door looks runs up and
    /// cancels them there). Needs --restate-ingress.
    #[arg(long, value_name = "URL", requires = "restate_ingress")]
    pub restate_admin: Option<String>,
    /// Do not serve the web console at /ui (runs, approvals, tools, a playground; it uses the
    /// same tokens as the API). See docs/console.md.
    #[arg(long)]
    pub no_console: bool,
    /// The port of the console's sandbox origin, where tools' pages (MCP Apps) run apart from
    /// the console, on the --bind address (default: a free port; GET /v1/apps names it).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub app_sandbox_port: u16,
    /// A trace viewer's page for one trace, with {trace_id} where the id goes (for Phoenix,
    /// http://127.0.0.1:6006/projects/PROJECT/traces/{trace_id}): the console links each run
    /// to its trace.
    #[arg(long, value_name = "URL")]
    pub trace_url: Option<String>,
    /// How long an A2A SendMessage waits for its task's turn to end before it answers the
    /// task as it is (working; the client polls or subscribes from there).
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(Duration::from_secs(60)))]
    pub a2a_wait: Seconds,
    /// Offer A2A push notifications to webhooks this `net` scope reaches (repeatable), e.g.
    /// net:hooks.example.com or net:localhost:8888; `net` alone: any public address. Each
    /// webhook's addresses are checked as a script's `net` request's are (--resolve applies).
    #[arg(long = "a2a-push", value_name = "NET_SCOPE")]
    pub a2a_push: Vec<String>,
    /// Also serve this agent's A2A card and HTTP+JSON binding at the root
    /// (/.well-known/agent-card.json, /message:send, /tasks/...), where A2A clients look first.
    #[arg(long, value_name = "AGENT")]
    pub a2a_root: Option<String>,
}

/// Fills what the flags left unset from the project file's `[serve]` and `[grants]`.
pub fn apply(
    a: &mut ServeArgs,
    project: &Project,
    given: &Given,
    caps: Option<Vec<String>>,
) -> CliResult<()> {
    let mut file = project.settings.serve.clone();
    if file.tokens.is_some() && !given.flag("tokens") && env_tokens().is_some() {
        note_env_override("KILN_TOKENS", "serve.tokens", project);
        file.tokens = None;
    }
    fill!(given, a, file; bind, tokens, auth_issuer, auth_audience, max_runs, queue, retry_after,
        max_body, run_timeout, approval_timeout, request_timeout, grace, log_retention,
        queue_timeout, header_timeout, body_timeout, allow_origins, max_connections, log_format);
    if let Some(caps) = caps {
        a.caps = caps;
    }
    super::project::unused_audience(
        a.auth_audience.is_some() && a.auth_issuer.is_none(),
        "serve",
        project,
    )
}

impl From<kiln::project::LogFormat> for LogFormat {
    fn from(f: kiln::project::LogFormat) -> Self {
        match f {
            kiln::project::LogFormat::Text => LogFormat::Text,
            kiln::project::LogFormat::Json => LogFormat::Json,
        }
    }
}

/// `KILN_TOKENS`, when set and not blank.
fn env_tokens() -> Option<String> {
    std::env::var("KILN_TOKENS")
        .ok()
        .filter(|t| !t.trim().is_empty())
}

fn tokens(a: &ServeArgs) -> CliResult<Tokens> {
    match (&a.tokens, env_tokens()) {
        (Some(_), Some(_)) => Err("give tokens with --tokens or KILN_TOKENS, not both".into()),
        (Some(path), None) => Ok(Tokens::from_file(path)?),
        (None, Some(text)) => Ok(Tokens::parse(&text, "KILN_TOKENS")?),
        (None, None) => Ok(Tokens::default()),
    }
    .and_then(|tokens| match &a.auth_issuer {
        None => Ok(tokens),
        Some(issuer) => {
            let audience = a
                .auth_audience
                .clone()
                .unwrap_or_else(|| format!("http://{}", a.bind));
            let issuer = kiln::mcp::Issuer::new(issuer, &audience)?;
            Ok(tokens.with_issuer(issuer))
        }
    })
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The worker's Restate endpoint with `--restate`: its walls are the server's.
fn restate_worker(
    a: &ServeArgs,
    state: &AppState,
) -> CliResult<Option<restate_sdk::endpoint::Endpoint>> {
    if !a.restate {
        return Ok(None);
    }
    if a.restate_identity_key.is_empty() && !a.restate_bind.ip().is_loopback() {
        return Err(format!(
            "refusing to serve Restate handlers on {} without --restate-identity-key: anyone who can reach it could run agents (give Restate's public key, or bind 127.0.0.1)",
            a.restate_bind
        )
        .into());
    }
    let worker = kiln::durable::WorkerOptions {
        overrides: kiln::model::ProviderOverrides {
            timeout: state.options.request_timeout,
            ..Default::default()
        },
        ceiling: state.options.ceiling.clone(),
        slots: Some(state.limiter.clone()),
        run_timeout: state.options.run_timeout,
        approval_timeout: state.options.approval_timeout,
        identity_keys: a.restate_identity_key.clone(),
    };
    Ok(Some(kiln::durable::endpoint(state.host.clone(), worker)?))
}

/// Forgets runs older than `keep` seconds now and then every tenth of `keep` (an hour at
/// most, a second at least), so the log holds at most about 1.1 times the retention's worth of
/// runs. On the blocking pool: SQLite.
async fn prune_forever(db: std::sync::Arc<kiln::log::Db>, keep: f64) {
    let every = Duration::from_secs_f64((keep / 10.0).clamp(1.0, 3600.0));
    loop {
        let db2 = db.clone();
        let pruned =
            tokio::task::spawn_blocking(move || db2.prune_runs(kiln::log::now() - keep)).await;
        match pruned {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(runs = n, "log retention: forgot old runs"),
            Ok(Err(e)) => tracing::warn!("log retention: {e}"),
            Err(e) => tracing::warn!("log retention: {e}"),
        }
        tokio::time::sleep(every).await;
    }
}

/// Runs `kiln serve`.
pub fn serve(g: &Global, a: ServeArgs) -> CliResult<ExitCode> {
    let tokens = tokens(&a)?;
    refuse_open_bind(&a, &tokens)?;
    let front = match (&a.restate_ingress, &a.restate_admin) {
        (Some(ingress), Some(admin)) => Some(kiln::durable::RestateClient::new(ingress, admin)?),
        _ => None,
    };
    let (host, db) = g.host_with_checked_db(super::db_cmd::DbCheck::Always)?;
    for e in host.load_errors() {
        tracing::error!("{e}");
    }
    let options = serve_options(g, &a)?;
    let mut state = AppState::new(host, tokens, options);
    if let Some(front) = front {
        state = state.with_front(front);
    }
    let state = Arc::new(state);
    let endpoint = restate_worker(&a, &state)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve_until_signal(&a, state, endpoint, db))?;
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(ExitCode::SUCCESS)
}

/// Refuses a non-loopback `--bind` without tokens: anyone who could reach it could run agents.
fn refuse_open_bind(a: &ServeArgs, tokens: &Tokens) -> CliResult<()> {
    if tokens.is_empty() && !a.bind.ip().is_loopback() {
        return Err(format!(
            "refusing to serve on {} without tokens: anyone who can reach it could run agents (use --tokens FILE or KILN_TOKENS, or bind 127.0.0.1)",
            a.bind
        )
        .into());
    }
    Ok(())
}

/// The API's limits and timeouts from the flags; `--caps` becomes the ceiling of every request.
fn serve_options(g: &Global, a: &ServeArgs) -> CliResult<ServeOptions> {
    if let Some(dir) = &a.static_dir
        && !dir.is_dir()
    {
        return Err(format!("--static {}: no such folder", dir.display()).into());
    }
    Ok(ServeOptions {
        max_runs: a.max_runs,
        queue: a.queue,
        retry_after: a.retry_after,
        max_body: a.max_body,
        run_timeout: a.run_timeout.nonzero(),
        approval_timeout: a.approval_timeout.nonzero().unwrap_or(d::APPROVAL_TIMEOUT),
        request_timeout: a.request_timeout.nonzero(),
        grace: a.grace.0,
        ceiling: if a.caps.is_empty() {
            None
        } else {
            Some(g.mark_ask(parse_caps(&a.caps)?))
        },
        allowed_origins: a.allow_origins.clone(),
        allowed_hosts: vec![a.bind.ip().to_string()],
        queue_timeout: a.queue_timeout.0,
        http: kiln::serve::http::HttpLimits {
            header_timeout: a.header_timeout.0,
            body_timeout: a.body_timeout.0,
            max_connections: a.max_connections,
            // The API answers its own 413 up to its --max-body; beyond twice that the listener does.
            max_body: (a.max_body.saturating_mul(2))
                .max(kiln::serve::http::HttpLimits::default().max_body),
        },
        console: !a.no_console,
        app_sandbox_port: a.app_sandbox_port,
        static_dir: a.static_dir.clone(),
        trace_url: a.trace_url.as_deref().map(trace_url).transpose()?,
        a2a: kiln::serve::A2aOptions {
            wait: a.a2a_wait.0,
            push: a
                .a2a_push
                .iter()
                .map(|s| push_scope(s))
                .collect::<CliResult<_>>()?,
            root: a.a2a_root.clone(),
        },
    })
}

/// A `--a2a-push` scope: `net` (public addresses) or `net:SCOPE`, checked as grants are.
fn push_scope(text: &str) -> CliResult<Option<String>> {
    let scope = match text.strip_prefix("net:") {
        None if text == "net" => return Ok(None),
        None => text,
        Some(scope) => scope,
    };
    kiln::egress::NetScope::parse(scope)
        .map(|_| Some(scope.to_string()))
        .map_err(|e| format!("--a2a-push {text}: {e}").into())
}

/// `--trace-url`: an http(s) address with `{trace_id}` where each run's trace id goes.
fn trace_url(url: &str) -> CliResult<String> {
    let web = url.starts_with("http://") || url.starts_with("https://");
    if !web || !url.contains("{trace_id}") {
        return Err(format!(
            "--trace-url {url:?}: give an http(s) address with {{trace_id}} where the trace id goes, e.g. http://127.0.0.1:6006/projects/PROJECT/traces/{{trace_id}}"
        )
        .into());
    }
    Ok(url.to_string())
}

/// Serves the API (and the Restate worker, when there is one) until SIGTERM or Ctrl-C, then
/// waits for both to drain.
async fn serve_until_signal(
    a: &ServeArgs,
    state: Arc<AppState>,
    endpoint: Option<restate_sdk::endpoint::Endpoint>,
    db: Arc<kiln::log::Db>,
) -> CliResult<()> {
    let listener = kiln::serve::http::bind(a.bind)
        .await
        .map_err(|e| format!("--bind {}: {e}", a.bind))?;
    let addr = listener.local_addr()?;
    let worker = match &endpoint {
        Some(_) => Some(
            tokio::net::TcpListener::bind(a.restate_bind)
                .await
                .map_err(|e| format!("--restate-bind {}: {e}", a.restate_bind))?,
        ),
        None => None,
    };
    announce_tokens(&state.tokens);
    // A connection, and a model connection for each run, plus the database, scripts and logs.
    let wanted = (a.max_connections + a.max_runs) as u64 + 64;
    if let Some(warning) = super::serve_cmd::fds::raise_open_file_limit(wanted) {
        tracing::warn!("{warning}");
    }
    let mcp = mcp_endpoint(a, &state, addr);
    // Watching before the address is announced: an edit made from then on is seen.
    let _reloads = kiln::serve::watch_reloads(&state, mcp.as_ref().map(|m| m.server.clone()))?;
    let retention = a.log_retention.map(|r| r.0.as_secs_f64());
    let _retention = retention.map(|keep| tokio::spawn(prune_forever(db.clone(), keep)));
    // The first stdout line: scripts and tests read the address from it.
    println!("kiln serve: listening on http://{addr}");
    if !a.no_console {
        // On stderr: stdout's lines are the addresses scripts read.
        eprintln!("kiln serve: console at http://{addr}/ui");
    }
    if let Some(dir) = &a.static_dir {
        eprintln!("kiln serve: {} at http://{addr}/app/", dir.display());
    }
    eprintln!("kiln serve: {}", super::programs::describe_program_pool());
    // Both servers stop on the one signal: fan it out.
    let stop = tokio_util::sync::CancellationToken::new();
    let mut worker_task = None;
    if let (Some(endpoint), Some(worker)) = (endpoint, worker) {
        println!(
            "kiln serve: Restate worker listening on http://{}",
            worker.local_addr()?
        );
        let stopped = stop.clone().cancelled_owned();
        worker_task = Some(tokio::spawn(kiln::durable::serve(
            endpoint, worker, stopped,
        )));
    }
    if state.front.is_some() {
        crate::cli::output::errln!(
            "kiln serve: /v1/runs, /v1/responses and A2A tasks go through Restate's ingress at {}",
            a.restate_ingress.as_deref().unwrap_or_default()
        );
    }
    let signal = {
        let stop = stop.clone();
        async move {
            shutdown_signal().await;
            stop.cancel();
        }
    };
    let served = kiln::serve::serve(state.clone(), listener, mcp, signal).await;
    stop.cancel();
    if let Some(task) = worker_task {
        let _ = task.await;
    }
    served.map_err(Box::<dyn std::error::Error>::from)
}

/// Tells stderr whether bearer tokens guard the API or only loopback clients may reach it.
fn announce_tokens(tokens: &Tokens) {
    if tokens.is_empty() {
        crate::cli::output::errln!(
            "kiln serve: no tokens configured: open to local clients only (loopback)"
        );
    } else {
        crate::cli::output::errln!("kiln serve: {} bearer token(s) configured", tokens.len());
    }
}

/// MCP at /mcp, for local clients only: its one bearer check knows nothing of the tokens'
/// actors and ceilings, so with tokens configured it stays off (`None`).
fn mcp_endpoint(
    a: &ServeArgs,
    state: &AppState,
    addr: SocketAddr,
) -> Option<kiln::mcp::McpEndpoint> {
    state.tokens.is_empty().then(|| {
        let grants = state.options.ceiling.clone().unwrap_or_default();
        let mut server = kiln::mcp::McpServer::new(state.host.clone(), grants);
        // Behind Restate, a task is a durable invocation any worker answers for.
        if let Some(front) = &state.front {
            let engine = kiln::serve::RestateTasks::new(front.clone());
            server = server.with_durable_tasks(std::sync::Arc::new(engine));
        } else if let Some(db) = state.host.database().filter(|db| db.is_postgres()) {
            // Servers sharing a PostgreSQL database answer for each other's tasks.
            server = kiln::serve::share_tasks(server, db.clone());
        }
        kiln::mcp::McpEndpoint::new(
            server,
            kiln::mcp::HttpOptions {
                token: None,
                allowed_origins: a.allow_origins.clone(),
                allowed_hosts: vec![addr.ip().to_string()],
                port: Some(addr.port()),
                ..Default::default()
            },
        )
    })
}
