//! kiln: a host for LLM tools and agents written as Rhai scripts, embeddable in a Rust
//! application.
//!
//! A [`Host`] loads tools and agents from scripts folders (hot-reloadable), plus the tools and
//! functions the application adds in Rust. Every call, from a model or from the application,
//! takes one path: the arguments are validated against the tool's JSON Schema, the capability
//! guard checks the caller's [`Grants`], and the handler runs in the sandbox under a deadline.
//! Agents run against Anthropic, OpenAI(-compatible) or Ollama models, or offline against a
//! Rhai planner (the `script` provider).
//!
//! # Quick start
//!
//! ```
//! use kiln::{CallContext, CallOptions, Grants, Host, HostFn, NativeTool, RunOptions};
//! use serde_json::{Value, json};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let scripts = tempfile::tempdir()?;
//! std::fs::write(scripts.path().join("hello.rhai"), r#"
//!     tool("greet")
//!         .param("name", "string")
//!         .requires("crm")
//!         .handler(|args| `Hello, ${crm_lookup(args.name).title} ${args.name}!`);
//!
//!     agent("greeter")
//!         .provider("script")          // an offline "model": the planner below
//!         .tools(["greet", "shout"])
//!         .capabilities(["crm"])
//!         .planner(|messages, tools| {
//!             let last = messages[messages.len() - 1];
//!             if last.role == "user" {
//!                 return #{ tool_calls: [#{ name: "greet", args: #{ name: last.content } }] };
//!             }
//!             if last.name == "greet" {
//!                 return #{ tool_calls: [#{ name: "shout", args: #{ text: last.content } }] };
//!             }
//!             #{ text: last.content }
//!         });
//! "#)?;
//!
//! let host = Host::builder()
//!     .scripts(scripts.path())
//!     // A tool written in Rust, checked and guarded like a script tool.
//!     .tool(
//!         NativeTool::new("shout", |args: Value, _ctx: &CallContext| async move {
//!             Ok(json!(args["text"].as_str().unwrap_or_default().to_uppercase()))
//!         })
//!         .description("Upper-cases text")
//!         .param("text", "string", json!({})),
//!     )
//!     // A function for scripts, usable only by tools that declare "crm" and callers granted it.
//!     .host_fn(HostFn::new("crm_lookup", "crm", &["name"], |_args, _ctx| {
//!         Ok(json!({"title": "Dr."}))
//!     }))
//!     .build()?;
//! assert!(host.load_errors().is_empty());
//!
//! let rt = tokio::runtime::Runtime::new()?;
//! let granted = CallOptions { grants: Some(Grants::parse(&["crm"])?), ..Default::default() };
//! let outcome = rt.block_on(host.call("greet", json!({"name": "Ada"}), granted))?;
//! assert_eq!(outcome.result?, json!("Hello, Dr. Ada!"));
//!
//! let report = rt.block_on(host.run("greeter", "Ada", RunOptions::default()))?;
//! assert_eq!(report.answer, "HELLO, DR. ADA!");
//! # Ok(()) }
//! ```
//!
//! [`Host::run_stream`] delivers a run as [`Event`]s; [`Host::watch`] reloads changed scripts
//! until its handle is dropped. Errors are typed: [`HostError::kind`], [`RunErrorKind`],
//! [`FailureKind`]. ARCHITECTURE.md maps the code.

#![warn(missing_docs)]

mod agent;
mod api;
/// Internals the benches measure on their own (not part of the API: no stability promised).
#[doc(hidden)]
pub mod bench {
    pub use crate::provider::sse::SseDecoder;
    /// The reload debounce (the reload bench's baseline watcher uses the same).
    pub use crate::reload::DEBOUNCE as RELOAD_DEBOUNCE;
}
mod call_events;
mod capability;
#[doc(hidden)]
pub mod cli;
pub mod content;
mod context;
mod convert;
mod db;
mod durable;
mod egress;
mod error;
mod failure;
mod http_serve;
mod mcp;
mod mock;
mod native;
mod pipeline;
#[cfg(test)]
mod props;
mod provider;
mod public_error;
mod ratelimit;
mod registry;
mod reload;
mod repl;
mod running;
mod schema;
mod script;
mod serve;
mod services;
mod stdlib;
mod testing;
mod tool;
mod tool_meta;
mod validate;

pub use agent::connect::ProviderOverrides;
pub use agent::extract::JsonParseError;
pub use agent::{
    AgentSpec, Journaled, Local, Observer, Recalled, RecordError, Recorder, RunError, RunErrorKind,
    RunEvent, RunOptions, RunReport, StepFuture, StepJournal, StepValue, StepWork, ToolCallRecord,
};
pub use api::{CallOptions, Event, HostBuilder, RunStream, WatchHandle};
pub use call_events::{CallObserver, LogLevel, SampleRequest};
pub use capability::{Capability, Grant, GrantMode, Grants};
pub use content::Content;
pub use context::CallContext;
pub use egress::resolver::{Lookup, NameResolver};
pub use egress::tls::{
    client_builder as http_client_builder, ensure_provider as ensure_tls_provider,
};
pub use error::{ErrorKind, HostError, LoadError, SourceLoc};
pub use mcp::{ServerState as McpServerState, ServerStatus as McpServerStatus};
pub use native::{HandlerFuture, HostFn, NativeTool};
pub use pipeline::{
    Node as PipelineNode, NodeMapper, NodeReport, NodeStatus, Output as PipelineOutput, Pipeline,
    PipelineReport, PipelineSpec, Target as NodeTarget,
};
pub use provider::{CallArgs, Message, ProviderError, StopReason, ToolCall, ToolResult, Usage};
pub use ratelimit::RateLimit;
pub use registry::Registry;
pub use reload::ReloadReport;
pub use schema::Format;
pub use script::sandbox::Limits;
pub use services::Egress;
/// Re-exported for [`RunOptions::cancel`] and [`CallOptions::cancel`].
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    FailureKind, Hints, ResolvedHints, Returns, Tool, ToolFailure, ToolMeta, ToolOutcome,
};

use arc_swap::ArcSwap;
use registry::LoadedFile;
use rhai::Engine;
use script::loader;
use services::Services;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How a host is set up.
#[derive(Debug, Clone)]
pub(crate) struct HostConfig {
    /// Scripts folders (`--scripts`, repeatable).
    pub scripts: Vec<PathBuf>,
    /// The workspace host functions are rooted at.
    pub workspace: PathBuf,
    /// Load the embedded stdlib.
    pub stdlib: bool,
    /// Sandbox limits.
    pub limits: script::sandbox::Limits,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            scripts: vec![PathBuf::from("scripts")],
            workspace: PathBuf::from("."),
            stdlib: true,
            limits: script::sandbox::Limits::default(),
        }
    }
}

/// The host: a shared sandboxed engine, the loaded files and the current registry snapshot.
pub struct Host {
    engine: Arc<Engine>,
    config: HostConfig,
    files: Mutex<BTreeMap<String, Arc<LoadedFile>>>,
    /// Errors of files whose last good version stays live.
    broken: Mutex<BTreeMap<String, Vec<LoadError>>>,
    registry: ArcSwap<Registry>,
    services: Arc<Services>,
    /// The application's native tools, loaded after the stdlib.
    natives: Arc<LoadedFile>,
    /// The capability of each function the application gave scripts (for the static scan).
    app_caps: BTreeMap<String, String>,
    /// What [`Host::call`] grants by default.
    grants: capability::Grants,
    /// The database runs are logged to, if any.
    db: Option<Arc<db::Db>>,
    /// The watcher [`HostBuilder::watch`] started.
    watcher: Mutex<Option<reload::Watcher>>,
    /// Modules compiled for `import`; emptied whenever a script changes.
    modules: script::imports::ModuleCache,
    /// The host itself when it lives in an `Arc` (built by [`HostBuilder`]), for handlers that
    /// run agents (pipelines).
    this: std::sync::OnceLock<std::sync::Weak<Host>>,
    /// The MCP servers scripts declare (started and stopped with their declarations) and
    /// those mounted with `--mcp`.
    mcp: mcp::HostServers,
}

/// What the builder adds to a host beyond its configuration.
#[derive(Default)]
struct Extras {
    natives: LoadedFile,
    host_fns: Vec<HostFn>,
    grants: capability::Grants,
    db: Option<Arc<db::Db>>,
}

impl Host {
    /// Builds a host and loads the stdlib, the native tools and every `*.rhai` file of the
    /// scripts folders.
    fn assemble(config: HostConfig, services: Services, extras: Extras) -> Result<Host, HostError> {
        let modules = script::imports::ModuleCache::default();
        let mut engine = script::engine_with_modules(
            &config.limits,
            config.scripts.clone(),
            modules.clone(),
            None,
        );
        for f in &extras.host_fns {
            script::host_fns::register_app(&mut engine, f);
        }
        let host = Host {
            engine: Arc::new(engine),
            files: Mutex::new(BTreeMap::new()),
            broken: Mutex::new(BTreeMap::new()),
            registry: ArcSwap::from_pointee(Registry::default()),
            services: Arc::new(services),
            natives: Arc::new(extras.natives),
            app_caps: extras
                .host_fns
                .iter()
                .map(|f| (f.name.clone(), f.capability.clone()))
                .collect(),
            grants: extras.grants,
            db: extras.db,
            watcher: Mutex::new(None),
            modules,
            this: std::sync::OnceLock::new(),
            mcp: mcp::HostServers::default(),
            config,
        };
        host.load_all()?;
        Ok(host)
    }

    /// The database, when the host was built with one.
    pub(crate) fn database(&self) -> Option<&Arc<db::Db>> {
        self.db.as_ref()
    }

    /// The shared engine (for the REPL's Rhai evaluation).
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The configuration the host was built with.
    pub(crate) fn config(&self) -> &HostConfig {
        &self.config
    }

    /// The current snapshot; a caller keeps it for as long as it needs one consistent view.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.load_full()
    }

    /// (Re)loads everything from scratch.
    pub(crate) fn load_all(&self) -> Result<(), HostError> {
        self.modules.clear();
        let mut files = BTreeMap::new();
        if self.config.stdlib {
            for (name, src) in stdlib::FILES {
                let path = format!("stdlib/{name}");
                files.insert(path.clone(), Arc::new(self.load_source(&path, src)));
            }
        }
        files.insert(self.natives.path.clone(), self.natives.clone());
        for dir in &self.config.scripts {
            for path in script_files(dir)? {
                let shown = path.to_string_lossy().to_string();
                let loaded = match std::fs::read_to_string(&path) {
                    Ok(src) => self.load_source(&shown, &src),
                    Err(e) => LoadedFile {
                        path: shown.clone(),
                        errors: vec![LoadError::at(
                            error::SourceLoc {
                                path: shown.clone(),
                                line: 0,
                                column: 0,
                            },
                            format!("cannot read: {e}"),
                        )],
                        ..LoadedFile::default()
                    },
                };
                files.insert(shown, Arc::new(loaded));
            }
        }
        self.install(files);
        Ok(())
    }

    fn load_source(&self, path: &str, source: &str) -> LoadedFile {
        loader::load_source_with(&self.engine, path, source, &self.app_caps)
    }

    /// The functions the application gave scripts, with the capability each needs.
    pub(crate) fn host_fn_capabilities(&self) -> &BTreeMap<String, String> {
        &self.app_caps
    }

    /// Builds and swaps in a registry for this set of files.
    fn install(&self, files: BTreeMap<String, Arc<LoadedFile>>) {
        if let Ok(mut b) = self.broken.lock() {
            b.clear();
        }
        let reg = self.build(&files);
        self.registry.store(Arc::new(reg));
        if let Ok(mut f) = self.files.lock() {
            *f = files;
        }
    }

    /// A registry for these files, with the errors of broken files that kept an old version.
    fn build(&self, files: &BTreeMap<String, Arc<LoadedFile>>) -> Registry {
        let ordered = ordered_files(files);
        let mut reg = Registry::build(ordered.iter().map(|f| f.as_ref()));
        if let Ok(b) = self.broken.lock() {
            reg.errors.extend(b.values().flatten().cloned());
        }
        reg
    }

    /// Reloads one script file (or forgets it when it no longer exists) and every file that
    /// imports it, directly or through other modules, and swaps the registry. Returns one
    /// report per file, the changed file first.
    ///
    /// A file that fails to load keeps its last good version live; so does a file whose new
    /// version defines a tool another file already defines.
    pub(crate) fn reload_path(&self, path: &Path) -> Vec<reload::ReloadReport> {
        self.reload_with_importers(path, false)
    }

    /// [`Host::reload_path`], but an empty read of a file that had tools is reported as
    /// `deferred` and changes nothing (it may be a writer caught between truncate and write).
    pub(crate) fn reload_path_settling(&self, path: &Path) -> Vec<reload::ReloadReport> {
        self.reload_with_importers(path, true)
    }

    fn reload_with_importers(&self, path: &Path, defer_empty: bool) -> Vec<reload::ReloadReport> {
        let first = self.reload_file(path, defer_empty);
        if first.deferred {
            return vec![first];
        }
        // Any script may be a module a handler imports at call time, literal path or not.
        self.modules.clear();
        let importers = match self.files.lock() {
            Ok(files) => reload::importers(&files, path),
            Err(_) => Vec::new(),
        };
        let mut reports = vec![first];
        for (importer, via) in importers {
            let report = self.reload_file(Path::new(&importer), false);
            reports.push(reload::ReloadReport { via, ..report });
        }
        reports[0].mcp = self.sync_mcp_servers();
        reports
    }

    /// Starts and stops MCP servers to match what the scripts declare now; a line for each
    /// started or stopped. Only a host in an `Arc` runs servers (their tools reach it by a Weak).
    pub(crate) fn sync_mcp_servers(&self) -> Vec<String> {
        let Some(this) = self.this.get().and_then(std::sync::Weak::upgrade) else {
            return Vec::new();
        };
        let wanted = self.registry().mcp_servers().cloned().collect();
        self.mcp.sync(&this, wanted)
    }

    /// The MCP servers this host runs (declared in scripts, then `--mcp`), with their state.
    pub fn mcp_servers(&self) -> Vec<mcp::ServerStatus> {
        self.mcp.statuses()
    }

    /// Where lines about script-declared MCP servers go (restarts, list changes).
    pub(crate) fn on_mcp_report(&self, report: impl Fn(String) + Send + Sync + 'static) {
        self.mcp.set_report(Arc::new(report));
    }

    fn reload_file(&self, path: &Path, defer_empty: bool) -> reload::ReloadReport {
        let started = std::time::Instant::now();
        let shown = path.to_string_lossy().to_string();
        let Ok(mut files) = self.files.lock() else {
            return reload::ReloadReport::failed(shown, Vec::new(), started);
        };
        let old = files.get(&shown).cloned();
        let old_names: Vec<String> = old
            .iter()
            .flat_map(|f| f.tools.iter().map(|t| t.name.clone()))
            .collect();
        let source = match std::fs::read_to_string(path) {
            Ok(src) => src,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                files.remove(&shown);
                if let Ok(mut b) = self.broken.lock() {
                    b.remove(&shown);
                }
                self.registry.store(Arc::new(self.build(&files)));
                return reload::ReloadReport::removed(shown, old_names.len(), started);
            }
            Err(e) => {
                let err = LoadError::at(
                    error::SourceLoc {
                        path: shown.clone(),
                        line: 0,
                        column: 0,
                    },
                    format!("cannot read: {e}"),
                );
                return reload::ReloadReport::failed(shown, vec![err], started);
            }
        };
        // A writer that truncates then writes can be caught in between: an empty read of a file
        // that had tools is put off (the watcher looks again once the folder is quiet).
        if defer_empty && source.trim().is_empty() && !old_names.is_empty() {
            return reload::ReloadReport {
                deferred: true,
                ..reload::ReloadReport::loaded(shown, 0, 0, 0, started)
            };
        }
        let loaded = Arc::new(self.load_source(&shown, &source));
        let mut candidate = files.clone();
        candidate.insert(shown.clone(), loaded.clone());
        let mut errors = loaded.errors.clone();
        if errors.is_empty() {
            let reg = Registry::build(ordered_files(&candidate).iter().map(|f| f.as_ref()));
            errors.extend(
                reg.errors
                    .into_iter()
                    // A pipeline calling what no longer exists is this file's error too.
                    .filter(|e| {
                        e.loc.path == shown
                            && (e.message.starts_with("duplicate tool")
                                || e.message.starts_with("pipeline \""))
                    }),
            );
        }
        if !errors.is_empty() && old.is_some() {
            if let Ok(mut b) = self.broken.lock() {
                b.insert(shown.clone(), errors.clone());
            }
            self.registry.store(Arc::new(self.build(&files)));
            return reload::ReloadReport::failed(shown, errors, started);
        }
        if let Ok(mut b) = self.broken.lock() {
            b.remove(&shown);
        }
        *files = candidate;
        self.registry.store(Arc::new(self.build(&files)));
        let new_names: Vec<&String> = loaded.tools.iter().map(|t| &t.name).collect();
        let added = new_names.iter().filter(|n| !old_names.contains(n)).count();
        let removed = old_names.iter().filter(|n| !new_names.contains(n)).count();
        let report =
            reload::ReloadReport::loaded(shown, added, new_names.len() - added, removed, started);
        if errors.is_empty() {
            report
        } else {
            reload::ReloadReport { errors, ..report }
        }
    }

    /// Adds (or replaces, by path) a source of tools that is not a script file, such as a
    /// mounted MCP server, and swaps in a registry that includes it.
    pub(crate) fn set_source(&self, file: LoadedFile) {
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        files.insert(file.path.clone(), Arc::new(file));
        self.registry.store(Arc::new(self.build(&files)));
    }

    /// Forgets a source added with [`Host::set_source`] (a stopped MCP server's tools).
    pub(crate) fn remove_source(&self, path: &str) {
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        if files.remove(path).is_some() {
            self.registry.store(Arc::new(self.build(&files)));
        }
    }

    /// A call context holding these grants, with the current registry pinned.
    pub(crate) fn context(&self, grants: capability::Grants) -> context::CallContext {
        let mut ctx = context::CallContext::new(grants, self.services.clone());
        ctx.registry = Some(self.registry());
        ctx.host = self.this.get().cloned();
        ctx
    }

    /// Looks up a tool or says which ones exist.
    pub fn tool(&self, name: &str) -> Result<Arc<tool::Tool>, HostError> {
        let reg = self.registry();
        reg.find(name).ok_or_else(|| HostError::UnknownTool {
            name: name.into(),
            known: reg.tool_names().join(", "),
        })
    }

    /// Looks up an agent or says which ones exist.
    pub fn agent(&self, name: &str) -> Result<Arc<agent::AgentSpec>, HostError> {
        let reg = self.registry();
        reg.agent(name).ok_or_else(|| {
            let known: Vec<String> = reg.agents().map(|a| a.name.clone()).collect();
            HostError::UnknownAgent {
                name: name.into(),
                known: if known.is_empty() {
                    "(none)".into()
                } else {
                    known.join(", ")
                },
            }
        })
    }
}

/// stdlib files first, then the application's native tools, then user files in path order.
fn ordered_files(files: &BTreeMap<String, Arc<LoadedFile>>) -> Vec<Arc<LoadedFile>> {
    let mut ordered: Vec<Arc<LoadedFile>> = files.values().cloned().collect();
    ordered.sort_by_key(|f| match f.path.as_str() {
        p if p.starts_with("stdlib/") => 0,
        native::NATIVE_SOURCE => 1,
        _ => 2,
    });
    ordered
}

/// The `*.rhai` files of a folder (recursively), sorted; a missing default folder is empty.
pub(crate) fn script_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| HostError::ScriptsFolder {
            path: d.display().to_string(),
            source: e,
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rhai") && !script::is_test_file(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
