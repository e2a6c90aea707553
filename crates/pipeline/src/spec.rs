//! What a pipeline is: named input values, nodes that compute values from others by calling a
//! tool, an agent or another pipeline, and the values it outputs. No Rhai here: a node's
//! argument closure is a [`NodeMapper`] the script layer implements.

use kiln_core::capability::Capability;
use kiln_core::error::SourceLoc;
use kiln_core::schema::Param;
use kiln_core::tool::ToolFailure;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default deadline of a whole pipeline run (agents inside take their time).
pub const DEFAULT_PIPELINE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default number of nodes running at once.
pub const DEFAULT_MAX_PARALLEL: usize = 4;

/// What a node calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tool, by name.
    Tool(String),
    /// An agent (`agent:NAME`): its prompt is the rendered values or the closure's string.
    Agent(String),
    /// Another pipeline (`pipeline:NAME`): composition.
    Pipeline(String),
}

impl Target {
    /// Parses `tool`, `agent:NAME` or `pipeline:NAME`.
    pub fn parse(text: &str) -> Result<Target, String> {
        let named = |kind: &str, name: &str| {
            if kiln_core::tool::valid_tool_name(name) {
                Ok(name.to_string())
            } else {
                Err(format!(
                    "\"{text}\": the {kind} name must match ^[a-zA-Z0-9_-]{{1,64}}$"
                ))
            }
        };
        match text.split_once(':') {
            None => named("tool", text).map(Target::Tool),
            Some(("agent", name)) => named("agent", name).map(Target::Agent),
            Some(("pipeline", name)) => named("pipeline", name).map(Target::Pipeline),
            Some((kind, _)) => Err(format!(
                "\"{text}\": unknown kind \"{kind}\" (expected a tool name, agent:NAME or pipeline:NAME)"
            )),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tool(n) => write!(f, "{n}"),
            Target::Agent(n) => write!(f, "agent:{n}"),
            Target::Pipeline(n) => write!(f, "pipeline:{n}"),
        }
    }
}

/// Turns a node's named values into its arguments (a tool's or pipeline's) or prompt (an
/// agent's); the script layer implements it for closures.
pub trait NodeMapper: Send + Sync {
    /// Maps `values` (an object of the values the node names); must give up by `deadline`.
    fn map(&self, values: &Value, deadline: Instant) -> Result<Value, ToolFailure>;
}

/// One `.compute(name, [deps], target, closure?)`.
#[derive(Clone)]
pub struct Node {
    /// The value it computes.
    pub name: String,
    /// The values it needs, in the order named.
    pub deps: Vec<String>,
    /// What it calls.
    pub target: Target,
    /// Maps the values to arguments; without one the arguments are the values themselves.
    pub mapper: Option<Arc<dyn NodeMapper>>,
    /// Where the `.compute` call is.
    pub loc: SourceLoc,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .field("deps", &self.deps)
            .field("target", &self.target)
            .finish()
    }
}

/// A checked pipeline definition.
#[derive(Debug, Clone)]
pub struct PipelineSpec {
    /// Unique name (also its tool name).
    pub name: String,
    /// Description shown to models when it is offered as a tool.
    pub description: String,
    /// Inputs, as tool parameters.
    pub inputs: Vec<Param>,
    /// Nodes in definition order (acyclic, every dependency known).
    pub nodes: Vec<Node>,
    /// The values returned, each computed by a node.
    pub outputs: Vec<Output>,
    /// Capabilities the pipeline declares: its callers must hold them, its nodes get no more.
    pub requires: Vec<Capability>,
    /// Deadline of a whole run.
    pub timeout: Duration,
    /// Nodes running at once.
    pub max_parallel: usize,
    /// Where the `pipeline(...)` call is.
    pub loc: SourceLoc,
}

impl PipelineSpec {
    /// A node by the value it computes.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Inputs from `KEY=VALUE` pairs (the CLI's `--input`, the REPL's `:run`): a string input
    /// takes VALUE as is, any other reads it as JSON (falling back to the text, which
    /// validation then reports).
    pub fn inputs_from_pairs<S: AsRef<str>>(&self, pairs: &[S]) -> Result<Value, String> {
        let mut map = serde_json::Map::new();
        for pair in pairs {
            let pair = pair.as_ref();
            let (key, text) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?}: expected KEY=VALUE"))?;
            let Some(input) = self.inputs.iter().find(|p| p.name == key) else {
                let known: Vec<&str> = self.inputs.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "pipeline \"{}\" has no input \"{key}\" (inputs: {})",
                    self.name,
                    known.join(", ")
                ));
            };
            let value = if input.schema["type"] == "string" {
                Value::String(text.to_string())
            } else {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
            };
            map.insert(key.to_string(), value);
        }
        Ok(Value::Object(map))
    }

    /// Whether `name` is one of the inputs.
    pub fn is_input(&self, name: &str) -> bool {
        self.inputs.iter().any(|p| p.name == name)
    }
}

/// One `.result(name)` (formerly `.output(name)`).
#[derive(Debug, Clone)]
pub struct Output {
    /// The value returned.
    pub name: String,
    /// Where the `.result` call is.
    pub loc: SourceLoc,
}

/// A loaded pipeline: its definition and the tool that runs it.
#[derive(Clone)]
pub struct Pipeline {
    /// The definition.
    pub spec: std::sync::Arc<PipelineSpec>,
    /// The tool offering it (inputs as parameters, its capabilities as requirements).
    pub tool: std::sync::Arc<kiln_core::tool::Tool>,
}
