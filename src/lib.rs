//! kiln: a host for LLM tools and agents written as Rhai scripts, embeddable in a Rust
//! application.
//!
//! A [`Host`] loads tools and agents from scripts folders (hot-reloadable), plus the tools and
//! functions the application adds in Rust. Every call, from a model or from the application,
//! takes one path: the arguments are validated against the tool's JSON Schema, the capability
//! guard checks the caller's [`Grants`], and the handler runs in the sandbox under a deadline.
//! Agents run against the model APIs of Anthropic, OpenAI (Chat Completions and Responses, and
//! Azure OpenAI's of both), Google Gemini, AWS Bedrock and Ollama (the providers `anthropic`,
//! `openai`, `openai-responses`, `azure`, `azure-responses`, `gemini`, `bedrock`, `ollama`), or
//! offline against a Rhai planner (the `script` provider).
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
//! [`FailureKind`]. ARCHITECTURE.md maps the crates.

//! # Crates and features
//!
//! This crate gathers kiln's layers (`kiln-core`, `kiln-providers`, `kiln-script`, `kiln-db`,
//! `kiln-agent`, `kiln-host`) under one API. The doors are features, on by default for the
//! `kiln` binary: `mcp` (MCP servers scripts declare, `--mcp` mounts, and [`mcp::McpServer`]),
//! `serve` (`kiln serve`, [`serve`]) and `restate` (durable runs, [`durable`]). An application
//! embedding kiln without them (`default-features = false`) compiles no rmcp, axum or Restate
//! SDK.

#![warn(missing_docs)]

pub use kiln_agent::compaction;
pub use kiln_agent::steer;
pub use kiln_agent::{RunError, RunErrorKind, RunReport};
/// The memory budget scripts run under: install [`budget::Counting`] as the global allocator
/// for budgets to be enforced (the `kiln` binary does).
pub use kiln_budget as budget;
pub use kiln_core::approval::{ApprovalFuture, AsyncApprover, BlockingApprover};
pub use kiln_core::capability::Grants;
pub use kiln_core::context::CallContext;
pub use kiln_core::context::call_events::{CallObserver, LogLevel, ToolNote};
pub use kiln_core::error::{ErrorKind, HostError, LoadError};
pub use kiln_core::failure::{FailureKind, ToolFailure, ToolOutcome};
/// Asks a person at the terminal whether a call needing approval may go on (blocking).
pub use kiln_core::services::ApproverFn;
/// The `.d.rhai` definitions of an engine's functions ([`Host::definitions`] gives the host's).
pub use kiln_host::api::engine_definitions;
pub use kiln_host::{
    CallOptions, Event, Host, HostBuilder, HostConfig, RunOptions, RunStream, WatchHandle,
};
/// A run's limits (`tool_calls=N`, `cost_usd=X`...): [`RunOptions::budget`].
pub use kiln_registry::contract::Budget;
pub use kiln_registry::native::{HostFn, NativeTool};
/// Re-exported for [`RunOptions::cancel`] and [`CallOptions::cancel`].
pub use tokio_util::sync::CancellationToken;

/// Content blocks a tool may return (text, image, audio, resource) and the
/// `{"$content": [...]}` result they travel in.
pub mod content {
    pub use kiln_core::model::content::*;
}

/// The neutral model types (messages, tool calls and results, usage, stop reasons), provider
/// settings, and the [`LocalModel`](model::LocalModel) seam for a model that runs in this process.
pub mod model {
    pub use kiln_agent::connect::{ProviderDefault, ProviderDefaults, ProviderOverrides};
    /// Tool calls written in free text (`{"tool": ..., "parameters": ...}`), found and run.
    pub use kiln_agent::text_calls::extract;
    pub use kiln_agent::text_calls::extract::JsonParseError;
    pub use kiln_core::model::attachment::media_type_of;
    pub use kiln_core::model::{
        AnsweredBy, CallArgs, LocalModel, LocalReply, Message, ModelRequest, ModelResponse,
        ProviderError, StopReason, TextSink, ToolCall, ToolChoice, ToolDef, ToolResult, Usage,
    };
    pub use kiln_core::model::{Attachment, AttachmentError, AttachmentKind, AttachmentSource};
    pub use kiln_core::schema::Format;
    pub use kiln_registry::agent_spec::ProviderKind;
    pub use kiln_registry::agent_spec::TextCallFormat;
    pub use kiln_registry::agent_spec::compact::CompactWith;
    pub use kiln_registry::fallback::FallbackModel;
}

/// Tools as the host holds them: the tool, its meta and hints, capabilities, the registry
/// snapshot, rate limits, sandbox limits, call events, and where a definition came from.
pub mod tool {
    pub use kiln_core::capability::{Capability, Grant, GrantMode, HostCap, declare_secret_var};
    pub use kiln_core::context::call_events::{CallObserver, LogLevel, SampleRequest};
    pub use kiln_core::error::SourceLoc;
    pub use kiln_core::ratelimit::RateLimit;
    pub use kiln_core::tool::{Handler, Hints, OutputSchema, ResolvedHints, Tool, ToolMeta};
    pub use kiln_host::reload::ReloadReport;
    pub use kiln_registry::Registry;
    pub use kiln_registry::agent_spec::{AgentSpec, CodeMode};
    pub use kiln_registry::dyn_tool::DynTool;
    pub use kiln_registry::native::HandlerFuture;
    pub use kiln_script::sandbox::Limits;
}

/// Code-mode programs in worker processes: install a pool once at startup (the `kiln` binary
/// does), and have the binary answer [`WORKER_ARG`](programs::WORKER_ARG) by calling
/// [`serve_worker`](programs::serve_worker) before anything else. Without a pool, programs
/// run in the embedder's own process.
pub mod programs {
    pub use kiln_script::program::confine::WorkerLimits;
    pub use kiln_script::program::pool::{PoolSettings, ProgramPool, install, installed};
    pub use kiln_script::program::wire::Protections;
    pub use kiln_script::program::worker::{WORKER_ARG, serve as serve_worker};
}

/// Runs as steps: the journal a durable engine replaces, the recorder a run log implements,
/// the loop's events and tool-call records; with `restate`, the Restate worker.
pub mod durable {
    pub use kiln_agent::{
        Journaled, Local, Observer, Recalled, RecordError, Recorder, StepFuture, StepJournal,
        StepValue, StepWork, ToolCallRecord,
    };
    #[cfg(feature = "restate")]
    pub use kiln_durable::*;
}

/// Pipelines: tools, agents and pipelines wired as a dependency graph.
pub mod pipeline {
    pub use kiln_core::context::runner::{
        AgentAnswer, AgentCall, AgentRunner, FinishedCall, FinishedRun, RunKind,
    };
    pub use kiln_pipeline::{
        Node, NodeMapper, NodeReport, NodeStatus, Output, Pipeline, PipelineReport, PipelineSpec,
        Target,
    };
}

/// How scripts reach the network: the egress settings, name resolution (the system's, and
/// `--resolve`'s overrides over it), the one TLS stack.
pub mod egress {
    pub use kiln_core::services::Egress;
    pub use kiln_egress::NetScope;
    pub use kiln_egress::resolver::{
        Lookup, NameResolver, Overrides as ResolveOverrides, SystemResolver,
    };
    pub use kiln_egress::tls::{
        client_builder as http_client_builder, ensure_provider as ensure_tls_provider, http1_only,
        set_http1_only,
    };
}

/// The project file, `kiln.toml`: a project's settings found from a folder upward, read
/// strictly, and the defaults the flags and the file share.
pub mod project {
    pub use kiln_project::*;
}

/// MCP both ways: mounted servers' specs, state and OAuth sign-in, and kiln as a server (with
/// the OAuth issuer whose access tokens it takes).
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use kiln_host::mcp::{
        MOUNTED_AS_VAR, McpError, MountSpec, Mounts, SEPARATOR, ServerState, ServerStatus, Target,
    };
    pub use kiln_mcp::issuer::Issuer;
    pub use kiln_mcp::{HttpOptions, McpEndpoint, McpServer, router};

    /// OAuth for mounted servers: sign in, and where the tokens are kept.
    pub mod oauth {
        pub use kiln_host::mcp::oauth::{Login, login, token_path};
    }
}

/// `kiln serve`: agents as an HTTP service.
#[cfg(feature = "serve")]
pub mod serve {
    pub use kiln_serve::*;

    /// Binding a server's listener (a backlog of 4,096), and serving an app on it with
    /// deadlines, a connection cap and a graceful drain (`kiln serve` and `kiln mcp --http`).
    pub mod http {
        pub use kiln_http::{HttpLimits, LISTEN_BACKLOG, bind, serve};
    }
}

/// Hot reload with a callback per reload ([`Host::watch`] gives them as a stream).
pub mod reload {
    pub use kiln_host::reload::{ReloadReport, watch};
}

/// The run log as `kiln logs` reads it, and the database it lives in: open it
/// ([`Db::open`](log::Db::open) at [`default_path`](log::default_path)), list runs with a
/// [`LogFilter`](log::LogFilter), read a run's rows ([`RunRow`](log::RunRow): its messages,
/// tool calls and model calls), sessions, and pruning old runs.
pub mod log {
    pub use kiln_agent::record::runlog::log_finished;
    pub use kiln_db::runs::{LogFilter, RunRow};
    pub use kiln_db::sessions::Resumed;
    pub use kiln_db::{Db, DbError, default_path, now};
}

/// Evaluations as `kiln eval` runs them (feature `eval`): an evaluation declared in a script
/// ([`eval_spec`](eval::eval_spec)) run over models x cases x repeats ([`run`](eval::run)),
/// scored ([`score`](eval::score)), reported ([`report`](eval::report), [`render`](eval::render):
/// table, JUnit, HTML), kept and compared with a baseline ([`store`](eval::store),
/// [`compare`](eval::compare)), and recorded runs re-scored ([`rescore`](eval::rescore)).
#[cfg(feature = "eval")]
pub mod eval {
    pub use kiln_eval::{compare, eval_spec, render, report, rescore, run, score, store};
}

/// What traces carry: whether tool arguments and results go into them.
pub mod traces {
    pub use kiln_core::telemetry::set_capture_content;
}

/// Durations written with their unit (`30s`, `500ms`, `2m`), read one way by scripts, flags and
/// the project file; a bare number means [`BareUnit`](duration::BareUnit).
pub mod duration {
    pub use kiln_core::duration::{BareUnit, DurationError, parse_duration};
}

/// Moments as text: seconds since the epoch as RFC 3339 UTC (the run log's times).
pub mod time {
    pub use kiln_script::math::iso_from_secs;
}

/// The DSL's renamed names: where a script still writes a deprecated spelling (at its
/// `line:col`), and the rewrite of those names, and nothing else, to the new ones
/// (`kiln check --fix`).
pub mod renames {
    pub use kiln_host::{script_files, test_files};
    pub use kiln_script::renames::{
        Deprecation, RENAMES, Rename, deprecations, fix, fix_file, is_deprecation, warnings,
    };
}

/// Internals the benches measure on their own (not part of the API: no stability promised).
#[doc(hidden)]
pub mod bench {
    /// The reload debounce (the reload bench's baseline watcher uses the same).
    pub use kiln_host::reload::DEBOUNCE as RELOAD_DEBOUNCE;
    pub use kiln_providers::sse::SseDecoder;
}
