//! What an application adds in Rust: native tools, which join the registry beside script tools,
//! and host functions, which scripts call under the same capability gate as the built-in ones.

use crate::registry::LoadedFile;
use kiln_core::context::CallContext;
use kiln_core::error::{LoadError, SourceLoc};
use kiln_core::schema::{self, Param};
use kiln_core::tool::parts::{Part, ToolParts};
pub use kiln_core::tool::running::HandlerFuture;
use kiln_core::tool::running::drive;
use kiln_core::tool::{self, DEFAULT_TIMEOUT, Handler, Tool, ToolFailure};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

type NativeFn = dyn Fn(Value, &CallContext) -> HandlerFuture + Send + Sync;

/// A tool written in Rust, registered with `HostBuilder::tool`.
///
/// It takes the same options as the DSL's `tool(...)` and goes through the same schema
/// compiler, validation, capability guard, deadline, retries, result shape and run log.
pub struct NativeTool {
    name: String,
    description: String,
    params: Vec<Param>,
    input_schema: Option<Value>,
    requires: Vec<String>,
    timeout: Duration,
    retries: u32,
    rate_limit: Option<kiln_core::ratelimit::RateLimit>,
    exclusive: bool,
    errors: Vec<String>,
    handler: Arc<NativeFn>,
    loc: SourceLoc,
    output_schema: Option<Value>,
    meta: tool::ToolMeta,
}

impl NativeTool {
    /// A tool named `name` whose handler is `async` Rust: `(args, &ctx) -> Result<Value, _>`.
    ///
    /// The handler sees arguments already validated against the tool's schema. Errors are
    /// [`ToolFailure`]s: [`ToolFailure::tool_error`] for a message the model may read.
    #[track_caller]
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Value, &CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
    {
        let at = std::panic::Location::caller();
        NativeTool {
            name: name.into(),
            description: String::new(),
            params: Vec::new(),
            input_schema: None,
            requires: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            retries: 0,
            rate_limit: None,
            exclusive: false,
            errors: Vec::new(),
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            loc: SourceLoc::new(at.file(), at.line() as usize, at.column() as usize),
            output_schema: None,
            meta: tool::ToolMeta::default(),
        }
    }

    /// A human-readable title (MCP's `title`), as the DSL's `.title("...")`.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.meta.title = Some(text.into());
        self
    }

    /// The JSON Schema results must match, as the DSL's `.output(...)`; a result that does not
    /// is an `invalid_output` failure.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Behaviour hints (MCP annotations) set explicitly; the rest come from the capabilities.
    pub fn hints(mut self, hints: tool::Hints) -> Self {
        self.meta.hints = hints;
        self
    }

    /// Lets a call run as an MCP task where the client declared the tasks extension.
    pub fn task(mut self, mode: tool::TaskMode) -> Self {
        self.meta.task = Some(mode);
        self
    }

    /// More `_meta` MCP clients see on the tool (MCP Apps' `ui`: its page and visibility).
    pub fn meta_entry(mut self, key: &str, value: Value) -> Self {
        self.meta.extra.insert(key.into(), value);
        self
    }

    /// The description the model reads.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// A parameter, as the DSL's `.param(name, type, #{...})`: `options` is a JSON object with
    /// the same keys (`desc`, `optional`, `default`, `enum`, `min`, `max`, `pattern`, ...).
    pub fn param(mut self, name: &str, type_name: &str, options: Value) -> Self {
        let map = options.as_object().cloned().unwrap_or_default();
        match schema::build_param(name, type_name, &map) {
            Ok(_) if self.params.iter().any(|p| p.name == name) => {
                self.errors
                    .push(format!("param \"{name}\" is declared twice"));
            }
            Ok((schema, required)) => self.params.push(Param {
                name: name.to_string(),
                schema,
                required,
            }),
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// A whole JSON Schema for the arguments instead of `param`s.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// A capability (`NAME` or `NAME:SCOPE`) the caller must hold.
    pub fn requires(mut self, capability: &str) -> Self {
        self.requires.push(capability.to_string());
        self
    }

    /// The deadline of one attempt (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times a failed handler is run again.
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// At most `limit.calls` calls per `limit.per`, shared by every run of the host; with
    /// [`RateLimit::wait`](kiln_core::ratelimit::RateLimit::wait) a call waits for a slot within its deadline.
    pub fn rate_limit(mut self, limit: kiln_core::ratelimit::RateLimit) -> Self {
        if let Some(problem) = limit.problem() {
            self.errors.push(problem);
        }
        self.rate_limit = Some(limit);
        self
    }

    /// Runs alone: no other tool of the run runs while it does.
    pub fn exclusive(mut self, yes: bool) -> Self {
        self.exclusive = yes;
        self
    }

    /// Where the tool is said to come from in listings and errors (default: the Rust caller).
    pub fn located(mut self, loc: SourceLoc) -> Self {
        self.loc = loc;
        self
    }

    /// The compiled tool, or what is wrong with it (located at the registration).
    pub fn into_tool(self) -> Result<Tool, Vec<LoadError>> {
        let at =
            |m: String| LoadError::at(self.loc.clone(), format!("tool \"{}\": {m}", self.name));
        let mut errors: Vec<LoadError> = self.errors.iter().cloned().map(at).collect();
        if self.input_schema.is_some() && !self.params.is_empty() {
            errors.push(at("input_schema cannot be mixed with param".into()));
        }
        let parts = ToolParts {
            schema: self
                .input_schema
                .clone()
                .unwrap_or_else(|| schema::object_schema(&self.params)),
            name: self.name.clone(),
            description: self.description,
            requires: self.requires,
            output_schema: self.output_schema,
            exclusive: self.exclusive,
            timeout: self.timeout,
            retries: self.retries,
            rate_limit: self.rate_limit,
            loc: self.loc.clone(),
            title: self.meta.title,
            hints: self.meta.hints,
            task: self.meta.task,
            handler: Arc::new(NativeHandler(self.handler)),
        };
        let extra = self.meta.extra;
        match parts.build() {
            Ok(mut tool) if errors.is_empty() => {
                // MCP's further `_meta` (a page, who may call the tool) is no part of the build.
                tool.meta.extra = extra;
                Ok(tool)
            }
            Ok(_) => Err(errors),
            Err(problems) => {
                errors.extend(problems.into_iter().map(|(part, m)| match part {
                    Part::Name => LoadError::at(self.loc.clone(), m),
                    _ => LoadError::at(self.loc.clone(), format!("tool \"{}\": {m}", self.name)),
                }));
                Err(errors)
            }
        }
    }
}

/// The source the application's native tools form, loaded after the stdlib.
pub const NATIVE_SOURCE: &str = "<native>";

/// Compiles the application's native tools into one source for the registry.
pub fn native_source(tools: Vec<NativeTool>) -> LoadedFile {
    let mut file = LoadedFile {
        path: NATIVE_SOURCE.to_string(),
        origin: crate::registry::Origin::Native,
        ..LoadedFile::default()
    };
    for t in tools {
        match t.into_tool() {
            Ok(tool) => file.tools.push(Arc::new(tool)),
            Err(errs) => file.errors.extend(errs),
        }
    }
    file
}

/// Drives an async Rust handler to completion on the calling (blocking) thread, within the
/// attempt's deadline and the run's cancellation.
struct NativeHandler(Arc<NativeFn>);

impl Handler for NativeHandler {
    fn call(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        let mut inner = ctx.clone();
        inner.granted.native = Some(Arc::new(kiln_core::context::NativeDeclared {
            tool: tool.name.clone(),
            requires: tool.requires.clone(),
        }));
        let future = (self.0)(args.clone(), &inner);
        drive(future, deadline, ctx, &tool.name)
    }
}

type TargetFn = dyn Fn(&[Value]) -> String + Send + Sync;
type ScopeFn = dyn Fn(&str, &[Value]) -> bool + Send + Sync;
type AppFn = dyn Fn(&[Value], &CallContext) -> Result<Value, String> + Send + Sync;

/// A function the application gives scripts (e.g. `crm_lookup(id)`), gated like the built-in
/// host functions: the running tool must declare its capability, the caller must hold a grant
/// of it, and a scoped grant must cover the call's target.
#[derive(Clone)]
pub struct HostFn {
    /// The function's name in scripts.
    pub name: String,
    /// The capability a tool must declare and its caller hold.
    pub capability: String,
    /// Parameter names (for definitions and completion).
    pub params: Vec<String>,
    /// What a call reaches (checked against a scoped grant).
    pub target: Arc<TargetFn>,
    /// `None`: a scope covers the call when it equals the target.
    pub in_scope: Option<Arc<ScopeFn>>,
    /// The function itself.
    pub func: Arc<AppFn>,
}

impl HostFn {
    /// Function `name(params...)` needing capability `capability`; `func` gets the arguments
    /// as JSON and the caller's context. An `Err` message is thrown like `tool_error(msg)`.
    ///
    /// By default the call's target is its first argument and a grant `CAP:SCOPE` covers it
    /// when the scope equals the target; see [`HostFn::target`] and [`HostFn::scope_check`].
    pub fn new<F>(name: &str, capability: &str, params: &[&str], func: F) -> Self
    where
        F: Fn(&[Value], &CallContext) -> Result<Value, String> + Send + Sync + 'static,
    {
        HostFn {
            name: name.to_string(),
            capability: capability.to_string(),
            params: params.iter().map(|p| p.to_string()).collect(),
            target: Arc::new(|args| match args.first() {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            }),
            in_scope: None,
            func: Arc::new(func),
        }
    }

    /// How a call's target is named in refusals (default: the first argument).
    pub fn target(mut self, f: impl Fn(&[Value]) -> String + Send + Sync + 'static) -> Self {
        self.target = Arc::new(f);
        self
    }

    /// Whether a grant's scope covers a call with these arguments (default: scope == target).
    pub fn scope_check(
        mut self,
        f: impl Fn(&str, &[Value]) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.in_scope = Some(Arc::new(f));
        self
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The capability it needs.
    pub fn capability(&self) -> &str {
        &self.capability
    }
}
