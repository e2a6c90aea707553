//! What `tools/list` offers a client: the tools its grants cover (or, in code mode, the two
//! tools that program them), the agents as `ask_AGENT`, and MCP Apps' visibility: a tool only
//! its page may call (`visibility: ["app"]`) is listed only to a client that shows pages, whose
//! host keeps it from its model; deferred tools (`--defer`, [`deferred`]) only once a
//! session's search finds them.

pub(crate) mod deferred;

use crate::server::{AGENT_PREFIX, McpServer};
use kiln_core::capability::Grants;
use kiln_host::mcp::convert::{agent_to_mcp, tool_to_mcp};
use kiln_registry::served::apps::{EXTENSION, MIME, visible_to_model};
use rmcp::RoleServer;
use rmcp::model::{ExtensionCapabilities, Tool};
use rmcp::service::RequestContext;
use std::sync::Arc;

impl McpServer {
    /// The extensions kiln declares beside the tasks extension: MCP Apps.
    pub(crate) fn apps_extension() -> ExtensionCapabilities {
        let mut out = ExtensionCapabilities::new();
        let mut apps = rmcp::model::JsonObject::new();
        apps.insert("mimeTypes".into(), serde_json::json!([MIME]));
        out.insert(EXTENSION.into(), apps);
        out
    }

    /// Whether the client declared MCP Apps with kiln's page type (or no types at all).
    pub(crate) fn shows_apps(cx: &RequestContext<RoleServer>) -> bool {
        let caps = cx.client_capabilities();
        let Some(settings) = caps
            .as_ref()
            .and_then(|c| c.extensions.as_ref()?.get(EXTENSION))
        else {
            return false;
        };
        match settings.get("mimeTypes").and_then(|m| m.as_array()) {
            Some(types) => types.iter().any(|t| t.as_str() == Some(MIME)),
            None => true,
        }
    }

    /// `result` linked to `tool`'s page in its `_meta.ui.resourceUri` too (as ChatGPT's Apps SDK
    /// reads it from a result), when the tool shows one.
    pub(crate) fn link_page(
        tool: &kiln_core::tool::Tool,
        mut result: rmcp::model::CallToolResult,
    ) -> rmcp::model::CallToolResult {
        if let Some(uri) = kiln_registry::served::apps::page_of(tool) {
            let meta = result.meta.get_or_insert_with(Default::default);
            meta.0
                .insert("ui".into(), serde_json::json!({ "resourceUri": uri }));
        }
        result
    }

    /// What `tools/list` offers for the tools: themselves (the deferred ones once found, and
    /// `search_tools`), or in code mode the two tools that program them (over what the model
    /// may call).
    pub(crate) fn offered(&self, grants: &Grants) -> Vec<Arc<kiln_core::tool::Tool>> {
        let tools = self.tools_for(grants);
        if !self.code_mode {
            return self.undeferred(tools);
        }
        let tools: Vec<_> = tools.into_iter().filter(|t| visible_to_model(t)).collect();
        let mode = kiln_registry::agent_spec::CodeMode::default();
        let mut code = kiln_script::program::code_mode::code_tools(&tools, &mode);
        if code
            .iter()
            .all(|t| t.name != kiln_script::program::code_mode::SEARCH_TOOLS)
        {
            code.extend(kiln_script::program::code_mode::search_tool(&tools));
        }
        code
    }

    /// Everything listed: the tools (those only a page may call when the client shows
    /// `apps`), then (with agents on) `ask_AGENT` for each agent whose name does not collide
    /// with a tool.
    pub(crate) fn listing(&self, grants: &Grants, apps: bool) -> Vec<Tool> {
        let tools = self.offered(grants);
        let mut out: Vec<Tool> = tools
            .iter()
            .filter(|t| apps || visible_to_model(t))
            .map(|t| tool_to_mcp(t))
            .collect();
        if self.agents {
            for agent in self.host.registry().agents() {
                let name = format!("{AGENT_PREFIX}{}", agent.name);
                if out.iter().all(|t| t.name != name) {
                    out.push(agent_to_mcp(&name, &agent.name, &agent.description));
                }
            }
        }
        out
    }
}
