//! `KilnCall`: one tool call as a Restate workflow, which is what an MCP task is under
//! `kiln serve --restate`. The call is one journaled step: a worker that dies during it leaves
//! the step unfinished and Restate runs it again on another (with the same idempotency key,
//! the invocation id); once it finished, its result is in the journal and any worker reads it.

use super::handlers::Worker;
use kiln_core::capability::Grants;
use kiln_host::api::CallOptions;
use kiln_host::mcp::convert::outcome_to_mcp;
use restate_sdk::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// The input of `KilnCall/{key}/call`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallRequest {
    /// The tool.
    tool: String,
    /// Its arguments.
    #[serde(default)]
    args: Value,
    /// The actor (`ctx.actor_id`).
    #[serde(default)]
    actor: Option<String>,
    /// The capabilities granted by the door that took the call, cut to the worker's ceiling.
    #[serde(default)]
    caps: Vec<String>,
    /// Which of `caps` need approval (`ask` mode).
    #[serde(default)]
    ask: Vec<String>,
}

/// A tool call that survives its worker.
pub struct ToolCall(pub Arc<Worker>);

impl ToolCall {
    /// What the call may use: what it asked for, refused beyond the worker's ceiling (none
    /// without `--caps`: Restate's ingress knows no kiln tokens).
    fn grants(&self, req: &CallRequest) -> Result<Grants, TerminalError> {
        let mut asked = Grants::parse(&req.caps)
            .map_err(|e| TerminalError::new_with_code(400, format!("caps: {e}")))?;
        asked.mark_ask(&req.ask);
        let ceiling = self.0.ceiling.clone().unwrap_or_default();
        kiln_host::admission::check_within(&asked, &ceiling, "caps")
            .map_err(|e| TerminalError::new_with_code(403, e.to_string()))?;
        Ok(Grants::effective(&[Some(&ceiling), Some(&asked)]))
    }
}

#[restate_sdk::workflow(name = "KilnCall")]
impl ToolCall {
    /// Makes the call; its `CallToolResult` (a failure the tool reports is a result with
    /// `isError`, as in any MCP answer).
    #[handler]
    async fn call(
        &self,
        ctx: WorkflowContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let req: CallRequest = serde_json::from_value(input.into_inner()).map_err(|e| {
            TerminalError::new_with_code(
                400,
                format!("invalid call request: {e} (expected {{\"tool\", \"args\", \"actor\"?, \"caps\"?, \"ask\"?}})"),
            )
        })?;
        let grants = self.grants(&req)?;
        let tool = self.0.host.registry().find(&req.tool).ok_or_else(|| {
            TerminalError::new_with_code(404, format!("unknown tool \"{}\"", req.tool))
        })?;
        let structured = tool.meta.output.is_some();
        let opts = CallOptions {
            grants: Some(grants),
            actor_id: req.actor,
            idempotency_key: Some(ctx.invocation_id().to_string()),
            ..CallOptions::default()
        };
        let host = self.0.host.clone();
        let args = req.args;
        let result = ctx
            .run(move || async move {
                let outcome = host
                    .call_tool(&tool, args, opts)
                    .await
                    .map_err(|e| TerminalError::new_with_code(500, e.to_string()))?;
                let result = outcome_to_mcp(&outcome, structured);
                serde_json::to_value(result).map(Json).map_err(|e| {
                    TerminalError::new(format!("the call's result is not JSON: {e}")).into()
                })
            })
            .name("call")
            .await?;
        Ok(result)
    }
}
