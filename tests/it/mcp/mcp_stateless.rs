//! One request of the 2026-07-28 revision (stateless: its protocol version, client and
//! capabilities in `_meta`, the routing headers SEP-2243 asks for), as the tests that talk to
//! `kiln mcp --http` or a worker's `/mcp` without a session send it.

use crate::common::http;
use serde_json::{Value, json};

/// A stateless request's answer: its HTTP status, the JSON-RPC message (from a JSON body or
/// the one message of an event stream) and the `WWW-Authenticate` header, if any.
pub struct Answer {
    pub status: u16,
    pub message: Value,
    pub challenge: Option<String>,
}

/// Sends `method` with `params` to `url` as client `client` declaring `capabilities`, with
/// `token` as its bearer when it is not empty.
pub fn request(
    url: &str,
    client: &str,
    capabilities: Value,
    token: &str,
    method: &str,
    params: Value,
) -> Answer {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_string();
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if !name.is_empty() {
        headers.push(("mcp-name", name.as_str()));
    }
    if !token.is_empty() {
        headers.push(("authorization", bearer.as_str()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, got, text) = http("POST", url, &headers, Some(&body));
    let challenge = got
        .iter()
        .find(|(k, _)| k == "www-authenticate")
        .map(|(_, v)| v.clone());
    let message = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::String(text));
    Answer {
        status,
        message,
        challenge,
    }
}

/// The capabilities of a client that takes tasks.
pub fn with_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}
