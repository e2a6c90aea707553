//! The seam between a pipeline and what runs beyond tools: an agent node's run, and the run log
//! a finished pipeline goes to. The host implements it; the runner and the context hold it only
//! as a trait object, so the core names no host, agent loop or database.

use super::report::PipelineReport;
use crate::capability::Grants;
use crate::failure::ToolFailure;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// An agent node's run as the pipeline asks for it.
pub struct AgentCall {
    /// The agent to run.
    pub agent: String,
    /// The prompt (the node's values, rendered).
    pub prompt: String,
    /// The pipeline's grants: the agent runs within them.
    pub grants: Grants,
    /// The caller's application context.
    pub context: Map<String, Value>,
    /// Who the run acts for.
    pub actor_id: Option<String>,
    /// When the node must be done.
    pub deadline: Instant,
    /// The pipeline run's cancellation, if it has one.
    pub cancel: Option<crate::cancel::Cancel>,
    /// How deep in agents calling agents the run is (0: called by a pipeline or a door).
    pub depth: u32,
    /// The run that asked for this one (an agent's run calling it as a tool, a pipeline's
    /// run): the run log shows the new run as its child.
    pub parent: Option<String>,
}

/// What [`AgentRunner::run_agent`] returns: the agent's answer, or the node's failure.
pub type AgentAnswer<'a> = Pin<Box<dyn Future<Output = Result<String, ToolFailure>> + Send + 'a>>;

/// Runs agents for pipeline nodes and logs finished pipelines (the host implements it).
pub trait AgentRunner: Send + Sync {
    /// Runs one agent node; a failure is already in the words the node reports.
    fn run_agent(&self, call: AgentCall) -> AgentAnswer<'_>;
    /// Records a finished pipeline run in the run log, if there is one.
    fn log_pipeline(&self, report: &PipelineReport) -> Result<(), String>;
}
