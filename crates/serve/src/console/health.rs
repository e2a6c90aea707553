//! The scripts' health for the console (`GET /v1/scripts`): the loaded files with what each
//! declares, load errors at `file:line:col`, MCP mounts, and the last reloads (which the feed
//! also sends as they happen).

use crate::feed::Audience;
use crate::state::AppState;
use crate::walls::auth::Principal;
use axum::Json;
use axum::extract::State;
use kiln_core::error::LoadError;
use kiln_host::reload::ReloadReport;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Reloads kept for `GET /v1/scripts`.
const KEEP_RELOADS: usize = 50;

fn error_json(e: &LoadError) -> Value {
    json!({
        "file": e.loc.path, "line": e.loc.line, "column": e.loc.column, "message": e.message,
    })
}

/// Sends a reload to the feed and keeps it for `GET /v1/scripts`.
pub(crate) fn announce_reload(state: &AppState, report: &ReloadReport) {
    let data = json!({
        "path": report.path,
        "ok": report.ok(),
        "errors": report.errors.iter().map(error_json).collect::<Vec<_>>(),
        "summary": report.to_string(),
        "at": crate::table::approvals::now_secs(),
    });
    {
        let mut kept = state.reloads.lock().unwrap_or_else(|e| e.into_inner());
        kept.push_back(data.clone());
        while kept.len() > KEEP_RELOADS {
            kept.pop_front();
        }
    }
    state.feed.publish("reload", Audience::Everyone, data);
}

/// What one file declares.
#[derive(Default)]
struct FileEntry {
    tools: Vec<String>,
    agents: Vec<String>,
    pipelines: Vec<String>,
    errors: Vec<Value>,
}

/// `GET /v1/scripts`: every loaded file with its tools, agents, pipelines and errors; all
/// load errors; the MCP mounts (name, where declared, state; never their command line or
/// URL, which may hold a secret); the last reloads, newest first.
pub async fn scripts(State(state): State<Arc<AppState>>, _who: Principal) -> Json<Value> {
    let registry = state.host.registry();
    let mut files: BTreeMap<String, FileEntry> = BTreeMap::new();
    for tool in registry.all() {
        let file = files.entry(tool.loc.path.clone()).or_default();
        file.tools.push(tool.name.clone());
    }
    for agent in registry.agents() {
        let file = files.entry(agent.loc.path.clone()).or_default();
        file.agents.push(agent.name.clone());
    }
    for pipeline in registry.pipelines() {
        let file = files.entry(pipeline.loc.path.clone()).or_default();
        file.pipelines.push(pipeline.name.clone());
    }
    for e in &registry.errors {
        let file = files.entry(e.loc.path.clone()).or_default();
        file.errors
            .push(json!({"line": e.loc.line, "column": e.loc.column, "message": e.message}));
    }
    let files: Vec<Value> = files
        .into_iter()
        .filter(|(path, _)| !path.is_empty())
        .map(|(path, f)| {
            json!({"path": path, "tools": f.tools, "agents": f.agents,
                   "pipelines": f.pipelines, "errors": f.errors})
        })
        .collect();
    let mcp: Vec<Value> = state
        .host
        .mcp_servers()
        .into_iter()
        .map(|m| json!({"name": m.name, "origin": m.origin, "status": m.state.to_string()}))
        .collect();
    let reloads: Vec<Value> = {
        let kept = state.reloads.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().rev().cloned().collect()
    };
    Json(json!({
        "files": files,
        "errors": registry.errors.iter().map(error_json).collect::<Vec<_>>(),
        "mcp": mcp,
        "reloads": reloads,
    }))
}
