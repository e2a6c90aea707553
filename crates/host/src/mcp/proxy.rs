//! A mounted server's tools as registry tools: listed from the server, each a native tool
//! named `SERVER__TOOL` under `mcp:SERVER` that forwards its validated arguments through the
//! server's live connection.

use super::McpError;
use super::convert::result_from_mcp;
use super::sink::SourceSink;
use kiln_core::error::SourceLoc;
use kiln_core::tool::{FailureKind, Hints, ToolFailure};
use kiln_registry::mount_spec::{MountSpec, SEPARATOR};
use kiln_registry::native::{NativeTool, native_source};
use rmcp::model::CallToolRequestParams;
use rmcp::{Peer, RoleClient};
use serde_json::Value;

pub(super) use super::state::Slot;

/// Lists the server's tools and swaps them into the host's registry; how many there are.
pub(super) async fn install(
    host: &dyn SourceSink,
    spec: &MountSpec,
    slot: &Slot,
    peer: &Peer<RoleClient>,
) -> Result<usize, McpError> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| match e.auth_challenge() {
            Some(challenge) => super::oauth::challenged_in(spec, &host.workspace(), challenge),
            None => McpError::Server {
                server: spec.name.clone(),
                message: format!("tools/list failed: {e}"),
            },
        })?;
    super::recorded::save(&host.workspace(), spec, &tools);
    let natives: Vec<NativeTool> = tools.iter().map(|t| proxy(spec, slot, t)).collect();
    let count = natives.len();
    let mut file = native_source(natives);
    file.path = spec.source_path();
    file.origin = kiln_registry::Origin::Mcp;
    // Its resources and prompts are served on too; a server whose lists fail still mounts
    // its tools (said in the log).
    match super::served_proxy::list(spec, slot, peer).await {
        Ok(served) => file.served = served,
        Err(e) => {
            tracing::warn!(server = %spec.name, "{e}; its resources and prompts are not served")
        }
    }
    host.set_source(file);
    Ok(count)
}

/// A registry tool forwarding validated arguments to the server's tool, through whichever
/// connection is live when it is called.
pub(super) fn proxy(spec: &MountSpec, slot: &Slot, tool: &rmcp::model::Tool) -> NativeTool {
    let remote = tool.name.to_string();
    let (server, slot) = (spec.name.clone(), slot.clone());
    let forward = remote.clone();
    let mount = spec.clone();
    let native = NativeTool::new(
        format!("{}{SEPARATOR}{remote}", spec.name),
        move |args, ctx: &kiln_core::context::CallContext| {
            let peer = slot.read().ok().and_then(|p| p.clone());
            let (server, remote) = (server.clone(), forward.clone());
            let approve = approver(ctx);
            let spec = mount.clone();
            // The server continues this call's trace (MCP carries it in `_meta`).
            let trace = kiln_otel::context::current_entries();
            async move {
                let Some(peer) = peer else {
                    return Err(ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" is not running (kiln is restarting it); try again shortly"),
                    ));
                };
                let mut req = CallToolRequestParams::new(remote.clone());
                if let Value::Object(map) = args {
                    req = req.with_arguments(map);
                }
                if !trace.is_empty() {
                    let meta: serde_json::Map<String, Value> = (trace.into_iter())
                        .map(|(k, v)| (k.to_string(), Value::String(v)))
                        .collect();
                    req.meta = Some(meta.into());
                }
                call(&peer, &spec, req, &approve).await.map_err(|e| {
                    ToolFailure::visible(
                        FailureKind::ToolError,
                        format!("MCP server \"{server}\" did not answer the call of {remote}: {e}"),
                    )
                })
                .and_then(result_from_mcp)
            }
        },
    )
    .description(tool.description.as_deref().unwrap_or_default())
    .input_schema(Value::Object((*tool.input_schema).clone()))
    .requires(&spec.capability())
    .hints(hints_of(tool))
    .located(
        spec.declared
            .clone()
            .unwrap_or_else(|| SourceLoc::new(&spec.source_path(), 0, 0)),
    );
    let native = match tool
        .title
        .as_ref()
        .or(tool.annotations.as_ref().and_then(|a| a.title.as_ref()))
    {
        Some(title) => native.title(title.clone()),
        None => native,
    };
    let native = match spec.rate_limit {
        Some(limit) => native.rate_limit(limit),
        None => native,
    };
    apps_meta(tool).fold(native, |n, (key, value)| n.meta_entry(key, value.clone()))
}

/// The server's MCP Apps keys of `_meta` (its page and who may call it), kept on the proxy so
/// kiln's console shows the page and its agents keep a page-only tool from the model.
fn apps_meta(tool: &rmcp::model::Tool) -> impl Iterator<Item = (&str, &Value)> {
    tool.meta
        .iter()
        .flat_map(|m| m.0.iter())
        .filter(|(key, _)| matches!(key.as_str(), "ui" | "ui/resourceUri"))
        .map(|(key, value)| (key.as_str(), value))
}

/// How many input-required rounds a call may take before kiln gives up on it.
const MAX_ROUNDS: usize = 8;

/// Calls the tool, answering the questions of input-required results (the form defaults a
/// person approved; no roots) and sending the server's `requestState` back unchanged.
async fn call(
    peer: &Peer<RoleClient>,
    spec: &MountSpec,
    mut req: CallToolRequestParams,
    approve: &super::client_asks::Approve,
) -> Result<rmcp::model::CallToolResult, String> {
    use rmcp::model::CallToolResponse;
    let server = spec.name.as_str();
    for _ in 0..MAX_ROUNDS {
        let reply =
            peer.call_tool_once(req.clone())
                .await
                .map_err(|e| match e.auth_challenge() {
                    Some(challenge) => match super::oauth::challenged(spec, challenge) {
                        McpError::Unauthorized { message, .. } => message,
                        other => other.to_string(),
                    },
                    None => e.to_string(),
                })?;
        match reply {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::InputRequired(asked) => {
                let mut answers = rmcp::model::InputResponses::new();
                for (key, request) in asked.input_requests.iter().flatten() {
                    let answer = super::client_asks::answer(server, request, approve)?;
                    answers.insert(key.clone(), answer);
                }
                req.input_responses = (!answers.is_empty()).then_some(answers);
                req.request_state = asked.request_state;
            }
            _ => {
                return Err(
                    "it answered with a task, which kiln does not poll for a mounted server".into(),
                );
            }
        }
    }
    Err(format!(
        "it still asked for input after {MAX_ROUNDS} rounds"
    ))
}

/// Who approves a mounted server's questions during this call: the caller's asker (a door's
/// person), else the host's approver.
fn approver(ctx: &kiln_core::context::CallContext) -> super::client_asks::Approve {
    let (asker, services) = (ctx.approval.approver.clone(), ctx.run.services.clone());
    std::sync::Arc::new(move |cap, question| match &asker {
        _ if services.assume_yes => true,
        Some(approver) => approver.approve(cap, question).unwrap_or(false),
        None => services.approve(cap, question),
    })
}

/// The server's own annotations, passed on (what it leaves out is derived as for any tool).
fn hints_of(tool: &rmcp::model::Tool) -> Hints {
    let a = tool.annotations.clone().unwrap_or_default();
    Hints {
        read_only: a.read_only_hint,
        destructive: a.destructive_hint,
        idempotent: a.idempotent_hint,
        open_world: a.open_world_hint,
    }
}
