//! Pipelines: tools, agents and other pipelines wired as a dependency graph, defined in the
//! same script files as tools (`pipeline("name")...`), checked at load time, run with
//! independent nodes in parallel, and offered as a tool whose parameters are its inputs.
//!
//! spec.rs: the model; check.rs: load-time checks; run.rs: the runner; report.rs: its report;
//! telemetry.rs: its spans. Agent nodes and the run log are reached through the core's
//! [`kiln_core::context::runner::AgentRunner`], which the host implements.
//!
//! May depend on: kiln-core.

#![warn(missing_docs)]

pub mod check;
pub mod report;
pub mod run;
pub mod spec;
pub mod telemetry;

pub use report::{NodeReport, NodeStatus, PipelineReport};
pub use spec::{Node, NodeMapper, Output, Pipeline, PipelineSpec, Target};

use kiln_core::context::CallContext;
use kiln_core::tool::parts::ToolParts;
use kiln_core::tool::{Handler, Tool, ToolFailure};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

impl Pipeline {
    /// Wraps a checked definition with the tool that runs it; `Err` when its inputs do not
    /// form a valid schema.
    pub fn new(spec: PipelineSpec) -> Result<Pipeline, String> {
        Self::build(Arc::new(spec), Default::default())
    }

    /// The same pipeline offered with `hints` (what it reaches, known once everything it
    /// calls is loaded).
    pub fn with_hints(&self, hints: kiln_core::tool::Hints) -> Result<Pipeline, String> {
        Self::build(self.spec.clone(), hints)
    }

    fn build(spec: Arc<PipelineSpec>, hints: kiln_core::tool::Hints) -> Result<Pipeline, String> {
        let parts = ToolParts {
            name: spec.name.clone(),
            description: spec.description.clone(),
            requires: spec.requires.iter().map(ToString::to_string).collect(),
            schema: kiln_core::schema::object_schema(&spec.inputs),
            output_schema: None,
            exclusive: false,
            timeout: spec.timeout,
            retries: 0,
            rate_limit: None,
            loc: spec.loc.clone(),
            title: None,
            hints,
            task: None,
            handler: Arc::new(PipelineHandler(spec.clone())),
        };
        let tool = parts.build().map_err(|problems| {
            let said: Vec<String> = problems.into_iter().map(|(_, m)| m).collect();
            format!(
                "pipeline \"{}\": invalid inputs: {}",
                spec.name,
                said.join("; ")
            )
        })?;
        Ok(Pipeline {
            spec,
            tool: Arc::new(tool),
        })
    }
}

/// Runs a pipeline as a tool's handler (an agent's call, `call_tool`, a `pipeline:` node);
/// the host's [`kiln_core::context::runner::AgentRunner`] logs the run, as it logs one the application starts.
struct PipelineHandler(Arc<PipelineSpec>);

impl Handler for PipelineHandler {
    fn call(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        let runner = ctx.run.agents.as_ref().and_then(std::sync::Weak::upgrade);
        let spec = self.0.clone();
        let mut inner = ctx.clone();
        inner.run.deadline = Some(deadline);
        let args = args.clone();
        let future = Box::pin(async move {
            let report = run::run(runner.as_deref(), &spec, args, &inner).await;
            if let Some(runner) = &runner {
                runner.log_run(&report.finished()).map_err(|e| {
                    ToolFailure::sanitized(kiln_core::tool::FailureKind::Runtime, e)
                })?;
            }
            report.result()
        });
        kiln_core::tool::running::drive(future, deadline, ctx, &tool.name)
    }
}
