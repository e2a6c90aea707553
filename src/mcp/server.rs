//! The MCP server: the registry's tools, as the grants allow, listed and called through
//! [`Host::call`]; a reload is announced to every client that asked (both revisions).

use super::McpError;
use super::convert::{outcome_to_mcp, tool_to_mcp};
use crate::Host;
use crate::api::CallOptions;
use crate::capability::Grants;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Serves a host's tools over MCP. Cheap to clone: the HTTP transport makes one per session
/// and per stateless request, all sharing the host and the reload signal.
#[derive(Clone)]
pub struct McpServer {
    host: Arc<Host>,
    grants: Grants,
    changed: broadcast::Sender<()>,
}

impl McpServer {
    /// A server offering the tools `grants` cover (the same grants apply to every call).
    pub fn new(host: Arc<Host>, grants: Grants) -> Self {
        let (changed, _) = broadcast::channel(16);
        McpServer {
            host,
            grants,
            changed,
        }
    }

    /// Tells every client that asked that the tool list changed (after a reload).
    pub fn notify_tools_changed(&self) {
        let _ = self.changed.send(());
    }

    /// The tools offered now, in registry order (stdlib, native, then scripts by path).
    pub fn tools(&self) -> Vec<Arc<crate::tool::Tool>> {
        let ctx = self.host.context(self.grants.clone());
        self.host.registry().available(None, &ctx)
    }

    /// Serves one client on stdin/stdout until it disconnects. Nothing else may write to
    /// stdout meanwhile (logs go to stderr).
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        Ok(())
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("kiln", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _page: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Tool> = self.tools().iter().map(|t| tool_to_mcp(t)).collect();
        // ttl 0: caching clients refetch after a reload instead of serving a stale list.
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools()
            .iter()
            .find(|t| t.name == name)
            .map(|t| tool_to_mcp(t))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = req.name.to_string();
        if self.host.registry().find(&name).is_none() {
            // invalid_params, not method_not_found: the latter becomes an HTTP 404 on 2026.
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool \"{name}\": kiln has no such tool loaded now (a reload may have removed it); tools/list shows the current ones"
                ),
                None,
            ));
        }
        let args = serde_json::Value::Object(req.arguments.unwrap_or_default());
        let opts = CallOptions {
            grants: Some(self.grants.clone()),
            actor_id: cx.client_info().map(|c| format!("mcp:{}", c.name)),
            cancel: Some(cx.ct.clone()),
            ..CallOptions::default()
        };
        let outcome = self
            .host
            .call(&name, args, opts)
            .await
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        if let Err(f) = &outcome.result {
            tracing::info!(tool = %name, kind = f.kind.as_str(), detail = ?f.detail, "MCP call failed");
        }
        Ok(outcome_to_mcp(&outcome).into())
    }

    // 2025-11-25 sessions get unscoped list_changed through their own peer. 2026 requests
    // never reach here, so they only hear of reloads on a `subscriptions/listen` stream.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let mut rx = self.changed.subscribe();
        let peer = cx.peer.clone();
        tokio::spawn(async move {
            while changed(&mut rx).await {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        let mut rx = self.changed.subscribe();
        loop {
            tokio::select! {
                () = cx.cancelled() => return Ok(()),
                more = changed(&mut rx) => {
                    if !more || cx.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Waits for the next reload; false once the server is gone. Reloads missed while the
/// client was slow still count as one change (the client refetches the whole list anyway).
async fn changed(rx: &mut broadcast::Receiver<()>) -> bool {
    !matches!(rx.recv().await, Err(broadcast::error::RecvError::Closed))
}
