//! The library's doors: [`Host::builder`], tool calls, agent runs (whole or as a stream of
//! events) and watching. Every embedding (an application, MCP, HTTP, a durable engine) goes
//! through these, so validation, the capability guard, the sandbox and the run log are applied
//! in one place.

use crate::reload::{self, ReloadReport};
use crate::{Host, HostConfig};
use futures_util::Stream;
use kiln_agent::{self, RunError, RunOptions, RunReport, StepJournal};
use kiln_core::capability::Grants;
use kiln_core::error::{HostError, LoadError};
use kiln_core::schema::Format;
use kiln_core::services::{ApproverFn, Egress, HttpFake, Services, Store};
use kiln_core::tool::{Tool, ToolOutcome};
use kiln_db::store::WorkspaceStore;
use kiln_registry::native::{HostFn, NativeTool};
use kiln_script::sandbox::Limits;
use serde_json::Value;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod stream;
pub use stream::RunStream;

/// Sets up a [`Host`]: where scripts live, what they may touch, what the application adds.
pub struct HostBuilder {
    config: HostConfig,
    database: Option<PathBuf>,
    grants: Grants,
    approver: Option<ApproverFn>,
    assume_yes: bool,
    watch: bool,
    /// Start the MCP servers scripts declare (default); off for a host that only reads them.
    mount_declared: bool,
    tools: Vec<NativeTool>,
    host_fns: Vec<HostFn>,
    egress: Egress,
    http_fake: Option<HttpFake>,
}

impl Host {
    /// A builder with no scripts folders, the stdlib on, no database and nothing granted.
    pub fn builder() -> HostBuilder {
        HostBuilder {
            config: HostConfig {
                scripts: Vec::new(),
                ..HostConfig::default()
            },
            database: None,
            grants: Grants::default(),
            approver: None,
            assume_yes: false,
            watch: false,
            mount_declared: true,
            tools: Vec::new(),
            host_fns: Vec::new(),
            egress: Egress::default(),
            http_fake: None,
        }
    }
}

impl HostBuilder {
    /// Loads every `*.rhai` file of this folder (recursively); call again for more folders.
    pub fn scripts(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.scripts.push(dir.into());
        self
    }

    /// The folder file host functions are rooted at (default `.`).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.workspace = dir.into();
        self
    }

    /// Keeps the run log, sessions and `store_*` values in this SQLite file (created if
    /// missing), or on the PostgreSQL server a `postgres://` URL names (shared with other
    /// kiln processes); without one the store lives in memory and runs are not logged. The store is
    /// keyed by the workspace's id (kept in `WORKSPACE/.kiln/workspace-id`, created on first
    /// use), so it follows a workspace that moves.
    pub fn database(mut self, path: impl Into<PathBuf>) -> Self {
        self.database = Some(path.into());
        self
    }

    /// Sandbox limits for every script evaluation.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// What [`Host::call`] grants when its [`CallOptions`] name no grants (default: nothing).
    pub fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// Asks a person before a needs-approval grant is used: `(capability, question) -> approved`.
    pub fn approver(mut self, f: impl Fn(&str, &str) -> bool + Send + Sync + 'static) -> Self {
        self.approver = Some(Box::new(f));
        self
    }

    /// Asks `approver` before a needs-approval grant is used (or where a call policy asks),
    /// awaiting its decision on the runtime the call runs on: a web app or a chat decides, and
    /// only the call's own thread waits. A call made outside a runtime is denied.
    pub fn async_approver(
        self,
        approver: impl kiln_core::approval::AsyncApprover + 'static,
    ) -> Self {
        use kiln_core::context::Approver;
        let approver: Arc<dyn kiln_core::approval::AsyncApprover> = Arc::new(approver);
        self.approver(move |cap, question| {
            kiln_core::approval::BlockingApprover::new(approver.clone())
                .is_some_and(|approver| approver.approve(cap, question).unwrap_or(false))
        })
    }

    /// Approves every needs-approval grant without asking.
    pub fn assume_yes(mut self, yes: bool) -> Self {
        self.assume_yes = yes;
        self
    }

    /// Loads the built-in stdlib tools (default on).
    pub fn stdlib(mut self, on: bool) -> Self {
        self.config.stdlib = on;
        self
    }

    /// Where providers are reached when neither a run nor its agent says (`kiln.toml`'s
    /// `[providers.NAME]`): below the providers' environment variables, above the built-in.
    pub fn providers(mut self, defaults: kiln_agent::connect::ProviderDefaults) -> Self {
        self.config.providers = defaults;
        self
    }

    /// Takes every setting of `config` at once (its scripts folders replace any named so far):
    /// the one value a command line or a project file fills.
    pub fn config(mut self, config: HostConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the MCP servers scripts declare (default on); off for a host that only reads
    /// its scripts (`kiln auth status`).
    pub fn mount_declared(mut self, on: bool) -> Self {
        self.mount_declared = on;
        self
    }

    /// Reloads changed scripts for as long as the host lives (reports go to the log); use
    /// [`Host::watch`] instead to receive the reports.
    pub fn watch(mut self, on: bool) -> Self {
        self.watch = on;
        self
    }

    /// How scripts' `http_get`/`http_post` reach the network: name-resolution overrides and
    /// the environment-proxy opt-in (default: the system resolver, no proxies).
    pub fn egress(mut self, egress: Egress) -> Self {
        self.egress = egress;
        self
    }

    /// Answers host HTTP requests with `fake` instead of the network (`kiln test`).
    pub fn http_fake(mut self, fake: HttpFake) -> Self {
        self.http_fake = Some(fake);
        self
    }

    /// Adds a tool written in Rust.
    pub fn tool(mut self, tool: NativeTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Gives scripts a function of the application's, gated by its capability.
    pub fn host_fn(mut self, f: HostFn) -> Self {
        self.host_fns.push(f);
        self
    }

    /// Builds the host and loads everything. Problems in scripts or native tools do not fail
    /// the build: they are in [`Host::load_errors`] and the rest loads.
    pub fn build(self) -> Result<Arc<Host>, HostError> {
        let mut services = Services::new(self.config.workspace.clone());
        services.approver = self.approver;
        services.assume_yes = self.assume_yes;
        services.egress = self.egress.settled();
        services.http_fake = self.http_fake;
        // Canonical, so write_file compares real paths (a folder that does not exist yet has
        // no scripts to protect).
        services.scripts = (self.config.scripts.iter())
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        let db = match &self.database {
            None => None,
            Some(path) => {
                let target = path.to_string_lossy();
                let db =
                    Arc::new(
                        kiln_db::Db::connect(&target).map_err(|e| HostError::Database {
                            path: kiln_db::shown_target(&target),
                            message: e.to_string(),
                        })?,
                    );
                services.store = Store::Persistent(Arc::new(WorkspaceStore::new(
                    db.clone(),
                    &self.config.workspace,
                )));
                Some(db)
            }
        };
        let extras = crate::host::Extras {
            natives: kiln_registry::native::native_source(self.tools),
            host_fns: self.host_fns,
            grants: self.grants,
            db,
        };
        let host = Arc::new(Host::assemble(self.config, services, extras)?);
        let _ = host.this.set(Arc::downgrade(&host));
        if self.mount_declared {
            for line in host.sync_mcp_servers() {
                tracing::info!("{line}");
            }
        }
        if self.watch {
            let handle = reload::watch(host.clone(), |r| tracing::info!("{r}"))
                .map_err(|e| HostError::Watch(e.to_string()))?;
            if let Ok(mut w) = host.watcher.lock() {
                *w = Some(handle);
            }
        }
        Ok(host)
    }
}

/// How one [`Host::call`] is made.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// What the caller holds; `None` uses the builder's [`HostBuilder::grants`].
    pub grants: Option<Grants>,
    /// Read-only application context (`ctx.context`).
    pub context: serde_json::Map<String, Value>,
    /// Who the call acts for (`ctx.actor_id`).
    pub actor_id: Option<String>,
    /// A deadline for the call (the tool's own timeout still applies).
    pub timeout: Option<Duration>,
    /// Cancels the call.
    pub cancel: Option<CancellationToken>,
    /// Receives the call's progress and log messages (bounded: see [`kiln_core::context::call_events::CallObserver`]).
    pub observer: Option<Arc<dyn kiln_core::context::call_events::CallObserver>>,
    /// The `ctx.state` the call shares with the caller (the REPL's session state); `None`: a
    /// fresh one.
    pub state: Option<Arc<std::sync::Mutex<Value>>>,
    /// Who approves the call's needs-approval grants instead of the terminal (a door's person,
    /// such as an MCP client through elicitation); `None`: the host's approver.
    pub approver: Option<Arc<dyn kiln_core::context::Approver>>,
    /// The call's key for outside APIs (`ctx.idempotency_key`): a durable engine's, so every
    /// attempt of the call sends the same; `None`: none.
    pub idempotency_key: Option<String>,
    /// The run id the call is logged under (a door that shows the call as a run of its own);
    /// `None`: a new one.
    pub run_id: Option<String>,
}

impl CallOptions {
    /// The options every call and run share, as the context takes them.
    pub fn scope(&self) -> kiln_core::context::CallerScope<'_> {
        kiln_core::context::CallerScope {
            context: &self.context,
            actor_id: self.actor_id.as_deref(),
            timeout: self.timeout,
            cancel: self.cancel.as_ref(),
            state: self.state.as_ref(),
        }
    }
}

impl Host {
    /// Every loaded tool, script and native, in load order.
    pub fn tools(&self) -> Vec<Arc<Tool>> {
        self.registry().all().cloned().collect()
    }

    /// The tools these grants cover (what an MCP client holding them may list).
    pub fn tools_for(&self, grants: &Grants) -> Vec<Arc<Tool>> {
        self.registry().tools_for(grants)
    }

    /// Definitions of every tool in a provider format, and warnings about anything dropped.
    pub fn schemas(&self, format: Format) -> (Vec<Value>, Vec<String>) {
        kiln_registry::Registry::schemas(&self.tools(), format)
    }

    /// A `.d.rhai` file describing the functions scripts can call (the DSL, the host functions
    /// and the application's), for editors.
    pub fn definitions(&self) -> String {
        let mut app = String::new();
        for (name, cap) in self.host_fn_capabilities() {
            app.push_str(&format!("//   {name}: needs capability \"{cap}\"\n"));
        }
        if !app.is_empty() {
            app = format!("// Functions of the application:\n{app}\n");
        }
        format!(
            "// Generated by `kiln definitions`: the functions kiln's scripts can call.\n// Gated host functions need a capability: see docs/security.md.\n\n{app}{}",
            engine_definitions(self.engine())
        )
    }

    /// What went wrong loading scripts and native tools (each `path:line:col: message`).
    pub fn load_errors(&self) -> Vec<LoadError> {
        self.registry().errors.clone()
    }

    /// Calls tool `name` with JSON `args`: validation, capability guard, sandbox and deadline
    /// as for a model's call. A failing tool is an `Ok` outcome holding the failure; `Err` is
    /// only for a tool that does not exist.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        opts: CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        let tool = self.tool(name)?;
        self.call_tool(&tool, args, opts).await
    }

    /// [`Host::call`] of a tool the caller holds rather than one the registry names (a door's
    /// own tools, such as code mode's `run_code`): the same context, path and run log.
    pub async fn call_tool(
        &self,
        tool: &Arc<Tool>,
        args: Value,
        opts: CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        let mut ctx = self.call_context(&opts);
        if self.db.is_some() {
            // A program's calls are logged under it.
            ctx.run.nested = tool.nested_log();
        }
        let logged = self.db.is_some().then(|| (args.clone(), ctx.clone()));
        let outcome = tool.execute_async(args, ctx).await;
        if let Some((args, ctx)) = logged {
            self.log_call(tool, args, &ctx, &outcome)?;
        }
        Ok(outcome)
    }

    /// [`Host::call`] on the calling thread, for code outside an async runtime (the tool's
    /// deadline and `opts.cancel` still apply).
    pub fn call_blocking(
        &self,
        name: &str,
        args: Value,
        opts: CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        let tool = self.tool(name)?;
        let ctx = self.options_context(&opts);
        let outcome = tool.execute(&args, &ctx);
        if self.db.is_some() {
            self.log_call(&tool, args, &ctx, &outcome)?;
        }
        Ok(outcome)
    }

    /// Refuses a call to `name` before it runs (a door's own check said no, such as an MCP
    /// client declining an approval), logging it like any other call: every door keeps the
    /// run log, refusals included.
    pub fn refuse_call(
        &self,
        name: &str,
        args: Value,
        opts: CallOptions,
        message: String,
    ) -> Result<ToolOutcome, HostError> {
        let tool = self.tool(name)?;
        let ctx = self.options_context(&opts);
        let failure = kiln_core::failure::ToolFailure::visible(
            kiln_core::failure::FailureKind::Capability,
            message,
        );
        let outcome = ToolOutcome::failed(failure, std::time::Instant::now());
        if self.db.is_some() {
            self.log_call(&tool, args, &ctx, &outcome)?;
        }
        Ok(outcome)
    }

    /// Logs a direct call (no agent) as a run of `call:TOOL` with one tool call, so a call
    /// made through any door (`kiln call`, MCP, the library) is in the run log.
    fn log_call(
        &self,
        tool: &Tool,
        args: Value,
        ctx: &kiln_core::context::CallContext,
        outcome: &ToolOutcome,
    ) -> Result<(), HostError> {
        let Some(db) = &self.db else {
            return Ok(());
        };
        let kind = kiln_core::context::runner::RunKind::Call(tool.name.clone());
        let mut report = RunReport::new(
            &kind.to_string(),
            vec![kiln_providers::Message::user(args.to_string())],
        );
        report.run_id = ctx.who.run_id.clone();
        report.provider = kind.provider().unwrap_or_default().into();
        report.actor = ctx.who.actor_id.clone();
        let nested = ctx
            .run
            .nested
            .as_ref()
            .and_then(|n| n.lock().ok().map(|n| n.clone()));
        let record = kiln_agent::ToolCallRecord::new(
            1,
            "call_1",
            &tool.name,
            args.into(),
            outcome,
            tool.version().to_string(),
        )
        .with_nested(nested.unwrap_or_default());
        report.tool_calls = vec![record];
        match &outcome.result {
            Ok(v) => report.answer = v.to_string(),
            Err(f) => report.error = Some(f.message.clone()),
        }
        kiln_agent::record::runlog::log_finished(db, &report)
            .map_err(|e| HostError::RunLog(e.to_string()))
    }

    /// The context `opts` describe, its cancellation linked to `opts.cancel`.
    pub fn call_context(&self, opts: &CallOptions) -> kiln_core::context::CallContext {
        self.options_context(opts)
    }

    /// The context `opts` describe: grants (the builder's by default), context, actor, deadline.
    fn options_context(&self, opts: &CallOptions) -> kiln_core::context::CallContext {
        let mut ctx = self.context(opts.grants.clone().unwrap_or_else(|| self.grants.clone()));
        ctx.apply(opts.scope());
        ctx.approval.approver = opts.approver.clone();
        if opts.idempotency_key.is_some() {
            ctx.who.idempotency_key = opts.idempotency_key.clone();
        }
        if let Some(run_id) = &opts.run_id {
            ctx.who.run_id = run_id.clone();
        }
        ctx.run.events = opts
            .observer
            .clone()
            .map(|o| Arc::new(kiln_core::context::call_events::CallEvents::new(o)));
        ctx
    }

    /// Runs agent `agent` on `prompt` until it answers or fails. With a database and no
    /// recorder of its own, the run is logged step by step.
    pub fn run<'a>(
        &'a self,
        agent: &'a str,
        prompt: &'a str,
        opts: RunOptions,
    ) -> impl Future<Output = Result<RunReport, RunError>> + 'a {
        self.run_journaled(&kiln_agent::Local, agent, prompt, opts)
    }

    /// [`Host::run`] with each model request and tool call a named step of `journal`, which
    /// may remember results (a durable engine); a step it recalls is not run again.
    ///
    /// Not an `async fn`, like [`kiln_agent::run_journaled`]: the run's future holds its
    /// options once.
    pub fn run_journaled<'a>(
        &'a self,
        journal: &'a dyn StepJournal,
        agent: &'a str,
        prompt: &'a str,
        mut opts: RunOptions,
    ) -> impl Future<Output = Result<RunReport, RunError>> + 'a {
        if let (None, Some(db)) = (&opts.recorder, &self.db) {
            opts.recorder = Some(Arc::new(kiln_agent::record::runlog::RunLogger::new(
                db.clone(),
                opts.session.clone(),
            )));
        }
        kiln_agent::run_journaled(self, journal, agent, prompt, opts)
    }

    /// Watches the scripts folders: changed files are reloaded and each reload is reported on
    /// the returned handle, until it is dropped.
    pub fn watch(self: &Arc<Self>) -> Result<WatchHandle, HostError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = reload::watch(self.clone(), move |r| {
            let _ = tx.send(r);
        })
        .map_err(|e| HostError::Watch(e.to_string()))?;
        Ok(WatchHandle {
            _watcher: watcher,
            rx,
        })
    }
}

/// Reloads while it lives ([`Host::watch`]); a stream of what each reload did.
pub struct WatchHandle {
    _watcher: reload::Watcher,
    rx: mpsc::UnboundedReceiver<ReloadReport>,
}

impl Stream for WatchHandle {
    type Item = ReloadReport;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ReloadReport>> {
        self.rx.poll_recv(cx)
    }
}

/// The definitions of an engine's own functions (no standard packages), each function the
/// DSL's table describes with its signature, capability and doc as its comment.
pub fn engine_definitions(engine: &rhai::Engine) -> String {
    kiln_script::reference::definitions(engine)
}
