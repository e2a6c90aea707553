//! The run context handed to handlers as `ctx`, kept apart from the model's `args`.

pub(crate) mod approver;
pub mod call_events;
pub mod runner;

use crate::capability::Grants;
use crate::services::Services;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Everything a call knows besides its arguments, in four parts: who calls ([`Who`]), what is
/// granted ([`Granted`]), where it runs ([`RunScope`]) and who approves what it asks
/// ([`Approval`]).
#[derive(Clone)]
pub struct CallContext {
    /// Who calls: the actor, the caller, the run and the call.
    pub who: Who,
    /// What is granted: the caller's grants, and what the native tool running declares.
    pub granted: Granted,
    /// Where it runs: services, the pinned registry, state, limits and observers.
    pub run: RunScope,
    /// Who approves the call's needs-approval grants.
    pub approval: Approval,
}

/// Who calls: the actor, the caller, the run and call ids, the retry key and the depth.
#[derive(Clone)]
pub struct Who {
    /// Who the run acts for (from the application), if anyone.
    pub actor_id: Option<String>,
    /// Who is calling: an agent's run, a pipeline's, or the application directly.
    pub caller: Caller,
    /// Id of the run.
    pub run_id: String,
    /// The id the model gave this tool call (for its trace span); `None` outside agent runs.
    pub call_id: Option<String>,
    /// The tool call's key for outside APIs (`ctx.idempotency_key`): the same on every retry of
    /// the step it belongs to; set for calls an agent run makes.
    pub idempotency_key: Option<String>,
    /// Nesting depth of `call_tool`.
    pub depth: u32,
}

/// What is granted: the caller's grants, and inside a native tool, what that tool declares.
#[derive(Clone)]
pub struct Granted {
    /// What the caller was granted.
    pub grants: Grants,
    /// The native tool running, with the capabilities it declares (for
    /// [`CallContext::call_tool`]).
    pub native: Option<Arc<NativeDeclared>>,
}

/// A native tool as the calls it makes see it: its name and the capabilities it declares,
/// the most a tool it calls may require.
#[derive(Debug, Clone)]
pub struct NativeDeclared {
    /// The tool's name.
    pub tool: String,
    /// The capabilities it declares.
    pub requires: Vec<crate::capability::Capability>,
}

/// Where a call runs: the host's services, the registry its run pinned, the run's state and
/// application context, its limits (cancellation, deadline, calls left), and who hears of it
/// (the nested log, the journal, the event observer, the agent runner).
#[derive(Clone)]
pub struct RunScope {
    /// Host services (store, workspace, the terminal's approver).
    pub services: Arc<Services>,
    /// The registry snapshot the run pinned (for `call_tool`).
    pub registry: Option<Arc<dyn Tools>>,
    /// Mutable per-run state shared by the run's calls (`ctx.state`).
    pub state: Arc<Mutex<Value>>,
    /// Read-only application context (`--context k=v`).
    pub context: serde_json::Map<String, Value>,
    /// The state was restored from a saved session (`ctx.restored`).
    pub restored: bool,
    /// Set to stop running scripts (Ctrl-C).
    pub cancel: Option<crate::cancel::Cancel>,
    /// A deadline for the whole run.
    pub deadline: Option<Instant>,
    /// Tool calls the run's budget has left for calls made inside this one (a code-mode
    /// program's), when it limits them.
    pub calls_left: Option<Arc<std::sync::atomic::AtomicU64>>,
    /// Where calls made inside this call are recorded (a code-mode program's tool calls), for
    /// the run log to show under it.
    pub nested: Option<NestedLog>,
    /// Runs the calls made inside this call as steps of a durable run's journal, so a resumed
    /// program gets the results of the calls it completed back instead of making them again.
    pub steps: Option<Arc<dyn NestedSteps>>,
    /// Where the call's progress and log messages go besides tracing (the door's observer).
    pub events: Option<Arc<call_events::CallEvents>>,
    /// What runs agents the call reaches (an agent as a tool, a pipeline's agent nodes) and
    /// logs the runs that end inside it (the host, when there is one).
    pub agents: Option<std::sync::Weak<dyn runner::AgentRunner>>,
}

/// Who approves the call's needs-approval grants.
#[derive(Clone, Default)]
pub struct Approval {
    /// Who approves in place of the host's terminal: the door's person (an MCP client, through
    /// elicitation), for calls made while the door waits; `None`: the terminal, or `--yes`.
    pub approver: Option<Arc<dyn Approver>>,
}

impl CallContext {
    /// A context with these grants and services, a fresh run id and empty state.
    pub fn new(grants: Grants, services: Arc<Services>) -> Self {
        CallContext {
            who: Who {
                actor_id: None,
                caller: Caller::Direct,
                run_id: new_run_id(),
                call_id: None,
                idempotency_key: None,
                depth: 0,
            },
            granted: Granted {
                grants,
                native: None,
            },
            run: RunScope {
                services,
                registry: None,
                state: Arc::new(Mutex::new(Value::Object(serde_json::Map::new()))),
                context: serde_json::Map::new(),
                restored: false,
                cancel: None,
                deadline: None,
                calls_left: None,
                nested: None,
                steps: None,
                events: None,
                agents: None,
            },
            approval: Approval::default(),
        }
    }

    /// Reports progress, as `progress(done, total, message)` does in scripts: to the caller
    /// when it listens (an MCP client that sent a progress token), else to tracing at debug.
    /// `Err` says what is wrong with the numbers.
    pub fn progress(
        &self,
        done: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), String> {
        call_events::progress(self.run.events.as_deref(), done, total, message)
    }

    /// Logs a message, as `log(level, message)` does in scripts: to tracing (stderr), and to
    /// the caller when it listens (an MCP client, at the level it chose).
    pub fn log(&self, level: call_events::LogLevel, message: &str) {
        call_events::log(self.run.events.as_deref(), level, message);
    }
}

/// Where a call's own calls are recorded.
pub type NestedLog = Arc<Mutex<Vec<NestedCall>>>;

/// A call made inside another (a code-mode program's), as its parent records it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NestedCall {
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// How it ended.
    pub outcome: crate::failure::ToolOutcome,
}

pub use approver::{ApprovalAsk, Approver, WaitEnds};

/// The work of one call made inside another: it runs the call and returns how it ended.
pub type NestedWork = Box<dyn FnOnce() -> crate::failure::ToolOutcome + Send>;

/// Journals the calls a call makes (a code-mode program's), each as a step of the run.
///
/// Called from the program's thread, which waits for the answer: the journal runs the work
/// (or recalls its outcome) on the run's side.
pub trait NestedSteps: Send + Sync {
    /// Runs `work` as the parent's nested call number `index` (from 1, in the order the
    /// program makes them), or returns the outcome it had when it ran before. `Err` says why
    /// the journal could not answer (the run ended, the journal failed).
    fn step(&self, index: u32, work: NestedWork) -> Result<crate::failure::ToolOutcome, String>;
}

/// The options a caller hands a call or a run besides its grants: the application context,
/// who it acts for, a deadline, a cancellation and shared state. `CallOptions` and
/// `RunOptions` both lend theirs as one, and [`CallContext::apply`] is the one place they
/// reach a context.
pub struct CallerScope<'a> {
    /// Read-only application context (`ctx.context`).
    pub context: &'a serde_json::Map<String, Value>,
    /// Who the caller acts for (`ctx.actor_id`).
    pub actor_id: Option<&'a str>,
    /// How long the call or run may take.
    pub timeout: Option<std::time::Duration>,
    /// Cancels it.
    pub cancel: Option<&'a tokio_util::sync::CancellationToken>,
    /// State shared with the caller (`ctx.state`).
    pub state: Option<&'a Arc<Mutex<Value>>>,
}

impl CallContext {
    /// Takes the caller's options: context, actor, deadline (from now), cancellation (linked
    /// once, see [`crate::cancel::Cancel`]) and shared state.
    pub fn apply(&mut self, scope: CallerScope<'_>) {
        self.run.context = scope.context.clone();
        self.who.actor_id = scope.actor_id.map(str::to_string);
        self.run.deadline = scope.timeout.map(|t| Instant::now() + t);
        self.run.cancel = scope.cancel.map(crate::cancel::Cancel::linked);
        if let Some(state) = scope.state {
            self.run.state = state.clone();
        }
    }
}

/// Who a call is made for; capability refusals name it, and scripts see it as `ctx.agent`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Caller {
    /// The application, a door or a person called the tool directly.
    #[default]
    Direct,
    /// An agent's run.
    Agent(String),
    /// A pipeline's run (its nodes' calls).
    Pipeline(String),
}

impl Caller {
    /// What scripts see as `ctx.agent`: the agent's name, `pipeline:NAME`, or nothing.
    pub fn label(&self) -> Option<String> {
        match self {
            Caller::Direct => None,
            Caller::Agent(name) => Some(name.clone()),
            // The run log's name of a pipeline run: one spelling for both.
            Caller::Pipeline(name) => Some(runner::RunKind::Pipeline(name.clone()).to_string()),
        }
    }

    /// The caller in a message: `agent "support"`, `pipeline "report"`, or `fallback`.
    pub fn describe(&self, fallback: &str) -> String {
        match self {
            Caller::Direct => fallback.to_string(),
            Caller::Agent(name) => format!("agent \"{name}\""),
            Caller::Pipeline(name) => format!("pipeline \"{name}\""),
        }
    }
}

/// A unique id for a run: the clock (microseconds, so ids sort by start), this process's tag
/// and a counter. The tag is drawn at random once per process (mixed with its id), so two
/// processes sharing a database that start runs in the same microsecond still differ.
pub fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    run_id_of(micros, process_tag(), count)
}

/// The run id of a start at `micros` by the process tagged `tag`, its `count`th.
fn run_id_of(micros: u128, tag: u32, count: u64) -> String {
    format!("run_{micros:x}{tag:08x}{:04x}", count & 0xffff)
}

/// This process as a run's owner: `HOST:PID` (read once: every run start records it).
pub fn this_process() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| format!("{}:{}", host_name(), std::process::id()))
}

/// This machine's name (what a run's owner names it by).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// This process's tag: random (the OS-seeded keys of std's `RandomState`) and its pid, hashed.
fn process_tag() -> u32 {
    use std::hash::{BuildHasher as _, Hasher as _};
    static TAG: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        (h.finish() >> 32) as u32
    })
}

/// A tool as a nested call (`call_tool`, a pipeline's tool node) reaches it: what it requires
/// and how it runs. [`crate::tool::Tool`] implements it; the context holds its run's tools only
/// through [`Tools`], so it names no tool or registry type and stays below both.
pub trait Reachable: Send + Sync {
    /// The capabilities it needs from its caller.
    fn requires(&self) -> &[crate::capability::Capability];
    /// Validates `args` and runs it in `ctx`, as a model's call of it would.
    fn execute(&self, args: &Value, ctx: &CallContext) -> crate::failure::ToolOutcome;
}

/// What a policy says about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Refuse, for this reason.
    Deny(String),
    /// Go ahead only if a person approves, told this reason.
    NeedsApproval(String),
    /// Go ahead with these arguments instead.
    Rewrite(Value),
}

/// One policy.
pub trait Policy: Send + Sync {
    /// Its name, as refusals say it.
    fn name(&self) -> &str;
    /// Whether it checks calls of `tool`.
    fn applies_to(&self, tool: &str) -> bool;
    /// Its verdict on a call of `tool` with `args`; a policy that fails denies.
    fn check(&self, tool: &str, args: &Value, ctx: &CallContext) -> Verdict;
    /// Where it was declared.
    fn loc(&self) -> &crate::error::SourceLoc;
}

/// The tools a call can reach by name: the registry snapshot its run pinned.
pub trait Tools: Send + Sync {
    /// The tool `name`, if the snapshot holds it.
    fn reach(&self, name: &str) -> Option<Arc<dyn Reachable>>;
    /// The call policies of the snapshot, in load order.
    fn policies(&self) -> Vec<Arc<dyn Policy>> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Caller;
    use super::runner::RunKind;

    #[test]
    fn a_pipeline_caller_is_labelled_as_the_run_log_names_its_run() {
        let label = Caller::Pipeline("report".into()).label().expect("a label");
        assert_eq!(label, "pipeline:report");
        assert_eq!(RunKind::parse(&label), RunKind::Pipeline("report".into()));
        assert_eq!(
            Caller::Agent("support".into()).label().as_deref(),
            Some("support")
        );
        assert_eq!(Caller::Direct.label(), None);
    }
}
