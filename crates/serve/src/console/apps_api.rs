//! The console as an MCP Apps host: a tool's page, read for the caller through the same call
//! path as any read (`GET /v1/apps/{tool}`), and the calls a page makes back
//! (`POST /v1/apps/{tool}/call`), which are the console's own calls (the caller's grants,
//! approvals in the inbox, policies, the run log) limited as the extension says: only tools
//! the page may call (tools showing a page whose `visibility` holds "app") of the page's own
//! server.

use crate::body::JsonBody;
use crate::console::tools_api::{arguments, grants_for, run_call};
use crate::error::ApiError;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::{Path, State};
use base64::Engine as _;
use kiln_core::tool::Tool;
use kiln_registry::mount_spec::SEPARATOR;
use kiln_registry::served::apps::{MAX_PAGE_BYTES, MIME, page_of, visible_to};
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /v1/apps`: where the sandbox origin listens, and which tools have a page.
pub async fn list(State(state): State<Arc<AppState>>, who: Principal) -> Json<Value> {
    let grants = grants_for(&state, &who);
    let pages: serde_json::Map<String, Value> = state
        .host
        .tools()
        .iter()
        .filter(|t| grants.missing(&t.requires).is_empty())
        .filter_map(|t| {
            let uri = page_of(t)?;
            let app_only = !visible_to(t, "model");
            Some((
                t.name.clone(),
                json!({"resourceUri": uri, "app_only": app_only}),
            ))
        })
        .collect();
    Json(json!({"sandbox_port": state.sandbox_port(), "tools": pages}))
}

/// The tool `name`, when the caller may call it.
fn usable(state: &AppState, who: &Principal, name: &str) -> Result<Arc<Tool>, ApiError> {
    let tool = state
        .host
        .tool(name)
        .map_err(|_| ApiError::not_found("tool_not_found", format!("no tool named \"{name}\"")))?;
    let missing = grants_for(state, who).missing(&tool.requires);
    if !missing.is_empty() {
        let caps: Vec<String> = missing.iter().map(ToString::to_string).collect();
        return Err(ApiError::forbidden(
            "tool",
            format!(
                "tool \"{name}\" needs {} (your grants do not hold it)",
                caps.join(", ")
            ),
        ));
    }
    Ok(tool)
}

/// `GET /v1/apps/{tool}`: `{uri, html, meta, tool, sandbox_port}` — the page, the `_meta.ui`
/// of its contents (CSP, permissions), the tool as MCP lists it.
pub async fn page(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let tool = usable(&state, &who, &name)?;
    let Some(uri) = page_of(&tool).map(str::to_string) else {
        return Err(ApiError::not_found(
            "no_page",
            format!("tool \"{name}\" has no page"),
        ));
    };
    let Some(found) = state.host.registry().served().find(&uri) else {
        return Err(ApiError::not_found(
            "page_not_served",
            format!("nothing serves {uri} now"),
        ));
    };
    let opts = kiln_host::CallOptions {
        grants: Some(grants_for(&state, &who)),
        actor_id: who.actor.clone(),
        approver: Some(Arc::new(PageRead(
            found
                .reader
                .requires
                .iter()
                .map(ToString::to_string)
                .collect(),
        ))),
        ..Default::default()
    };
    let read = state
        .host
        .call_tool(&found.reader, Value::Object(found.params), opts)
        .await
        .map_err(|e| ApiError::upstream(format!("cannot read {uri}: {e}")))?;
    let value = read
        .result
        .map_err(|f| ApiError::upstream(format!("cannot read {uri}: {}", f.message)))?;
    let contents = &value[kiln_core::model::content::CONTENT_KEY][0]["resource"];
    let html = page_text(&uri, contents)?;
    Ok(Json(json!({
        "uri": uri,
        "html": html,
        "meta": contents["_meta"]["ui"].clone(),
        "tool": kiln_host::mcp::convert::tool_to_mcp(&tool),
        "sandbox_port": state.sandbox_port(),
    })))
}

/// Approves the capabilities a page's reader needs and nothing else: the caller holds them
/// (the grants are checked as for any read), and showing the page of a call a person approved
/// asks no one again; a policy's question is no page's to answer, so it is refused.
struct PageRead(Vec<String>);

impl kiln_core::context::Approver for PageRead {
    fn approve(&self, cap: &str, _question: &str) -> Result<bool, String> {
        // The label is the capability's name (`mcp`), or the whole grant (`mcp:clock`).
        Ok(self
            .0
            .iter()
            .any(|c| c == cap || c.split(':').next() == Some(cap)))
    }
}

/// The HTML of a page's contents: its text (or its base64 blob), if it is the extension's
/// type and no bigger than a page may be.
fn page_text(uri: &str, contents: &Value) -> Result<String, ApiError> {
    if contents["mimeType"].as_str() != Some(MIME) {
        let got = contents["mimeType"].as_str().unwrap_or("none");
        return Err(ApiError::upstream(format!("{uri} is {got}, not {MIME}")));
    }
    let html = match (&contents["text"], &contents["blob"]) {
        (Value::String(text), _) => text.clone(),
        (_, Value::String(blob)) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ApiError::upstream(format!("{uri}: its blob is not base64 UTF-8")))?,
        _ => {
            return Err(ApiError::upstream(format!(
                "{uri} holds neither text nor blob"
            )));
        }
    };
    if html.len() > MAX_PAGE_BYTES {
        return Err(ApiError::upstream(format!(
            "{uri} holds {} bytes; a page may hold {MAX_PAGE_BYTES}",
            html.len()
        )));
    }
    Ok(html)
}

/// The mounted server a tool comes from (`mcp:SERVER`), or none for kiln's own tools.
fn server_of(tool: &Tool) -> Option<String> {
    tool.requires
        .iter()
        .map(ToString::to_string)
        .find_map(|c| c.strip_prefix("mcp:").map(str::to_string))
}

/// `POST /v1/apps/{tool}/call` with `{"name", "arguments"}`: the page of `tool` calls `name`;
/// the answer is an MCP `CallToolResult` (with the call's run in `_meta`).
pub async fn call(
    State(state): State<Arc<AppState>>,
    who: Principal,
    Path(owner): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let owner = usable(&state, &who, &owner)?;
    if page_of(&owner).is_none() {
        let said = format!("tool \"{}\" has no page to call from", owner.name);
        return Err(ApiError::not_found("no_page", said));
    }
    let Some(name) = body["name"].as_str() else {
        return Err(ApiError::bad_request(
            "name",
            "name must be the tool to call",
        ));
    };
    let args = arguments(&body)?;
    // A mounted server's page calls its tools by the server's names (`get-time`); kiln names
    // them `SERVER__get-time`.
    let name = match server_of(&owner) {
        Some(server) if !name.starts_with(&format!("{server}{SEPARATOR}")) => {
            format!("{server}{SEPARATOR}{name}")
        }
        _ => name.to_string(),
    };
    let name = name.as_str();
    let target = usable(&state, &who, name)?;
    // A tool with no page says nothing of apps: only tools that show a page and do not leave
    // apps out of their visibility are an app's to call.
    if page_of(&target).is_none() || !visible_to(&target, "app") {
        let said = format!(
            "tool \"{name}\" is not for apps to call (it shows no page, or its visibility leaves out \"app\")"
        );
        return Err(ApiError::forbidden("name", said));
    }
    if server_of(&target) != server_of(&owner) {
        let said = format!("an app calls only its own server's tools; \"{name}\" is another's");
        return Err(ApiError::forbidden("name", said));
    }
    let (run, outcome) = run_call(&state, &who, target.clone(), args).await?;
    let declared = target.meta.output.is_some();
    let mut result =
        serde_json::to_value(kiln_host::mcp::convert::outcome_to_mcp(&outcome, declared))
            .map_err(|e| ApiError::internal(e.to_string()))?;
    result["_meta"] = json!({"kiln/run": run});
    Ok(Json(result))
}
