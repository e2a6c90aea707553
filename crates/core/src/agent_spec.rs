//! An agent as a script defined it: provider, model, prompt, tools and grants.

use crate::capability::Grants;
use crate::error::SourceLoc;
use crate::model::LocalModel;
use serde_json::Value;
use std::sync::Arc;

/// The providers an agent may name.
pub const PROVIDERS: &[&str] = &["anthropic", "openai", "ollama", "script"];

/// The agent modes.
pub const MODES: &[&str] = &["tools", "json_planner"];

/// Default `max_steps` of planner mode.
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// Default `max_tool_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;

/// A loaded agent.
pub struct AgentSpec {
    /// Unique name.
    pub name: String,
    /// What the agent is for.
    pub description: String,
    /// `anthropic`, `openai`, `ollama` or `script`.
    pub provider: String,
    /// Model name; providers have defaults.
    pub model: Option<String>,
    /// System prompt.
    pub system: Option<String>,
    /// Names of the tools offered to the model.
    pub tools: Vec<String>,
    /// What the agent grants its tools.
    pub grants: Grants,
    /// Tool rounds before `ToolLoopError`.
    pub max_tool_iterations: u32,
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
    /// `tools` (native tool calling, the default) or `json_planner`.
    pub mode: String,
    /// Planner steps before `MaxStepsExceeded` (json_planner mode).
    pub max_steps: u32,
    /// Where it was defined.
    pub loc: SourceLoc,
    /// The planner and validator the agent's script defined.
    pub script: Option<Arc<dyn AgentScript>>,
}

/// What an agent's script adds: a planner that plays the model (the `script` provider) and a
/// `.validator(|tool, args| args)` run on planned arguments after the schema (json_planner
/// mode). The script layer implements it, so the spec and the registry holding it know no Rhai.
pub trait AgentScript: Send + Sync {
    /// The planner as a model, if the agent has one.
    fn planner_model(&self) -> Option<Arc<dyn LocalModel>>;
    /// Runs the validator on planned arguments: `None` when the agent has none.
    fn validate(&self, tool: &str, args: Value) -> Option<Result<Value, String>>;
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
