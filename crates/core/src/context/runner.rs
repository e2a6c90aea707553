//! The seam between a call and what runs beyond tools: an agent's run (an agent called as a
//! tool, a pipeline's agent node), and the run log a run that is over before the log hears of
//! it (a pipeline's) goes to. The host implements [`AgentRunner`]; the context holds it only as
//! a trait object, so the core names no host, agent loop, pipeline or database.

use crate::capability::Grants;
use crate::failure::{ToolFailure, ToolOutcome};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// An agent's run as a caller asks for it (a pipeline's agent node, an agent called as a tool).
pub struct AgentCall {
    /// The agent to run.
    pub agent: String,
    /// The prompt (the node's values, rendered).
    pub prompt: String,
    /// The caller's grants: the agent runs within them.
    pub grants: Grants,
    /// The caller's application context.
    pub context: Map<String, Value>,
    /// Who the run acts for.
    pub actor_id: Option<String>,
    /// When the run must be done.
    pub deadline: Instant,
    /// The caller's cancellation, if it has one.
    pub cancel: Option<crate::cancel::Cancel>,
    /// How deep in agents calling agents the run is (0: called by a pipeline or a door).
    pub depth: u32,
    /// The run that asked for this one (an agent's run calling it as a tool, a pipeline's
    /// run): the run log shows the new run as its child.
    pub parent: Option<String>,
    /// Who approves the run's calls that need a person: the caller's approver (the door's
    /// person, as for the caller's own calls); `None`: the host's terminal, or nobody.
    pub approver: Option<std::sync::Arc<dyn crate::context::approver::Approver>>,
    /// The calling tool's events: the run's tools' progress and events reach the caller's
    /// door through them too.
    pub events: Option<std::sync::Arc<crate::context::call_events::CallEvents>>,
}

/// What [`AgentRunner::run_agent`] returns: the agent's answer, or the caller's failure.
pub type AgentAnswer<'a> = Pin<Box<dyn Future<Output = Result<String, ToolFailure>> + Send + 'a>>;

/// Runs agents for callers below the host and logs finished runs (the host implements it).
pub trait AgentRunner: Send + Sync {
    /// Runs one agent; a failure is already in the words the caller reports.
    fn run_agent(&self, call: AgentCall) -> AgentAnswer<'_>;
    /// Records a run that is already over in the run log, if there is one.
    fn log_run(&self, run: &FinishedRun) -> Result<(), String>;
}

/// What a run in the run log ran: an agent, a tool called directly, or a pipeline. The log
/// keeps it as text (`NAME`, `call:TOOL`, `pipeline:NAME`), with the provider a run that is not
/// an agent's names (`direct`, `pipeline`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunKind {
    /// An agent's run.
    Agent(String),
    /// A tool called directly, by the application, a door or a person (`call:TOOL`).
    Call(String),
    /// A pipeline's run (`pipeline:NAME`).
    Pipeline(String),
}

impl RunKind {
    /// The provider the run log shows for a run that is not an agent's (`direct`,
    /// `pipeline`); `None` for an agent's, whose provider is its model's.
    pub fn provider(&self) -> Option<&'static str> {
        match self {
            RunKind::Agent(_) => None,
            RunKind::Call(_) => Some("direct"),
            RunKind::Pipeline(_) => Some("pipeline"),
        }
    }

    /// Reads the run log's text back: `call:TOOL`, `pipeline:NAME`, else an agent's name.
    pub fn parse(text: &str) -> RunKind {
        match text.split_once(':') {
            Some(("call", tool)) => RunKind::Call(tool.to_string()),
            Some(("pipeline", name)) => RunKind::Pipeline(name.to_string()),
            _ => RunKind::Agent(text.to_string()),
        }
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunKind::Agent(name) => write!(f, "{name}"),
            RunKind::Call(tool) => write!(f, "call:{tool}"),
            RunKind::Pipeline(name) => write!(f, "pipeline:{name}"),
        }
    }
}

/// A run that is over before the run log hears of it (a pipeline's), as the log keeps it.
pub struct FinishedRun {
    /// What ran.
    pub kind: RunKind,
    /// The run's id.
    pub run_id: String,
    /// What it was given (shown as the run's prompt).
    pub input: Value,
    /// The calls it made, in order.
    pub calls: Vec<FinishedCall>,
    /// How it ended.
    pub result: Result<Value, ToolFailure>,
}

/// One call of a [`FinishedRun`] (a pipeline's node).
pub struct FinishedCall {
    /// The call's id within the run (a node's name).
    pub id: String,
    /// What it called (`tool`, `agent:NAME`, `pipeline:NAME`).
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// How it ended.
    pub outcome: ToolOutcome,
}

#[cfg(test)]
mod tests {
    use super::RunKind;

    #[test]
    fn a_run_kind_reads_back_as_the_run_log_writes_it() {
        for kind in [
            RunKind::Agent("support".into()),
            RunKind::Call("greet".into()),
            RunKind::Pipeline("report".into()),
        ] {
            assert_eq!(RunKind::parse(&kind.to_string()), kind);
        }
        assert_eq!(RunKind::Call("greet".into()).to_string(), "call:greet");
        assert_eq!(RunKind::Pipeline("r".into()).provider(), Some("pipeline"));
    }
}
