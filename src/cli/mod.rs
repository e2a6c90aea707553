//! Command definitions and dispatch.

mod approve;
mod ask;
mod auth_cmd;
mod authoring;
mod db_cmd;
mod extract_cmd;
mod mcp_cmd;
pub mod output;
pub mod programs;
pub mod project;
mod run_cmd;
mod serve_cmd;
mod tools_cmd;
mod worker_cmd;

use clap::{Args, Parser, Subcommand};
use kiln::{Grants, Host, HostConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Errors the CLI renders: library errors and its own argument problems.
pub type CliResult<T> = Result<T, Box<dyn std::error::Error>>;

/// kiln — tools and agents written as Rhai scripts, hosted safely.
#[derive(Parser, Debug)]
#[command(
    name = "kiln",
    version,
    about,
    long_about = "kiln loads tools and agents from Rhai scripts (the folders kiln.toml names, else ./scripts, plus the built-in stdlib), validates every argument against the tools' JSON Schemas, enforces capabilities, and runs agents against the model APIs people use (providers anthropic, openai, openai-responses, azure, azure-responses, gemini, bedrock and ollama) or an offline Rhai planner (script). A project's settings live in kiln.toml, found from the current folder upward; a flag overrides it, and so does an environment variable a flag reads (KILN_DB...), with a note on stderr (docs/project.md)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// The project file (default: the nearest kiln.toml in this folder or above). Its keys fill
    /// what the flags leave unset: a flag overrides the file, and so does an environment
    /// variable a flag reads (KILN_DB, KILN_NET_PROXY, KILN_TOKENS), with a note on stderr.
    #[arg(long = "project", global = true, value_name = "FILE")]
    pub project_file: Option<PathBuf>,
    /// Read no project file.
    #[arg(long, global = true, conflicts_with = "project_file")]
    pub no_project: bool,
    /// Scripts folder to load (repeatable). Default: kiln.toml's `scripts`, else ./scripts
    #[arg(long = "scripts", short = 's', global = true, value_name = "DIR")]
    pub scripts: Vec<PathBuf>,
    /// Folder that file host functions are rooted at (default: the project file's folder).
    #[arg(long, global = true, value_name = "DIR", default_value = kiln::project::defaults::WORKSPACE)]
    pub workspace: PathBuf,
    /// Do not load the built-in stdlib tools.
    #[arg(long, global = true, conflicts_with = "stdlib")]
    pub no_stdlib: bool,
    /// Load the built-in stdlib tools even where kiln.toml says `stdlib = false`.
    #[arg(long, global = true)]
    pub stdlib: bool,
    /// The database (run log, sessions, store, stored responses): an SQLite file, or a
    /// PostgreSQL server several kiln processes share, postgres://USER@HOST:PORT/NAME (the
    /// password from KILN_DB_PASSWORD or PGPASSWORD). Default: WORKSPACE/.kiln/kiln.db
    #[arg(long, global = true, value_name = "PATH|URL", env = "KILN_DB")]
    pub db: Option<PathBuf>,
    /// Approve every call needing approval without asking (needed for approvals without a
    /// terminal).
    #[arg(long, global = true)]
    pub yes: bool,
    /// Mark these granted capabilities as needing approval (comma-separated, repeatable;
    /// `--ask` is its former spelling).
    #[arg(
        long = "needs-approval",
        alias = "ask",
        global = true,
        value_name = "CAPS"
    )]
    pub needs_approval: Vec<String>,
    /// Make http_get/http_post resolve NAME to ADDR (like curl's --resolve; repeatable).
    #[arg(long = "resolve", global = true, value_name = "NAME:ADDR")]
    pub resolve: Vec<String>,
    /// Let http_get/http_post use HTTP_PROXY and friends; the proxy then makes the connection,
    /// so only the address the name resolves to here is checked. `--net-proxy=false` turns off
    /// what kiln.toml turns on; KILN_NET_PROXY takes true/false, 1/0, yes/no, on/off.
    #[arg(
        long,
        global = true,
        env = "KILN_NET_PROXY",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "false",
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    pub net_proxy: bool,
    /// Speak HTTP/1.1 only to model providers and every other HTTPS server kiln reaches. By
    /// default kiln offers HTTP/2 over TLS and speaks it where the server agrees (runs to one
    /// provider then share a few connections, at most 100 requests on each); plain http:// is
    /// always HTTP/1.1. kiln.toml: `[network] http1 = true`.
    #[arg(long, global = true)]
    pub http1: bool,
    /// Mount an MCP server's tools as NAME__TOOL, needing capability mcp:NAME (repeatable):
    /// NAME=COMMAND ARGS... (stdio), "NAME=http://HOST:PORT/mcp [bearer_env=VAR]", or
    /// "NAME=https://HOST/mcp oauth [scopes=a,b] [client_id=ID] [client_secret_env=VAR]
    /// [client_metadata_url=URL]" (then `kiln auth login NAME`)
    #[arg(long = "mcp", global = true, value_name = "NAME=SERVER")]
    pub mcp: Vec<String>,
    /// Whether `mcp` came from kiln.toml's `[mounts]` rather than the command line (commands
    /// that only read the project start the ones given on the command line only).
    #[arg(skip)]
    pub mounts_from_project: bool,
    /// Send traces (OpenTelemetry GenAI spans: runs, model requests, tool calls, pipelines)
    /// to this OTLP/HTTP collector, e.g. http://127.0.0.1:6006 (Phoenix) or :4318. Default:
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, else no export.
    #[arg(long, global = true, value_name = "URL")]
    pub otlp: Option<String>,
    /// Put tool arguments and results in the traces too (they may hold personal data; also
    /// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
    #[arg(long, global = true)]
    pub otlp_content: bool,
    /// More log output on stderr (-v info, -vv debug). KILN_LOG overrides.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Code-mode programs running at once, each in a worker process of its own; more wait
    /// for a slot within their deadline. Default: the number of cores (kiln.toml
    /// `[programs] max`).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_programs: Option<u16>,
    /// Memory (address space) of each program's worker, in MiB: all programs together hold
    /// at most --max-programs times this. Default: 512 (kiln.toml `[programs] memory_mib`).
    #[arg(long, global = true, value_name = "MIB", value_parser = clap::value_parser!(u64).range(128..=1048576))]
    pub program_memory: Option<u64>,
    /// The project file read, if any.
    #[arg(skip)]
    pub project: Option<Arc<kiln::project::Project>>,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load every script and report errors as path:line:col (exit 1 if any); warn about
    /// deprecated spellings, which --fix rewrites to their new names.
    Check(tools_cmd::CheckArgs),
    /// List tools: a table, or JSON definitions with --json / --format.
    Tools(tools_cmd::ToolsArgs),
    /// Print one tool's definition in a provider format.
    Schema(tools_cmd::SchemaArgs),
    /// Call a tool with JSON arguments and print the result (exit 1 when it fails).
    Call(tools_cmd::CallArgs),
    /// List agents.
    Agents,
    /// Run an agent on a prompt: the answer streams to stdout, tool calls show on stderr.
    Ask(ask::AskArgs),
    /// Run a pipeline: nodes on stderr, outputs on stdout (everything as JSON with --json).
    Run(run_cmd::RunArgs),
    /// Serve a fake model provider on 127.0.0.1 from a scenario file.
    ///
    /// It speaks every wire kiln's agents use (anthropic, openai, openai-responses, azure,
    /// azure-responses, gemini, bedrock, ollama), checks each request as the service would and
    /// answers the scenario's turns (docs/testing.md).
    Mock(authoring::mock_cmd::MockArgs),
    /// Run the tool calls written in free text on stdin ({"tool": ..., "parameters": ...}).
    Extract(extract_cmd::ExtractArgs),
    /// Write a .d.rhai file describing the DSL and host functions (for editor support).
    Definitions(authoring::defs_cmd::DefsArgs),
    /// Language Server over stdio for editors: diagnostics as `kiln check` reports them,
    /// completion, hover, go to definition, document symbols (docs/editors.md).
    Lsp,
    /// Serve an agent to an editor over stdio as an Agent Client Protocol (ACP) agent (Zed,
    /// JetBrains, Neovim): sessions kept in the database and loaded back, answers and tool
    /// calls streamed, approvals asked in the editor, cancel (docs/editors.md).
    ///
    /// stdout carries the protocol only (newline-delimited JSON-RPC); logs go to stderr.
    Acp(authoring::acp_cmd::AcpArgs),
    /// Show the run log: runs, tool calls, usage (newest first).
    Logs(db_cmd::LogsArgs),
    /// List, show or delete saved sessions.
    Sessions(db_cmd::SessionsArgs),
    /// The database itself: `migrate --to postgres://…` copies everything it keeps into
    /// another (docs/scaling.md).
    Db(db_cmd::DbArgs),
    /// Watch the scripts folders and print one line per reload.
    Watch,
    /// Run `*.test.rhai` tests: `test NAME ... ok|FAILED`, `N passed, M failed` (exit 1 on failure).
    Test(authoring::test_cmd::TestArgs),
    /// Run an evaluation (`evaluation(NAME)` in a script) over its models, cases and repeats:
    /// a table per model, --json/--junit/--html reports, baselines (exit 1 on a regression).
    Eval(authoring::eval_cmd::EvalArgs),
    /// Start a project: scripts/ with a tool, an agent and a passing test, a commented kiln.toml,
    /// .gitignore, definitions.
    Init(authoring::init_cmd::InitArgs),
    /// Serve the tools to MCP clients (Claude Code, Cursor...) over stdio, or HTTP with --http.
    Mcp(mcp_cmd::McpArgs),
    /// Serve agents as a durable Restate worker (`--restate --bind ADDR`); see docs/scaling.md.
    Worker(worker_cmd::WorkerArgs),
    /// Talk to a Restate server: `register --admin URL --endpoint URL`.
    Restate(worker_cmd::RestateArgs),
    /// OAuth for mounted MCP servers: `login NAME [--headless]`, `status`, `logout NAME`.
    Auth(auth_cmd::AuthArgs),
    /// Serve the agents over HTTP: OpenAI-compatible chat completions and kiln's runs API.
    Serve(serve_cmd::ServeArgs),
    /// Interactive REPL: call tools, chat with agents, evaluate Rhai (hot reload on).
    Repl {
        /// Capabilities the REPL grants (comma-separated, repeatable); change them with :caps.
        #[arg(long, value_name = "CAPS")]
        caps: Vec<String>,
    },
}

/// Sets up tracing on stderr (a server logs requests and runs by default, optionally as JSON)
/// and, when asked for, trace export over OTLP; the exporter returned must be shut down at
/// exit so queued spans are sent.
pub fn init_logging(cli: &Cli) -> Option<kiln_otel::export::Exporter> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{Layer, fmt};
    let serve = match &cli.command {
        Some(Command::Serve(a)) => Some(a),
        _ => None,
    };
    let default = match (cli.global.verbose, serve.is_some()) {
        (0, false) => "warn",
        (0, true) | (1, _) => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("KILN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let fmt = fmt::layer()
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: piped logs stay plain text.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .with_target(false);
    let fmt = if serve.is_some_and(|a| a.log_format == serve_cmd::LogFormat::Json) {
        fmt.event_format(kiln::serve::logfmt::JsonLines).boxed()
    } else {
        fmt.boxed()
    };
    let content = cli.global.otlp_content
        || std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    kiln::traces::set_capture_content(content);
    let mut failed = None;
    let exporter = match kiln_otel::export::endpoint(cli.global.otlp.as_deref()) {
        Some(url) => kiln_otel::export::Exporter::start(&url)
            .map_err(|e| failed = Some(e))
            .ok(),
        None => None,
    };
    let registry = tracing_subscriber::registry().with(fmt.with_filter(filter));
    let _ = match &exporter {
        Some(e) => registry.with(e.layer()).try_init(),
        None => registry.try_init(),
    };
    if let Some(e) = failed {
        tracing::warn!("traces are not exported: {e}");
    }
    exporter
}

impl Global {
    /// The host configuration these options describe.
    pub(crate) fn config(&self) -> HostConfig {
        HostConfig {
            scripts: project::scripts_or_default(self),
            workspace: self.workspace.clone(),
            stdlib: !self.no_stdlib,
            providers: self
                .project
                .as_deref()
                .map(project::providers)
                .unwrap_or_default(),
            ..HostConfig::default()
        }
    }

    /// Builds the host, refusing explicitly named folders that do not exist; the MCP servers
    /// the project names start, and a line on stderr says so.
    pub fn host(&self) -> CliResult<Arc<Host>> {
        let host = self.builder()?.build()?;
        project::mounts::report_started(self, &host);
        mcp_cmd::mount(self, &host)?;
        Ok(host)
    }

    /// A host for a command that only reads the project: no MCP server starts
    /// ([`project::mounts::reading_host`]).
    pub fn reading_host(&self, command: &str) -> CliResult<Arc<Host>> {
        project::mounts::reading_host(self, command)
    }

    pub(crate) fn builder(&self) -> CliResult<kiln::HostBuilder> {
        for dir in &self.scripts {
            if !dir.is_dir() {
                let named_by = (self.project.as_deref())
                    .filter(|p| p.settings.scripts.as_ref().is_some_and(|s| s.contains(dir)))
                    .map(|p| format!(" (named by `scripts` in {})", p.path.display()))
                    .unwrap_or_default();
                let dir = dir.display();
                return Err(format!("scripts folder {dir}{named_by} does not exist").into());
            }
        }
        let mut b = Host::builder()
            .config(self.config())
            .assume_yes(self.yes)
            .egress(self.egress()?);
        if let Some(approver) = approve::terminal() {
            b = b.approver(approver);
        }
        Ok(b)
    }

    /// How these options let scripts reach the network (`--resolve`, `--net-proxy`).
    fn egress(&self) -> CliResult<kiln::egress::Egress> {
        use kiln::egress::{NameResolver, ResolveOverrides, SystemResolver};
        let system: Arc<dyn NameResolver> = Arc::new(SystemResolver);
        let resolver = ResolveOverrides::parse(&self.resolve, system)?;
        Ok(kiln::egress::Egress::default()
            .resolver(Arc::new(resolver))
            .use_env_proxy(self.net_proxy))
    }

    /// The database path these options name.
    pub fn db_path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| kiln::log::default_path(&self.workspace))
    }

    /// Opens the database (an SQLite file, or a `postgres://` URL).
    pub fn open_db(&self) -> CliResult<Arc<kiln::log::Db>> {
        Ok(Arc::new(kiln::log::Db::connect(
            &self.db_path().to_string_lossy(),
        )?))
    }

    /// A host whose `store_*` persist in the database, and the database (for the run log),
    /// checked as [`db_cmd::DbCheck::IfSmall`] says.
    pub fn host_with_db(&self) -> CliResult<(Arc<Host>, Arc<kiln::log::Db>)> {
        self.host_with_checked_db(db_cmd::DbCheck::IfSmall)
    }

    /// [`Global::host_with_db`], the database's pages checked as `check` says before any
    /// server is mounted or anything runs.
    pub fn host_with_checked_db(
        &self,
        check: db_cmd::DbCheck,
    ) -> CliResult<(Arc<Host>, Arc<kiln::log::Db>)> {
        let host = self.builder()?.database(self.db_path()).build()?;
        let db = host
            .database()
            .cloned()
            .ok_or("the database did not open")?;
        check.run(&db)?;
        project::mounts::report_started(self, &host);
        mcp_cmd::mount(self, &host)?;
        Ok((host, db))
    }

    /// Grants with `--needs-approval` applied.
    pub fn mark_ask(&self, mut grants: Grants) -> Grants {
        let names: Vec<&str> = self
            .needs_approval
            .iter()
            .flat_map(|c| c.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        grants.mark_ask(&names);
        grants
    }
}

/// What a call or run is for: grants, application context and actor (`call`, `ask`).
#[derive(Args, Debug, Clone)]
pub struct ContextArgs {
    /// Capabilities granted (comma-separated, repeatable), e.g. store,net:api.github.com;
    /// for `ask` they narrow the agent's own (the run gets what both allow)
    #[arg(long, value_name = "CAPS")]
    pub caps: Vec<String>,
    /// Application context visible to handlers as ctx.context (KEY=VALUE; VALUE may be JSON).
    #[arg(long = "context", short = 'c', value_name = "KEY=VALUE")]
    pub context: Vec<String>,
    /// The actor the work is done for (ctx.actor_id).
    #[arg(long, value_name = "ID")]
    pub actor: Option<String>,
}

/// The runtime of a command that runs one agent or one call: one thread, so the loop, its
/// connection and the run log's commits take turns on it with no wake-up crossing threads
/// (tool handlers that may block still go to the blocking pool).
pub fn one_thread_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Parses `--caps a,b` lists.
pub fn parse_caps(caps: &[String]) -> CliResult<Grants> {
    let list: Vec<&str> = caps
        .iter()
        .flat_map(|c| c.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    Ok(Grants::parse(&list)?)
}

/// Reads the project file (`kiln.toml`) and fills what the flags left unset: the options every
/// command takes, then the command's own (docs/project.md has the precedence).
pub fn apply_project(cli: &mut Cli, matches: &clap::ArgMatches) -> CliResult<()> {
    let given = project::Given::new(matches);
    let Some(file) = project::apply_global(&mut cli.global, &given)? else {
        return Ok(());
    };
    let caps = project::caps(&file, &given);
    match &mut cli.command {
        Some(Command::Serve(a)) => serve_cmd::apply(a, &file, &given, caps)?,
        Some(Command::Mcp(a)) => mcp_cmd::apply(a, &file, &given, caps)?,
        Some(Command::Extract(a)) => project::fill_caps(&mut a.caps, caps),
        Some(Command::Call(a)) => project::fill_caps(&mut a.run.caps, caps),
        Some(Command::Ask(a)) => project::fill_caps(&mut a.run.caps, caps),
        Some(Command::Acp(a)) => project::fill_caps(&mut a.run.caps, caps),
        Some(Command::Run(a)) => project::fill_caps(&mut a.run.caps, caps),
        Some(Command::Repl { caps: mine }) => project::fill_caps(mine, caps),
        _ => {}
    }
    Ok(())
}

/// Warns about former spellings of flags still accepted (`--ask` for `--needs-approval`).
fn warn_former_spellings() {
    let args = std::env::args().skip(1).take_while(|a| a != "--");
    if args
        .into_iter()
        .any(|a| a == "--ask" || a.starts_with("--ask="))
    {
        output::warning("`--ask` is now spelt `--needs-approval` (the old spelling still works)");
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> CliResult<ExitCode> {
    warn_former_spellings();
    kiln::egress::set_http1_only(cli.global.http1);
    let Some(command) = cli.command else {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            let project = cli.global.project.as_ref();
            let caps = project.and_then(|p| p.settings.grants.caps.clone());
            return repl(&cli.global, &caps.unwrap_or_default());
        }
        <Cli as clap::CommandFactory>::command().print_help()?;
        return Ok(ExitCode::from(2));
    };
    match command {
        Command::Check(a) => tools_cmd::check(&cli.global, a),
        Command::Tools(a) => tools_cmd::tools(&cli.global, a),
        Command::Schema(a) => tools_cmd::schema(&cli.global, a),
        Command::Call(a) => tools_cmd::call(&cli.global, a),
        Command::Agents => tools_cmd::agents(&cli.global),
        Command::Ask(a) => ask::ask(&cli.global, a),
        Command::Run(a) => run_cmd::run(&cli.global, a),
        Command::Mock(a) => authoring::mock_cmd::mock(a),
        Command::Watch => authoring::watch_cmd::watch(&cli.global),
        Command::Test(a) => authoring::test_cmd::test(&cli.global, a),
        Command::Eval(a) => authoring::eval_cmd::eval(&cli.global, a),
        Command::Init(a) => authoring::init_cmd::init(&cli.global, a),
        Command::Serve(a) => serve_cmd::serve(&cli.global, a),
        Command::Logs(a) => db_cmd::logs(&cli.global, a),
        Command::Definitions(a) => authoring::defs_cmd::definitions(&cli.global, a),
        Command::Lsp => authoring::defs_cmd::lsp(&cli.global),
        Command::Acp(a) => authoring::acp_cmd::acp(&cli.global, a),
        Command::Sessions(a) => db_cmd::sessions(&cli.global, a),
        Command::Db(a) => db_cmd::db(&cli.global, a),
        Command::Extract(a) => extract_cmd::extract(&cli.global, a),
        Command::Mcp(a) => mcp_cmd::mcp(&cli.global, a),
        Command::Worker(a) => worker_cmd::worker(&cli.global, a),
        Command::Restate(a) => worker_cmd::restate(a),
        Command::Auth(a) => auth_cmd::auth(&cli.global, a),
        Command::Repl { caps } => repl(&cli.global, &caps),
    }
}

fn repl(g: &Global, caps: &[String]) -> CliResult<ExitCode> {
    let (host, db) = g.host_with_checked_db(db_cmd::DbCheck::Always)?;
    // `--needs-approval` marks the REPL's grants as it does every other door's.
    kiln_repl::run_repl(host, g.mark_ask(parse_caps(caps)?), Some(db))?;
    Ok(ExitCode::SUCCESS)
}
