//! An agent as a script defined it: provider, model, prompt, tools and grants.

use kiln_core::capability::Grants;
use kiln_core::error::SourceLoc;
use kiln_core::model::LocalModel;
use kiln_core::tool::Tool;
use serde_json::Value;
use std::sync::Arc;

pub use crate::provider_kind::ProviderKind;
pub use text_calls::TextCallFormat;

pub mod compact;
pub mod skills;
pub mod text_calls;

/// How an agent talks to its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AgentMode {
    /// Native tool calling (the default).
    #[default]
    Tools,
    /// One JSON plan per step, for models without tool calling.
    JsonPlanner,
}

impl AgentMode {
    /// Every mode.
    pub const ALL: [AgentMode; 2] = [AgentMode::Tools, AgentMode::JsonPlanner];

    /// The mode named `name` (`tools`, `json_planner`).
    pub fn parse(name: &str) -> Option<AgentMode> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The name scripts use.
    pub fn name(self) -> &'static str {
        match self {
            AgentMode::Tools => "tools",
            AgentMode::JsonPlanner => "json_planner",
        }
    }
}

/// Compares with a mode's name (`mode == "json_planner"`).
impl PartialEq<&str> for AgentMode {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for AgentMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Default `max_steps` of planner mode.
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// Default `max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;

/// How an agent is named in another's `.tools([...])` (`"agent:researcher"`).
pub const AGENT_PREFIX: &str = "agent:";

/// The agent a `.tools([...])` entry names, if it names one.
pub fn named_agent(entry: &str) -> Option<&str> {
    entry.strip_prefix(AGENT_PREFIX)
}

/// A loaded agent.
pub struct AgentSpec {
    /// Unique name.
    pub name: String,
    /// What the agent is for.
    pub description: String,
    /// The model's provider.
    pub provider: ProviderKind,
    /// Model name; providers have defaults.
    pub model: Option<String>,
    /// System prompt.
    pub system: Option<String>,
    /// Names of the tools offered to the model.
    pub tools: Vec<String>,
    /// What the agent grants its tools.
    pub grants: Grants,
    /// Tool rounds before `ToolLoopError`.
    pub max_iterations: u32,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Max output tokens per model request.
    pub max_tokens: Option<u32>,
    /// Override of the provider's base URL.
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Bytes of one model reply (`.max_reply_bytes(n)`).
    pub max_reply_bytes: Option<usize>,
    /// Bytes of one line of a streamed reply (`.max_line_bytes(n)`).
    pub max_line_bytes: Option<usize>,
    /// Concurrent tool calls per round.
    pub max_parallel: usize,
    /// Native tool calling (the default) or one JSON plan per step.
    pub mode: AgentMode,
    /// Planner steps before `MaxStepsExceeded` (json_planner mode).
    pub max_steps: u32,
    /// Where it was defined.
    pub loc: SourceLoc,
    /// Code mode (`.code_mode(...)`): the model writes one program that calls the tools.
    pub code_mode: Option<CodeMode>,
    /// What its runs promise and may spend (`.output`, `.budget`, `.price`).
    pub contract: Contract,
    /// Agents it may hand the conversation to (`.handoffs([...])`).
    pub handoffs: Vec<String>,
    /// The planner and validator the agent's script defined.
    pub script: Option<Arc<dyn AgentScript>>,
    /// Models tried in order when its own is busy or unreachable (`.fallback([...])`).
    pub fallback: Vec<crate::fallback::FallbackModel>,
    /// Which tool calls written as text are recovered (`.text_tool_calls(...)`).
    pub text_tool_calls: TextCallFormat,
    /// `.defer_loading([...])`: tools (names, or prefixes ending in `*`) offered only once a
    /// search found them.
    pub defer_loading: Vec<String>,
    /// `.defer_loading([...], #{ search: "kiln" })`: kiln's own `search_tools` even where the
    /// provider searches deferred tools itself (a model too old for the provider's search).
    pub defer_with_kiln: bool,
    /// `.compact(#{...})`: when and how a long transcript is compacted.
    pub compaction: Option<compact::Compaction>,
    /// `.skills([...])`: the Agent Skills listed to its model and loaded on demand.
    pub skills: Vec<Arc<skills::Skill>>,
}

/// An agent's contract: its typed final answer, its budget and its model's prices.
#[derive(Debug, Clone, Default)]
pub struct Contract {
    /// `.output(schema)`: the final answer must be JSON matching it.
    pub output: Option<crate::contract::OutputContract>,
    /// `.budget(#{ ... })`: what a run may spend.
    pub budget: crate::contract::Budget,
    /// `.price(input_per_mtok, output_per_mtok)`: what its model's tokens cost.
    pub price: Option<crate::contract::Price>,
}

/// What an agent's script adds: a planner that plays the model (the `script` provider) and a
/// `.validator(|tool, args| args)` run on planned arguments after the schema (json_planner
/// mode). The script layer implements it, so the spec and the registry holding it know no Rhai.
pub trait AgentScript: Send + Sync {
    /// The planner as a model, if the agent has one.
    fn planner_model(&self) -> Option<Arc<dyn LocalModel>>;
    /// Runs the validator on planned arguments: `None` when the agent has none.
    fn validate(&self, tool: &str, args: Value) -> Option<Result<Value, String>>;
    /// Code mode's tools over `tools` (`run_code`, whose program calls them as functions, and
    /// `search_tools` when there are many), when the script layer can build them.
    fn code_tools(&self, _tools: &[Arc<Tool>], _mode: &CodeMode) -> Vec<Arc<Tool>> {
        Vec::new()
    }
}

/// How an agent in code mode runs the model's programs.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeMode {
    /// Tools that stay ordinary tool calls (not functions of the program).
    pub except: Vec<String>,
    /// Nested tool calls one program may make.
    pub max_calls: u32,
    /// How long one program may run.
    pub timeout: std::time::Duration,
    /// Closures `parallel([...])` runs at once (the agent's `max_parallel`).
    pub max_parallel: usize,
}

impl Default for CodeMode {
    fn default() -> Self {
        CodeMode {
            except: Vec::new(),
            max_calls: 50,
            timeout: std::time::Duration::from_secs(60),
            max_parallel: 4,
        }
    }
}

impl AgentSpec {
    /// Runs the agent's validator, if any, on planned arguments: the (possibly changed) args.
    pub fn validate(&self, tool: &str, args: Value) -> Result<Value, String> {
        match &self.script {
            Some(s) => s.validate(tool, args.clone()).unwrap_or(Ok(args)),
            None => Ok(args),
        }
    }
}

impl std::fmt::Debug for AgentSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSpec")
            .field("name", &self.name)
            .field("provider", &self.provider)
            .finish()
    }
}

/// How `.tools([...])` names a remote agent.
pub const A2A_PREFIX: &str = "a2a:";

/// A remote A2A agent a script declared (`a2a_agent(...)`; its tool is in `a2a_agent`).
#[derive(Debug, Clone)]
pub struct A2aAgentSpec {
    /// Its name in kiln (`a2a:NAME`).
    pub name: String,
    /// Its A2A URL: its card is at `URL/.well-known/agent-card.json`.
    pub url: String,
    /// The environment variable holding its bearer token.
    pub bearer_env: Option<String>,
    /// A machine's OAuth client (`.oauth(#{ grant: "client_credentials", ... })`): its token
    /// asked of the authorization server the remote agent names.
    pub oauth: Option<crate::mount_spec::OAuth>,
    /// What it is for, told to the model (default: its card's description).
    pub description: Option<String>,
    /// Where it was declared.
    pub loc: SourceLoc,
}

/// The remote agent an entry of `.tools([...])` names (`a2a:NAME`).
pub fn named_a2a_agent(entry: &str) -> Option<&str> {
    entry.strip_prefix(A2A_PREFIX)
}

/// What is wrong with an agent listing `entry`, which needs capability `cap`: `unknown` says
/// what is not declared (when it is not), else the grant the agent lacks.
pub(crate) fn entry_problem(
    agent: &AgentSpec,
    entry: &str,
    cap: &str,
    unknown: Option<String>,
) -> Option<String> {
    if let Some(what) = unknown {
        return Some(format!(
            "agent \"{}\" lists \"{entry}\" but {what}",
            agent.name
        ));
    }
    let needed = kiln_core::capability::Capability::parse(cap).ok()?;
    let missing = agent.grants.missing(std::slice::from_ref(&needed));
    (!missing.is_empty()).then(|| {
        format!(
            "agent \"{}\" lists \"{entry}\" which requires [{cap}] but the agent grants only {}",
            agent.name,
            agent.grants.list()
        )
    })
}
