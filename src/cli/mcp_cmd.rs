//! `kiln mcp`: serve the scripts' tools to MCP clients over stdio or streamable HTTP.

use super::project::{Given, fill};
use super::{CliResult, Global, parse_caps};
use clap::Args;
use futures_util::StreamExt;
use kiln::Host;
use kiln::mcp::{HttpOptions, McpServer, MountSpec, Mounts};
use kiln::project::{Project, Seconds, defaults as d};
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `kiln mcp` options.
#[derive(Args, Debug)]
pub struct McpArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (ADDR: 127.0.0.1:8765 unless
    /// given).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = d::MCP_HTTP_BIND)]
    pub http: Option<String>,
    /// Serve stdio even where kiln.toml's `[mcp] http` names an address.
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Capabilities granted to MCP clients (comma-separated, repeatable); tools needing more
    /// are not listed and are refused.
    #[arg(long, value_name = "CAPS")]
    pub caps: Vec<String>,
    /// HTTP only: require `Authorization: Bearer TOKEN`, TOKEN read from this environment variable.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// With --http: also take the access tokens (JWTs) this OAuth authorization server issues
    /// for this server; their scopes `kiln:CAP[:SCOPE]` narrow each request's grants (--caps),
    /// their subject is the actor.
    #[arg(long, value_name = "URL", requires = "http")]
    pub auth_issuer: Option<String>,
    /// The audience those tokens must name: this server's URL as clients reach it (default:
    /// http://ADDR/mcp).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// Also offer each agent as a tool ask_AGENT (one `prompt` parameter).
    /// `=false` turns off what kiln.toml turns on.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub agents: bool,
    /// Offer two tools instead of every tool: `run_code` (a Rhai program calling the tools as
    /// functions, each call guarded and logged as a direct one) and `search_tools`.
    /// `=false` turns off what kiln.toml turns on.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub code_mode: bool,
    /// List these tools (a name, or a prefix ending in `*`: `github__*`; repeatable) only once
    /// a session's `search_tools` finds them; they stay callable by name.
    #[arg(long, value_name = "PATTERN", conflicts_with = "code_mode")]
    pub defer: Vec<String>,
    /// HTTP only: also accept requests from this Origin (repeatable), e.g. `https://app.example:*`
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// HTTP only: how long a client may take to send a request's headers (also how long an
    /// idle keep-alive connection stays open).
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::HEADER_TIMEOUT))]
    pub header_timeout: Seconds,
    /// HTTP only: how long a client may take to send a request's body.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::BODY_TIMEOUT))]
    pub body_timeout: Seconds,
    /// HTTP only: MCP sessions open at once at most; one more `initialize` gets 503.
    #[arg(long, value_name = "N", default_value_t = d::MAX_SESSIONS)]
    pub max_sessions: usize,
    /// HTTP only: how long a session may go without a request before it is closed.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::SESSION_IDLE))]
    pub session_idle: Seconds,
    /// HTTP only: open connections at most; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = d::MAX_CONNECTIONS)]
    pub max_connections: usize,
}

/// Fills what the flags left unset from the project file's `[mcp]` and `[grants]`.
pub fn apply(
    a: &mut McpArgs,
    project: &Project,
    given: &Given,
    caps: Option<Vec<String>>,
) -> CliResult<()> {
    let file = &project.settings.mcp;
    fill!(given, a, file; http, token_env, auth_issuer, auth_audience, agents, code_mode, defer,
        allow_origins, header_timeout, body_timeout, max_sessions, session_idle, max_connections);
    if a.stdio {
        a.http = None;
    }
    if a.code_mode && !a.defer.is_empty() {
        let path = project.path.display();
        return Err(format!("{path}: [mcp] defer and code_mode do not go together: code mode's search_tools already covers every tool").into());
    }
    if let Some(caps) = caps {
        a.caps = caps;
    }
    if a.auth_issuer.is_some() && a.http.is_none() {
        let path = project.path.display();
        return Err(format!("{path}: [mcp] auth_issuer takes effect over HTTP only: set `http` (or --http), or leave it out").into());
    }
    super::project::unused_audience(
        a.auth_audience.is_some() && a.auth_issuer.is_none(),
        "mcp",
        project,
    )
}

/// Runs `kiln mcp` until the client disconnects (stdio) or Ctrl-C (HTTP).
pub fn mcp(g: &Global, a: McpArgs) -> CliResult<ExitCode> {
    if let Some(var) = &a.token_env {
        // The server's own credential: no tool reads it through `env`.
        kiln::tool::declare_secret_var(var);
    }
    let grants = g.mark_ask(parse_caps(&a.caps)?);
    let host = g.builder()?.database(g.db_path()).build()?;
    if let Some(db) = host.database() {
        super::db_cmd::DbCheck::Always.run(db)?;
    }
    let server = McpServer::new(host.clone(), grants)
        .with_agents(a.agents)
        .with_code_mode(a.code_mode)
        .with_defer(a.defer.clone());
    if a.code_mode {
        // On stderr: stdout carries the protocol.
        crate::cli::output::errln!("kiln mcp: {}", super::programs::describe_program_pool());
    }
    // A mounted server's list_changed is a reload: pass it on to this server's clients.
    let notifier = server.clone();
    mount_reporting(g, &host, move |line| {
        crate::cli::output::errln!("{line}");
        notifier.notify_tools_changed();
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        for e in &host.registry().errors {
            tracing::error!("{e}");
        }
        let mut reloads = host.watch()?;
        let notifier = server.clone();
        tokio::spawn(async move {
            while let Some(report) = reloads.next().await {
                crate::cli::output::errln!("{report}");
                if !report.deferred {
                    notifier.notify_tools_changed();
                }
            }
        });
        match &a.http {
            None => server.serve_stdio().await?,
            Some(addr) => serve_http(server, addr, &a).await?,
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn serve_http(server: McpServer, addr: &str, a: &McpArgs) -> CliResult<()> {
    let token = match &a.token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.is_empty() => Some(t),
            _ => return Err(format!("--token-env {var}: the variable is not set or empty").into()),
        },
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| kiln::mcp::McpError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() && token.is_none() && a.auth_issuer.is_none() {
        crate::cli::output::errln!(
            "kiln: warning: serving MCP on {local}, beyond this machine, without --token-env"
        );
    }
    let issuer = match &a.auth_issuer {
        None => None,
        Some(issuer) => {
            let audience = a
                .auth_audience
                .clone()
                .unwrap_or_else(|| format!("http://{local}/mcp"));
            Some(std::sync::Arc::new(kiln::mcp::Issuer::new(
                issuer, &audience,
            )?))
        }
    };
    let opts = HttpOptions {
        issuer,
        token,
        allowed_origins: a.allow_origins.clone(),
        allowed_hosts: vec![local.ip().to_string()],
        port: Some(local.port()),
        max_sessions: a.max_sessions,
        session_idle: Some(a.session_idle.0),
    };
    println!("kiln mcp listening on http://{local}/mcp");
    std::io::stdout().flush()?;
    let app = kiln::mcp::router(server, opts);
    let stop = tokio_util::sync::CancellationToken::new();
    let limits = kiln::serve::http::HttpLimits {
        header_timeout: a.header_timeout.0,
        body_timeout: a.body_timeout.0,
        max_connections: a.max_connections,
        ..Default::default()
    };
    let served = tokio::spawn(kiln::serve::http::serve(
        listener,
        app,
        limits,
        stop.clone(),
    ));
    tokio::signal::ctrl_c().await?;
    stop.cancel();
    // Open streams end with the process; a moment for answers being written.
    let _ = tokio::time::timeout(Duration::from_secs(2), served).await;
    Ok(())
}

/// Mounted servers live as long as the process (their children exit when it does).
static MOUNTS: Mutex<Vec<Mounts>> = Mutex::new(Vec::new());

/// Mounts the `--mcp` servers into `host`; reloads are reported on stderr.
pub fn mount(g: &Global, host: &Arc<Host>) -> CliResult<()> {
    mount_reporting(g, host, |line| crate::cli::output::errln!("{line}"))
}

fn mount_reporting(
    g: &Global,
    host: &Arc<Host>,
    report: impl Fn(String) + Send + Sync + 'static,
) -> CliResult<()> {
    // Servers declared in scripts report the same way as `--mcp` ones.
    let report = Arc::new(report);
    let declared = report.clone();
    host.on_mcp_report(move |line| declared(line));
    if g.mcp.is_empty() {
        return Ok(());
    }
    let specs = g
        .mcp
        .iter()
        .map(|s| MountSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mounts = host.mount(specs, move |line| report(line))?;
    if let Ok(mut all) = MOUNTS.lock() {
        all.push(mounts);
    }
    Ok(())
}
