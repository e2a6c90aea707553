//! The host's side of pipelines and agent runs: looking pipelines up and running them, and the
//! two seams the lower layers reach the host through: [`AgentRunner`] (a pipeline's agent
//! nodes, its run log) and [`RunHost`] (what the loop needs).

use crate::{CallOptions, Host, RunOptions};
use kiln_agent::{RunErrorKind, RunHost, record::runlog};
use kiln_core::capability::Grants;
use kiln_core::context::CallContext;
use kiln_core::context::runner::{AgentAnswer, AgentCall, AgentRunner, FinishedRun};
use kiln_core::error::HostError;
use kiln_core::failure::{FailureKind, ToolFailure};
use kiln_pipeline::{Pipeline, PipelineReport, PipelineSpec, run};
use kiln_registry::Registry;
use kiln_registry::agent_spec::AgentSpec;
use serde_json::Value;
use std::sync::Arc;

use std::time::Instant;
use tokio_util::sync::CancellationToken;

impl Host {
    /// Every loaded pipeline, in load order.
    pub fn pipelines(&self) -> Vec<Arc<PipelineSpec>> {
        self.registry().pipelines().cloned().collect()
    }

    /// Looks up a pipeline or says which ones exist.
    pub fn pipeline(&self, name: &str) -> Result<Pipeline, HostError> {
        let reg = self.registry();
        reg.pipeline(name).ok_or_else(|| {
            let known: Vec<String> = reg.pipelines().map(|p| p.name.clone()).collect();
            HostError::UnknownPipeline {
                name: name.to_string(),
                known: if known.is_empty() {
                    "(none)".into()
                } else {
                    known.join(", ")
                },
            }
        })
    }

    /// Runs pipeline `name` on `inputs` (an object of its inputs): validated and guarded like a
    /// call of its tool, then every node through the normal path under the pipeline's grants.
    /// With a database the run is logged, one tool call per node. `Err` only for an unknown
    /// pipeline; a refused or failed run is in the report.
    pub async fn run_pipeline(
        &self,
        name: &str,
        inputs: Value,
        opts: CallOptions,
    ) -> Result<PipelineReport, HostError> {
        let pipeline = self.pipeline(name)?;
        let ctx = self.call_context(&opts);
        let report = match pipeline.tool.admit(&inputs, &ctx) {
            Err(why) => PipelineReport::refused(&pipeline.spec.name, &ctx.who.run_id, inputs, why),
            Ok(_) => run::run(Some(self), &pipeline.spec, inputs, &ctx).await,
        };
        if let Some(db) = self.database() {
            // A run the log could not keep is an error, as for agent runs.
            runlog::log_finished_run(db, &report.finished())
                .map_err(|e| HostError::RunLog(e.to_string()))?;
        }
        Ok(report)
    }
}

impl AgentRunner for Host {
    fn run_agent(&self, call: AgentCall) -> AgentAnswer<'_> {
        Box::pin(async move {
            // The agent's run ends when the pipeline's is cancelled (and not the other way).
            let cancel = call
                .cancel
                .map_or_else(CancellationToken::new, |c| c.token().child_token());
            let opts = RunOptions {
                grants: Some(call.grants),
                context: call.context,
                actor_id: call.actor_id,
                timeout: Some(call.deadline.saturating_duration_since(Instant::now())),
                cancel,
                depth: call.depth,
                parent: call.parent,
                // The door's person decides the nested run's approvals, as the caller's.
                approver: call.approver,
                tool_events: call.events,
                ..RunOptions::default()
            };
            let result = self.run(&call.agent, &call.prompt, opts).await;
            let name = &call.agent;
            match result {
                Ok(report) => Ok(report.answer),
                Err(e) => Err(match e.kind {
                    RunErrorKind::Capability(m) => ToolFailure::visible(FailureKind::Capability, m),
                    RunErrorKind::Cancelled => {
                        ToolFailure::visible(FailureKind::Cancelled, "the agent run was cancelled")
                    }
                    RunErrorKind::Deadline => ToolFailure::visible(
                        FailureKind::Deadline,
                        "the agent run passed its deadline",
                    ),
                    other => ToolFailure::sanitized(
                        FailureKind::ToolError,
                        format!("agent \"{name}\" failed: {other}"),
                    ),
                }),
            }
        })
    }

    fn log_run(&self, run: &FinishedRun) -> Result<(), String> {
        match self.database() {
            Some(db) => runlog::log_finished_run(db, run).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

impl RunHost for Host {
    fn registry(&self) -> Arc<Registry> {
        Host::registry(self)
    }

    fn agent(&self, name: &str) -> Result<Arc<AgentSpec>, HostError> {
        Host::agent(self, name)
    }

    fn context(&self, grants: Grants) -> CallContext {
        Host::context(self, grants)
    }

    fn provider_defaults(&self) -> kiln_agent::connect::ProviderDefaults {
        self.config.providers.clone()
    }
}
