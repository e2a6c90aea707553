//! A loaded tool: its schema and compiled validator, and `execute()` -> [`ToolOutcome`].

pub mod meta;
pub mod parts;
pub mod policy;
pub mod running;

use crate::capability::{self, Capability};
use crate::context::CallContext;
use crate::error::SourceLoc;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::failure::{FailureKind, ToolFailure, ToolOutcome};
pub use crate::schema::validate::{compile_schema, violations};
pub use meta::{Hints, OutputSchema, ResolvedHints, TaskMode, ToolMeta};

/// Largest arguments accepted from a model (serialized JSON).
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;
/// Largest result passed on (serialized JSON); bigger ones are truncated with a note.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;

/// Default per-call deadline when a tool sets no `.timeout(ms)`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Tool names every provider accepts.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Maximum nesting of `call_tool`.
pub const MAX_CALL_DEPTH: u32 = 4;

/// Separates a mounted MCP server's name from its tool's in the registry (`fs__read_file`).
pub const MOUNT_SEPARATOR: &str = "__";

/// Runs tool `name` from inside tool `caller` (`call_tool`), under the capability rules: the
/// callee may need nothing the caller does not declare, the caller's grants apply, and nesting
/// is bounded. `Err` is a refusal, worded for the model.
pub fn call_nested(
    caller: &str,
    declared: &[Capability],
    ctx: &CallContext,
    name: &str,
    args: &Value,
) -> Result<ToolOutcome, String> {
    if ctx.who.depth >= MAX_CALL_DEPTH {
        return Err(format!(
            "call_tool(\"{name}\") refused: nesting deeper than {MAX_CALL_DEPTH}"
        ));
    }
    let tool = ctx
        .run
        .registry
        .as_ref()
        .and_then(|r| r.reach(name))
        .ok_or_else(|| format!("call_tool(\"{name}\"): no such tool"))?;
    let beyond: Vec<String> = tool
        .requires()
        .iter()
        .filter(|r| !declared.iter().any(|d| d.name == r.name))
        .map(|r| r.to_string())
        .collect();
    if !beyond.is_empty() {
        return Err(format!(
            "call_tool(\"{name}\") refused: it requires [{}] which tool \"{caller}\" does not declare",
            beyond.join(", ")
        ));
    }
    let mut inner = ctx.clone();
    inner.who.depth += 1;
    inner.who.call_id = None;
    Ok(tool.execute(args, &inner))
}

/// A compiled tool, ready to validate and run.
pub struct Tool {
    /// Unique name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema 2020-12 of the arguments, shared with every request that offers the tool.
    pub schema: Arc<Value>,
    /// Capabilities the tool needs from its caller.
    pub requires: Vec<Capability>,
    /// Runs alone: holds a run-wide lock while executing.
    pub exclusive: bool,
    /// Per-attempt deadline.
    pub timeout: Duration,
    /// How many times a handler that failed with a retryable error
    /// ([`FailureKind::is_retryable`]) is re-run.
    pub retries: u32,
    /// Calls allowed per window, shared by every run of the host.
    pub rate_limit: Option<crate::ratelimit::RateLimit>,
    /// Where the tool was defined.
    pub loc: SourceLoc,
    /// What MCP clients are told beyond the schema: title, output schema, behaviour hints.
    pub meta: ToolMeta,
    /// The compiled `schema`.
    pub validator: jsonschema::Validator,
    /// What runs a call.
    pub handler: Arc<dyn Handler>,
    /// How long this tool's last call took, in µs (`u64::MAX` before the first): a call on a
    /// multi-thread runtime runs on the worker itself only after a quick one.
    pub(crate) last_call_us: std::sync::atomic::AtomicU64,
}

/// A call that took less than this last time runs on a multi-thread runtime's worker itself
/// (where handing the worker over with `block_in_place` costs more than the call).
const QUICK_CALL_US: u64 = 500;

/// The code behind a tool: a Rhai function, or a Rust function the application registered.
///
/// Object-safe, so a registry holds both kinds alike. A call is blocking: script handlers run
/// synchronously on the blocking pool (the sandbox's deadline and cancel flag are per thread);
/// native handlers are driven to completion on that same thread.
pub trait Handler: Send + Sync {
    /// Runs one attempt with validated `args`; it must give up by `deadline`.
    fn call(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure>;

    /// Whether the tool is offered in this context (a script's `available_if`).
    fn is_available(&self, _tool: &Tool, _ctx: &CallContext) -> bool {
        true
    }

    /// Which version of the code runs (a hash of the script file); empty when not versioned.
    fn version(&self) -> &str {
        ""
    }

    /// Whether a call may run on the thread that drives the caller's runtime, where it must
    /// not wait on that runtime (no async handler, no nested call that may drive one).
    fn runs_in_place(&self) -> bool {
        false
    }

    /// Whether its calls make calls of their own for the run log to show under them (a
    /// code-mode program): the caller then gives the context a `ctx.run.nested` log.
    fn records_nested(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("loc", &self.loc)
            .finish()
    }
}

impl Tool {
    /// A log for the calls this tool's call will make, when its handler records them.
    pub fn nested_log(&self) -> Option<crate::context::NestedLog> {
        self.handler.records_nested().then(Default::default)
    }

    /// Every schema violation of `args`, as `/path: reason`.
    pub fn violations(&self, args: &Value) -> Vec<String> {
        violations(&self.validator, args)
    }

    /// The behaviour hints: what `.annotations` set, the rest derived from the capabilities.
    /// `net` or an MCP server reaches an open world; `fs.write` or `store` may overwrite
    /// (destructive); a tool needing nothing beyond `fs.read` and `env` only reads, and a
    /// read-only tool is idempotent.
    pub fn hints(&self) -> ResolvedHints {
        Self::resolve_hints(self.meta.hints, &self.requires)
    }

    /// The hints a tool needing `requires` has when it sets none.
    pub fn hints_of_requires(requires: &[Capability]) -> ResolvedHints {
        Self::resolve_hints(Hints::default(), requires)
    }

    fn resolve_hints(set: Hints, requires: &[Capability]) -> ResolvedHints {
        use crate::capability::HostCap;
        let needs = |cap: HostCap| requires.iter().any(|c| cap.is(&c.name));
        let read_only = set.read_only.unwrap_or_else(|| {
            requires
                .iter()
                .all(|c| matches!(HostCap::of(&c.name), Some(HostCap::FsRead | HostCap::Env)))
        });
        ResolvedHints {
            read_only,
            destructive: set
                .destructive
                .unwrap_or(!read_only && (needs(HostCap::FsWrite) || needs(HostCap::Store))),
            idempotent: set.idempotent.unwrap_or(read_only),
            open_world: set
                .open_world
                .unwrap_or(needs(HostCap::Net) || needs(HostCap::Mcp)),
        }
    }

    /// A successful result checked against `.output(...)`: a mismatch is an
    /// `invalid_output` failure naming each path, and a log line.
    fn check_output(&self, value: Value) -> Result<Value, ToolFailure> {
        let Some(returns) = &self.meta.output else {
            return Ok(value);
        };
        let problems = returns.violations(&value);
        if problems.is_empty() {
            return Ok(value);
        }
        tracing::warn!(
            tool = %self.name,
            at = %self.loc,
            "the result does not match the tool's .output schema: {}",
            problems.join("; ")
        );
        Err(ToolFailure::visible(
            FailureKind::InvalidOutput,
            format!(
                "Tool failed (invalid_output): the result of \"{}\" does not match its declared output schema:\n{}",
                self.name,
                problems.join("\n")
            ),
        ))
    }

    /// Whether `available_if` (if any) allows the tool in this context.
    pub fn is_available(&self, ctx: &CallContext) -> bool {
        self.handler.is_available(self, ctx)
    }

    /// Which version of the tool's code runs (a hash of its script; empty for native tools).
    pub fn version(&self) -> &str {
        self.handler.version()
    }

    /// Validates, checks capabilities and runs the handler (with retries). Blocking: call it on
    /// the blocking pool (see [`Tool::execute_async`]).
    pub fn execute(self: &Arc<Self>, args: &Value, ctx: &CallContext) -> ToolOutcome {
        let span = crate::telemetry::tool_span(
            &self.name,
            &self.description,
            ctx.who.call_id.as_deref(),
            args,
            self.name.contains(MOUNT_SEPARATOR),
        );
        let outcome = span.in_scope(|| self.execute_in_span(args, ctx));
        crate::telemetry::record_outcome(&span, &outcome);
        outcome
    }

    fn execute_in_span(self: &Arc<Self>, args: &Value, ctx: &CallContext) -> ToolOutcome {
        let started = Instant::now();
        // Fixed before admitting: time spent waiting for a rate-limit slot counts against the
        // first attempt's deadline.
        let first_deadline = self.deadline(ctx);
        let cleaned = self.without_optional_nulls(args);
        let args = cleaned.as_ref().unwrap_or(args);
        let admitted = match self.admit(args, ctx) {
            Ok(admitted) => admitted,
            Err(f) => return ToolOutcome::failed(f, started),
        };
        // What was approved for this call is not asked again inside it (a host function
        // using the same grant).
        let approved_ctx;
        let ctx = match admitted.approved.is_empty() {
            true => ctx,
            false => {
                approved_ctx = admitted.within(ctx);
                &approved_ctx
            }
        };
        // The call policies: every door's calls come through here.
        let validate = |v: &Value| self.violations(v);
        let args = match policy::apply(&self.name, &validate, args, ctx) {
            Ok(args) => args,
            Err(f) => return ToolOutcome::failed(f, started),
        };
        let args = args.as_ref();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let deadline = if attempts == 1 {
                first_deadline
            } else {
                self.deadline(ctx)
            };
            let result = self
                .handler
                .call(self, args, ctx, deadline)
                .and_then(check_content)
                .and_then(|v| self.check_output(v))
                .map(limit_result);
            let retryable = matches!(&result, Err(f) if f.kind.is_retryable());
            if !retryable || attempts > self.retries {
                return ToolOutcome {
                    result,
                    duration: started.elapsed(),
                    attempts,
                };
            }
            tracing::debug!(tool = %self.name, attempt = attempts, "retrying failed handler");
        }
    }

    /// The arguments without the optional parameters given as `null` where the schema does not
    /// allow null (models often send `null` for "not given"): `None` when there are none.
    fn without_optional_nulls(&self, args: &Value) -> Option<Value> {
        let given = args.as_object()?;
        let required: Vec<&str> = self.schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let drops = |key: &str, value: &Value| {
            value.is_null()
                && !required.contains(&key)
                && matches!(self.schema["properties"][key]["type"].as_str(), Some(t) if t != "null")
        };
        if !given.iter().any(|(k, v)| drops(k, v)) {
            return None;
        }
        Some(Value::Object(
            given
                .iter()
                .filter(|(k, v)| !drops(k, v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ))
    }

    /// What stands between a call and the handler: argument size and schema, the capability
    /// guard, a person's yes for each `ask` grant the tool relies on, then a rate-limit slot (waited for, within the call's deadline, when the limit
    /// says so). Blocking.
    pub fn admit(&self, args: &Value, ctx: &CallContext) -> Result<Admitted, ToolFailure> {
        let size = serde_json::to_string(args)
            .map(|t| t.len())
            .unwrap_or(usize::MAX);
        if size > MAX_ARGS_BYTES {
            let msg = format!(
                "Invalid arguments for tool \"{}\": {size} bytes of JSON; the limit is {MAX_ARGS_BYTES}",
                self.name
            );
            return Err(ToolFailure::visible(FailureKind::InvalidArguments, msg));
        }
        let violations = self.violations(args);
        if !violations.is_empty() {
            let msg = format!(
                "Invalid arguments for tool \"{}\":\n{}",
                self.name,
                violations.join("\n")
            );
            return Err(ToolFailure::visible(FailureKind::InvalidArguments, msg));
        }
        if !ctx.granted.grants.missing(&self.requires).is_empty() {
            return Err(ToolFailure::visible(
                FailureKind::Capability,
                self.capability_message(ctx),
            ));
        }
        let approved = self.ask_for_grants(args, ctx)?;
        if let Some(limit) = &self.rate_limit {
            let deadline = self.deadline(ctx);
            // A limit that waits shows its wait in the trace.
            let span = match limit.wait {
                true => crate::telemetry::rate_limit_span(&self.name),
                false => tracing::Span::none(),
            };
            let _in_wait = span.enter();
            ctx.run.services.rate_limits.acquire(
                &self.name,
                limit,
                deadline,
                ctx.run.cancel.as_ref().map(crate::cancel::Cancel::flag),
            )?;
        }
        Ok(Admitted { approved })
    }

    /// Asks a person, once for this call and before the handler, for each `ask` grant the
    /// tool's requirements rely on; a refusal is the call's error, which the model reads.
    /// Returns the capabilities approved.
    fn ask_for_grants(&self, args: &Value, ctx: &CallContext) -> Result<Vec<String>, ToolFailure> {
        let asking = ctx.granted.grants.asking_for(&self.requires);
        let mut approved = Vec::with_capacity(asking.len());
        for grant in asking {
            let label = &grant.cap.name;
            let question = crate::approval::grant_question(&self.name, grant, &args.to_string());
            let refused = |why: String| {
                let msg = format!(
                    "Tool \"{}\" was not run: \"{label}\" needs approval and {why}",
                    self.name
                );
                ToolFailure::visible(FailureKind::Denied, msg)
            };
            match crate::approval::ask_person(ctx, &self.name, Some(args), label, &question) {
                Ok(true) => approved.push(label.clone()),
                Ok(false) => return Err(refused("it was not approved".into())),
                Err(why) => return Err(refused(why)),
            }
        }
        Ok(approved)
    }

    /// Whether a call under `ctx` stops to ask a person before the handler runs.
    pub fn asks_before_running(&self, ctx: &CallContext) -> bool {
        !ctx.run.services.assume_yes && !ctx.granted.grants.asking_for(&self.requires).is_empty()
    }

    /// The message of a capability refusal, in the seeds' words; a direct call (no agent or
    /// pipeline asking) names `the caller`, never an agent.
    pub fn capability_message(&self, ctx: &CallContext) -> String {
        format!(
            "Tool \"{}\" requires capabilities {} but {} only has {}",
            self.name,
            capability::list(&self.requires),
            ctx.who.caller.describe("the caller"),
            ctx.granted.grants.list()
        )
    }

    /// [`Tool::execute`] on tokio's blocking pool.
    pub async fn execute_async(self: &Arc<Self>, args: Value, ctx: CallContext) -> ToolOutcome {
        let tool = self.clone();
        let started = Instant::now();
        // The call's span is a child of the caller's, on whichever thread it runs.
        let parent = tracing::Span::current();
        match tokio::task::spawn_blocking(move || parent.in_scope(|| tool.execute(&args, &ctx)))
            .await
        {
            Ok(outcome) => outcome,
            Err(e) => ToolOutcome::failed(
                ToolFailure::sanitized(FailureKind::Runtime, format!("handler task failed: {e}")),
                started,
            ),
        }
    }

    /// [`Tool::execute`] for a lone call, without a hand-off where that is safe: on a
    /// multi-thread runtime on the worker itself when the handler cannot wait on the runtime,
    /// no rate limit may make it wait and its last call was quick, else via `block_in_place`
    /// (the worker's other tasks move elsewhere); on
    /// a current-thread runtime on that very thread when the handler cannot wait on the
    /// runtime and no rate limit may make it wait ([`Handler::runs_in_place`]); otherwise on
    /// the blocking pool ([`Tool::execute_async`]). A microsecond call costs no thread wake.
    pub async fn execute_in_place(self: &Arc<Self>, args: Value, ctx: CallContext) -> ToolOutcome {
        use tokio::runtime::RuntimeFlavor;
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(RuntimeFlavor::MultiThread) => {
                use std::sync::atomic::Ordering::Relaxed;
                let quick = self.last_call_us.load(Relaxed) < QUICK_CALL_US;
                // A call that may wait for a person never holds the worker.
                let outcome = if quick
                    && self.rate_limit.is_none()
                    && self.handler.runs_in_place()
                    && !self.asks_before_running(&ctx)
                {
                    // The worker's other tasks wait this long at most once: a call that was
                    // slow goes back to `block_in_place` the next time.
                    running::in_place(|| self.execute(&args, &ctx))
                } else {
                    tokio::task::block_in_place(|| self.execute(&args, &ctx))
                };
                let took = outcome.duration.as_micros().min(u128::from(u64::MAX - 1)) as u64;
                self.last_call_us.store(took, Relaxed);
                outcome
            }
            Ok(RuntimeFlavor::CurrentThread)
                if self.rate_limit.is_none() && self.handler.runs_in_place() =>
            {
                running::in_place(|| self.execute(&args, &ctx))
            }
            _ => self.execute_async(args, ctx).await,
        }
    }

    /// The deadline of an attempt starting now: the tool's timeout within the run's deadline.
    fn deadline(&self, ctx: &CallContext) -> Instant {
        let deadline = Instant::now() + self.timeout;
        ctx.run.deadline.map_or(deadline, |d| d.min(deadline))
    }
}

/// A content result (`{"$content": [...]}`) must hold well-formed blocks: one that does not
/// is an `invalid_output` failure naming the block and what is wrong.
fn check_content(value: Value) -> Result<Value, ToolFailure> {
    match crate::model::content::from_result(&value) {
        Some(Err(e)) => Err(ToolFailure::invalid_output(&e)),
        _ => Ok(value),
    }
}

/// Replaces a result bigger than [`MAX_RESULT_BYTES`] with a note and a preview.
fn limit_result(v: Value) -> Value {
    let text = serde_json::to_string(&v).unwrap_or_default();
    if text.len() <= MAX_RESULT_BYTES {
        return v;
    }
    let preview: String = text.chars().take(2000).collect();
    json!({
        "truncated": true,
        "note": format!("the result was {} bytes; kiln passes on at most {MAX_RESULT_BYTES}", text.len()),
        "preview": preview,
    })
}

impl CallContext {
    /// Calls another tool from a native tool's handler, under the same rules as `call_tool` in
    /// scripts: the callee may require only capabilities this tool declares, the caller's grants
    /// apply, and nesting is bounded. `Err` is a refusal (a `denied` failure).
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        let ctx = self.clone();
        let name = name.to_string();
        let span = tracing::Span::current();
        let outcome = tokio::task::spawn_blocking(move || {
            let _in_caller = span.enter();
            let (caller, declared) = match &ctx.granted.native {
                Some(n) => (n.tool.as_str(), n.requires.as_slice()),
                None => ("(none)", &[][..]),
            };
            call_nested(caller, declared, &ctx, &name, &args)
                .map(|o| o.result.map_err(|f| (name.clone(), f)))
        })
        .await
        .map_err(|e| ToolFailure::sanitized(FailureKind::Runtime, e.to_string()))?;
        match outcome {
            Err(refusal) => Err(ToolFailure::visible(FailureKind::Denied, refusal)),
            Ok(Ok(v)) => Ok(v),
            Ok(Err((name, f))) => Err(ToolFailure {
                message: format!("{name}: {}", f.message),
                ..f
            }),
        }
    }
}

/// What [`Tool::admit`] let through: the capabilities a person approved for this call.
#[derive(Debug, Default)]
pub struct Admitted {
    /// The `ask` grants approved for this call, by capability name.
    pub approved: Vec<String>,
}

impl Admitted {
    /// `ctx` for the handler: what was approved is answered yes without asking again.
    pub fn within(&self, ctx: &CallContext) -> CallContext {
        let mut ctx = ctx.clone();
        ctx.approval.approver = Some(Arc::new(crate::approval::Approved {
            labels: self.approved.clone(),
            inner: ctx.approval.approver.take(),
            services: ctx.run.services.clone(),
        }));
        ctx
    }
}

// On the `Arc`: running a tool may hand it to another thread.
impl crate::context::Reachable for Arc<Tool> {
    fn requires(&self) -> &[Capability] {
        &self.requires
    }

    fn execute(&self, args: &Value, ctx: &CallContext) -> ToolOutcome {
        Tool::execute(self, args, ctx)
    }
}
