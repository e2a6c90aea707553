//! Deferred tools (`kiln mcp --defer PATTERN`, progressive discovery): `tools/list` offers the
//! tools not deferred and a `search_tools` tool; the deferred tools a session's searches found
//! join that session's list, and the client hears `notifications/tools/list_changed`. A
//! deferred tool is callable by name all along (grants do not change with deferral): it takes
//! the path of every call (validation, the guard, approvals, the run log).

use crate::server::McpServer;
use kiln_core::capability::Grants;
use kiln_core::context::CallContext;
use kiln_core::tool::Tool;
use kiln_core::tool::meta::Hints;
use kiln_registry::native::NativeTool;
use kiln_registry::served::apps::visible_to_model;
use kiln_registry::tool_search;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The search tool's name.
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
/// How many tools one search answers at most.
const MAX_FOUND: usize = 5;
/// How many found tools a session keeps at most (its list stops growing past them; the
/// others stay callable by name).
const MAX_KEPT: usize = 1024;

/// The deferred tools one session's searches found, by name.
pub(crate) type Found = Arc<Mutex<BTreeSet<String>>>;

fn names(found: &Found) -> BTreeSet<String> {
    found.lock().map(|f| f.clone()).unwrap_or_default()
}

/// Keeps `new` in `found` (up to [`MAX_KEPT`] names).
fn keep<'a>(found: &Found, new: impl Iterator<Item = &'a str>) {
    let Ok(mut found) = found.lock() else {
        return;
    };
    for name in new {
        if found.len() >= MAX_KEPT {
            break;
        }
        found.insert(name.to_string());
    }
}

impl McpServer {
    /// Whether `name` is deferred on this server.
    fn is_deferred(&self, name: &str) -> bool {
        tool_search::deferred(&self.defer, name)
    }

    /// What `tools/list` offers of `tools`: the tools not deferred and those this session
    /// found, in registry order, then `search_tools` while a deferred tool is left to find.
    pub(crate) fn undeferred(&self, tools: Vec<Arc<Tool>>) -> Vec<Arc<Tool>> {
        if self.defer.is_empty() {
            return tools;
        }
        let known = names(&self.found);
        let (later, mut now): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .partition(|t| self.is_deferred(&t.name) && !known.contains(&t.name));
        let searchable = later.iter().any(|t| visible_to_model(t));
        if searchable && now.iter().all(|t| t.name != SEARCH_TOOLS) {
            now.extend(search_tool(Vec::new(), later.len(), Found::default()));
        }
        now
    }

    /// The search tool a call of `name` runs under `grants`: `None` unless tools are deferred,
    /// `name` is `search_tools` and no tool has that name. Its searches are kept for the
    /// session, except on a stateless (2026-07-28) request, which has none.
    pub(crate) fn search_tool_for(
        &self,
        name: &str,
        grants: &Grants,
        cx: &RequestContext<RoleServer>,
    ) -> Option<Arc<Tool>> {
        if self.defer.is_empty() || name != SEARCH_TOOLS {
            return None;
        }
        let deferred: Vec<Arc<Tool>> = self
            .tools_for(grants)
            .into_iter()
            .filter(|t| self.is_deferred(&t.name) && visible_to_model(t))
            .collect();
        let found = match Self::stateless(cx) {
            true => Found::default(),
            false => self.found.clone(),
        };
        let count = deferred.len();
        search_tool(deferred, count, found)
    }

    /// Whether `cx` is a 2026-07-28 request, outside any session.
    fn stateless(cx: &RequestContext<RoleServer>) -> bool {
        cx.protocol_version().is_some_and(|v| !v.has_initialize())
    }

    /// How many tools this session found so far.
    pub(crate) fn found_count(&self) -> usize {
        self.found.lock().map(|f| f.len()).unwrap_or(0)
    }

    /// Tells the session's client its tool list changed when a search found tools it had not
    /// (a session's own change: other sessions' lists stay as they are).
    pub(crate) async fn announce_found(&self, before: usize, cx: &RequestContext<RoleServer>) {
        if self.found_count() > before
            && !Self::stateless(cx)
            && let Err(e) = cx.peer.notify_tool_list_changed().await
        {
            tracing::debug!("list_changed was not sent to the MCP client: {e}");
        }
    }

    /// A deferred tool as MCP shows it, found or not: `get_tool` looks a called tool up there
    /// (rmcp checks a call's `Mcp-Param-*` headers against its schema).
    pub(crate) fn deferred_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        if !self.is_deferred(name) {
            return None;
        }
        self.tools_for(&self.grants)
            .into_iter()
            .find(|t| t.name == name)
            .map(|t| kiln_host::mcp::convert::tool_to_mcp(&t))
    }
}

/// The `search_tools` tool over `deferred` (empty when only listed), keeping what it
/// finds in `found`.
fn search_tool(deferred: Vec<Arc<Tool>>, count: usize, found: Found) -> Option<Arc<Tool>> {
    let search = NativeTool::new(SEARCH_TOOLS, move |args: Value, _ctx: &CallContext| {
        let query = args["query"].as_str().unwrap_or_default();
        let hits = tool_search::rank(&deferred, query, MAX_FOUND);
        keep(&found, hits.iter().map(|t| t.name.as_str()));
        let tools: Vec<Value> = hits
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.schema}))
            .collect();
        let note = match tools.is_empty() {
            true => "no tool matched: try other words",
            false => "the tools found are callable by name now (and listed in tools/list for this session)",
        };
        let answer = json!({"tools": tools, "note": note});
        async move { Ok(answer) }
    })
    .description(format!(
        "Finds tools by what they do: {count} more tools are available than listed. Give words from the task; answers up to {MAX_FOUND} tools' names, descriptions and input schemas, which can be called next"
    ))
    .param("query", "string", json!({"desc": "words describing the tool you need"}))
    // It only reads the list of tools, whatever the tools themselves may do.
    .hints(Hints {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    });
    match search.into_tool() {
        Ok(tool) => Some(Arc::new(tool)),
        Err(e) => {
            tracing::error!("the search_tools tool could not be built: {e:?}");
            None
        }
    }
}
