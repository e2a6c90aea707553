//! Pipelines: tools, agents and other pipelines wired as a dependency graph, defined in the
//! same script files as tools (`pipeline("name")...`), checked at load time, run with
//! independent nodes in parallel, and offered as a tool whose parameters are its inputs.
//!
//! spec.rs: the model; check.rs: load-time checks; run.rs: the runner and its report.

pub mod check;
pub mod run;
pub mod spec;

pub use run::{NodeReport, NodeStatus, PipelineReport};
pub use spec::{Node, NodeMapper, Output, Pipeline, PipelineSpec, Target};

use crate::context::CallContext;
use crate::error::HostError;
use crate::tool::{Handler, Tool, ToolFailure};
use crate::{CallOptions, Host};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

impl Pipeline {
    /// Wraps a checked definition with the tool that runs it; `Err` when its inputs do not
    /// form a valid schema.
    pub fn new(spec: PipelineSpec) -> Result<Pipeline, String> {
        let spec = Arc::new(spec);
        let schema = crate::schema::object_schema(&spec.inputs);
        let validator = crate::tool::compile_schema(&schema)
            .map_err(|e| format!("pipeline \"{}\": invalid inputs: {e}", spec.name))?;
        let tool = Tool {
            name: spec.name.clone(),
            description: spec.description.clone(),
            schema,
            requires: spec.requires.clone(),
            exclusive: false,
            timeout: spec.timeout,
            retries: 0,
            rate_limit: None,
            loc: spec.loc.clone(),
            meta: crate::tool::ToolMeta::default(),
            validator,
            handler: Arc::new(PipelineHandler(spec.clone())),
        };
        Ok(Pipeline {
            spec,
            tool: Arc::new(tool),
        })
    }
}

/// Runs a pipeline as a tool's handler (an agent's call, `call_tool`, a `pipeline:` node);
/// with a database the run is logged like one of [`Host::run_pipeline`].
struct PipelineHandler(Arc<PipelineSpec>);

impl Handler for PipelineHandler {
    fn call(
        &self,
        tool: &Tool,
        args: &Value,
        ctx: &CallContext,
        deadline: Instant,
    ) -> Result<Value, ToolFailure> {
        let host = ctx.host.as_ref().and_then(std::sync::Weak::upgrade);
        let spec = self.0.clone();
        let mut inner = ctx.clone();
        inner.deadline = Some(deadline);
        let args = args.clone();
        let future = Box::pin(async move {
            let report = run::run(host.as_deref(), &spec, args, &inner).await;
            if let Some(db) = host.as_ref().and_then(|h| h.db.as_ref()) {
                log(db, &report).map_err(|e| {
                    ToolFailure::sanitized(crate::tool::FailureKind::Runtime, e.to_string())
                })?;
            }
            report.result()
        });
        crate::running::drive(future, deadline, ctx, &tool.name)
    }
}

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
        let (ctx, watcher) = self.call_context(opts);
        let report = match pipeline.tool.admit(&inputs, &ctx) {
            Err(why) => PipelineReport::refused(&pipeline.spec, &ctx.run_id, inputs, why),
            Ok(()) => run::run(Some(self), &pipeline.spec, inputs, &ctx).await,
        };
        if let Some(w) = watcher {
            w.abort();
        }
        if let Some(db) = &self.db {
            // A run the log could not keep is an error, as for agent runs.
            log(db, &report).map_err(|e| HostError::Database {
                path: db.path().display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(report)
    }
}

/// Logs a pipeline run as a run of `pipeline:NAME` whose tool calls are its nodes.
fn log(db: &Arc<crate::db::Db>, report: &PipelineReport) -> Result<(), crate::agent::RecordError> {
    use crate::agent::RunReport;
    use crate::provider::Message;
    let mut run = RunReport::new(
        &format!("pipeline:{}", report.pipeline),
        vec![Message::User {
            content: report.inputs.to_string(),
        }],
    );
    run.run_id = report.run_id.clone();
    run.provider = "pipeline".into();
    run.model = report.pipeline.clone();
    run.tool_calls = report.tool_calls();
    match report.result() {
        Ok(v) => run.answer = v.to_string(),
        Err(f) => run.error = Some(f.message),
    }
    crate::db::runlog::log_finished(db, &run)
}
