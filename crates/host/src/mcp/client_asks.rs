//! What kiln answers when a mounted server asks its client something, during a call (a
//! 2025-11-25 request) or in an input-required result (2026-07-28, whose `requestState` goes
//! back unchanged): a form is accepted with the values its fields default to once a person
//! approves (the terminal, `--yes`, or the caller's approver), else declined; kiln lists no
//! roots and lends no model for sampling.

// Sampling and roots are deprecated by SEP-2577 (after 2026-07-28), which still asks for them.
#![allow(deprecated)]

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, ListRootsResult,
};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Asks a person `(capability, question) -> approved`.
pub type Approve = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// The answer to a form server `server` asks kiln to fill.
pub fn form(server: &str, params: &ElicitRequestParams, approve: &Approve) -> ElicitResult {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = params
    else {
        // A URL to visit needs a person at a browser: not something kiln does for a tool.
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let question =
        format!("MCP server \"{server}\" asks: {message} (kiln answers with the form's defaults)");
    if !approve(&format!("mcp:{server}"), &question) {
        return ElicitResult::new(ElicitationAction::Decline);
    }
    let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
    let defaults: Map<String, Value> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, field)| Some((name.clone(), field.get("default")?.clone())))
        .collect();
    ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(defaults))
}

/// The answer to one question of an input-required result, as its `inputResponses` entry.
pub fn answer(server: &str, request: &InputRequest, approve: &Approve) -> Result<Value, String> {
    match request {
        InputRequest::Elicitation(r) => {
            serde_json::to_value(form(server, &r.params, approve)).map_err(|e| e.to_string())
        }
        InputRequest::ListRoots(_) => {
            serde_json::to_value(ListRootsResult::new(Vec::new())).map_err(|e| e.to_string())
        }
        InputRequest::CreateMessage(_) => Err(format!(
            "MCP server \"{server}\" asked kiln's model to write (sampling): kiln lends no model to a mounted server"
        )),
        _ => Err(format!(
            "MCP server \"{server}\" asked kiln something it does not know"
        )),
    }
}
