//! Who a request acts for (and which session's tasks it sees) and what it may use: the
//! server's grants narrowed to the request's access token (`--auth-issuer`), the `ask` grants a
//! call relies on asked of the client, and agents offered as `ask_AGENT` tools run with what
//! both allow.

use crate::ask::{self, Approval};
use crate::server::{AGENT_PREFIX, McpServer};
use crate::tasks::durable::TaskOwner;
use kiln_agent::RunOptions;
use kiln_core::capability::Grants;
use kiln_host::api::CallOptions;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;

impl McpServer {
    /// Runs an agent for an `ask_AGENT` call; its answer, or its failure as an error result.
    pub(crate) async fn ask_agent(
        &self,
        agent: &str,
        args: &serde_json::Map<String, serde_json::Value>,
        cx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(prompt) = args.get("prompt").and_then(|p| p.as_str()) else {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "Invalid arguments for tool \"{AGENT_PREFIX}{agent}\":\n/prompt: a string is required"
            ))]);
        };
        let opts = RunOptions {
            cancel: cx.ct.clone(),
            actor_id: Self::actor(cx),
            // `--caps` is this door's ceiling: the agent runs with what both allow.
            grants: (!self.grants.is_empty()).then(|| self.grants_for(cx)),
            ..RunOptions::default()
        };
        match self.host.run(agent, prompt, opts).await {
            Ok(report) => CallToolResult::success(vec![ContentBlock::text(report.answer)]),
            Err(e) => {
                tracing::warn!(agent, "the MCP run failed: {e}");
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "agent \"{agent}\" failed: {}",
                    kiln_core::error::public::scrub(&e.to_string())
                ))])
            }
        }
    }

    /// The grants for one call of `tool`: `ask` grants it relies on are asked through the
    /// client (unless `--yes`, or a terminal will ask); `Err` is the answer to send instead.
    pub(crate) async fn approved_grants(
        &self,
        tool: &kiln_core::tool::Tool,
        req: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Grants, CallToolResponse> {
        let grants = self.grants_for(cx);
        let asked = ask::asked(tool, &grants);
        if asked.is_empty() || self.host.services().assume_yes {
            return Ok(grants);
        }
        // A refusal is logged as the call it answers, with the client as the actor.
        let refuse = |msg: String| -> CallToolResponse {
            let args = serde_json::Value::Object(req.arguments.clone().unwrap_or_default());
            let opts = CallOptions {
                grants: Some(grants.clone()),
                actor_id: Self::actor(cx),
                ..CallOptions::default()
            };
            if let Err(e) = self.host.refuse_call(&tool.name, args, opts, msg.clone()) {
                tracing::warn!(tool = %tool.name, "the refused MCP call was not logged: {e}");
            }
            CallToolResult::error(vec![ContentBlock::text(msg)]).into()
        };
        match ask::approve(&tool.name, &asked, &grants, req, cx).await {
            Approval::Approved(grants) => Ok(grants),
            Approval::Refused(msg) => Err(refuse(msg)),
            Approval::InputRequired(question) => Err(question.into()),
            // The operator's terminal asks instead (the capability gate does it).
            Approval::CannotAsk(_) if self.host.services().approver.is_some() => Ok(grants),
            Approval::CannotAsk(msg) => Err(refuse(msg)),
        }
    }

    /// The grants of a request: the server's, narrowed to the scopes of the access token it
    /// came with (`--auth-issuer`), through the same meet as every other ceiling.
    pub(crate) fn grants_for(&self, cx: &RequestContext<RoleServer>) -> Grants {
        match verified(cx) {
            Some(token) => Grants::effective(&[Some(&self.grants), Some(&token.ceiling)]),
            None => self.grants.clone(),
        }
    }

    /// Who a task started by this request belongs to: its actor and, unless the request is
    /// stateless (2026-07-28, no session), this session.
    pub(crate) fn task_owner(&self, cx: &RequestContext<RoleServer>) -> TaskOwner {
        let stateless = cx.protocol_version().is_some_and(|v| !v.has_initialize());
        TaskOwner {
            actor: Self::actor(cx),
            session: (!stateless).then(|| self.session.to_string()),
        }
    }

    /// Who an MCP call acts for: the subject of its access token, else the client's name as it
    /// introduced itself.
    pub(crate) fn actor(cx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(token) = verified(cx) {
            return Some(token.actor.clone());
        }
        cx.client_info()
            .map(|c| format!("{}{}", crate::actor::MCP_CLIENT, c.name))
    }
}

/// The access token the HTTP request came with, as the door checked it.
pub(crate) fn verified(cx: &RequestContext<RoleServer>) -> Option<&crate::issuer::Verified> {
    cx.extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<crate::issuer::Verified>()
}
