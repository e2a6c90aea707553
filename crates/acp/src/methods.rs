//! The connection's setup and sessions: `initialize` (the protocol version, what kiln offers,
//! that no authentication is needed), `authenticate`, `session/new` and `session/load` (a
//! kiln session from the database, its conversation replayed as `session/update`s).

use crate::error::{RpcError, code};
use crate::params;
use crate::session::Session;
use crate::state::{ClientCaps, Door};
use crate::updates;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The ACP version kiln speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Handles `initialize`: remembers the client's file system capabilities and answers kiln's.
pub fn initialize(door: &Door, params: Option<&Value>) -> Result<Value, RpcError> {
    let p = params::object(params)?;
    match p.get("protocolVersion") {
        Some(v) if v.as_u64().is_some_and(|n| n <= u64::from(u16::MAX)) => {}
        None => {
            return Err(RpcError::invalid_params(
                "protocolVersion",
                "required (an integer)",
            ));
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "protocolVersion",
                "expected an integer from 0 to 65535",
            ));
        }
    }
    // The schema reads a malformed capability as its default (x-deserialize-default-on-error).
    let fs = p
        .get("clientCapabilities")
        .and_then(|c| c.get("fs"))
        .cloned()
        .unwrap_or(Value::Null);
    let caps = ClientCaps {
        read_text_file: fs.get("readTextFile").and_then(Value::as_bool) == Some(true),
        write_text_file: fs.get("writeTextFile").and_then(Value::as_bool) == Some(true),
        terminal: p
            .get("clientCapabilities")
            .and_then(|c| c.get("terminal"))
            .and_then(Value::as_bool)
            == Some(true),
    };
    if let Ok(mut c) = door.client.lock() {
        *c = caps;
    }
    Ok(json!({
        // The latest version kiln supports, whichever the client asked for.
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": false, "sse": false},
        },
        // No authentication: the agent's provider keys come from kiln's environment.
        "authMethods": [],
        "agentInfo": {"name": "kiln", "title": "kiln", "version": env!("CARGO_PKG_VERSION")},
    }))
}

/// Handles `authenticate`: there is nothing to authenticate (no `authMethods`).
pub fn authenticate(params: Option<&Value>) -> Result<Value, RpcError> {
    let p = params::object(params)?;
    let method = params::string(p, "", "methodId")?;
    Err(RpcError {
        code: code::INVALID_PARAMS,
        message: format!(
            "Invalid params: params.methodId: \"{method}\" is not offered: kiln needs no authentication (authMethods is empty)"
        ),
        data: Some(json!({"path": "params.methodId"})),
    })
}

/// `cwd` and `mcpServers` of `session/new` and `session/load`.
fn read_setup(p: &Map<String, Value>) -> Result<String, RpcError> {
    let cwd = params::string(p, "", "cwd")?;
    if !std::path::Path::new(cwd).is_absolute() {
        return Err(RpcError::invalid_params("cwd", "must be an absolute path"));
    }
    let servers = params::array(p, "", "mcpServers", true)?;
    if !servers.is_empty() {
        tracing::warn!(
            count = servers.len(),
            "acp: the client's MCP servers are not mounted (kiln mounts the servers its scripts and --mcp name)"
        );
    }
    Ok(cwd.to_string())
}

/// Handles `session/new`: a fresh session, saved under its id once a prompt ran in it.
pub fn new_session(door: &Door, params: Option<&Value>) -> Result<Value, RpcError> {
    let p = params::object(params)?;
    let cwd = read_setup(p)?;
    let id = format!("acp-{}", uuid::Uuid::new_v4());
    door.sessions
        .insert(Arc::new(Session::new(id.clone(), cwd)));
    Ok(json!({"sessionId": id}))
}

/// Handles `session/load`: replays session `sessionId`'s conversation, then answers. A session
/// of another agent is refused; one unknown to the database and to this connection is not found.
pub fn load_session(door: &Door, params: Option<&Value>) -> Result<Value, RpcError> {
    let p = params::object(params)?;
    let id = params::string(p, "", "sessionId")?;
    let cwd = read_setup(p)?;
    if door.sessions.get(id).is_some_and(|s| s.is_running()) {
        return Err(RpcError::new(
            code::INVALID_REQUEST,
            format!("session \"{id}\" is answering a prompt"),
        ));
    }
    let saved = door
        .db
        .session(id)
        .map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
    let messages = match saved {
        Some(s) if s.agent != door.options.agent => {
            return Err(RpcError::invalid_params(
                "sessionId",
                &format!(
                    "session \"{id}\" belongs to agent \"{}\", not \"{}\"",
                    s.agent, door.options.agent
                ),
            ));
        }
        Some(s) => s.messages,
        None if door.sessions.get(id).is_some() => Vec::new(),
        None => return Err(RpcError::no_session("sessionId", id)),
    };
    // A session this connection has keeps what the person allowed always.
    if door.sessions.get(id).is_none() {
        door.sessions
            .insert(Arc::new(Session::new(id.to_string(), cwd)));
    }
    let calls = updates::Calls::for_tools(&door.host.tools());
    for update in updates::replay(&messages, &calls) {
        door.update(id, update);
    }
    Ok(json!({}))
}
