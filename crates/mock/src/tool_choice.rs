//! The checks each service makes of a request's tool choice (`tool_choice`,
//! `parallel_tool_calls`, Gemini's `toolConfig.functionCallingConfig`, Converse's
//! `toolConfig.toolChoice`): the shapes it takes, a choice only where tools are offered, a
//! forced tool that is one of them. The status, error shape and the field named are the
//! services'; where their exact wording is not known, the message is kiln-mock's own.

use super::errors::Refusal;
use super::errors::{Rejection, anthropic_error, openai_error};
use super::errors::{field, gemini_error};
use serde_json::Value;

/// The names of the tools offered, read at `name` in each of `tools`.
fn names<'v>(tools: &'v Value, name: &[&str]) -> Vec<&'v str> {
    let at = |t: &'v Value| name.iter().fold(t, |v, key| &v[*key]);
    (tools.as_array().into_iter().flatten())
        .filter_map(|t| at(t).as_str())
        .collect()
}

/// OpenAI's refusal of a field sent without `tools`.
fn openai_without_tools(param: &str) -> Rejection {
    openai_error(
        400,
        format!(
            "Invalid value for '{param}': '{param}' is only allowed when 'tools' are specified."
        ),
        Some(param),
        None,
    )
}

/// OpenAI's refusal of a named tool that is not offered.
fn openai_unknown_tool(name: &str) -> Rejection {
    openai_error(
        400,
        format!("Invalid value for 'tool_choice': no function named '{name}' is in 'tools'."),
        Some("tool_choice"),
        Some("invalid_value"),
    )
}

/// `parallel_tool_calls`: a boolean, with tools.
fn openai_parallel(body: &Value, offered: bool) -> Result<(), Rejection> {
    match &body["parallel_tool_calls"] {
        Value::Null => Ok(()),
        Value::Bool(_) if offered => Ok(()),
        Value::Bool(_) => Err(openai_without_tools("parallel_tool_calls")),
        _ => Err(openai_error(
            400,
            "Invalid type for 'parallel_tool_calls': expected a boolean.",
            Some("parallel_tool_calls"),
            Some("invalid_type"),
        )),
    }
}

/// Chat Completions: `"none"`, `"auto"`, `"required"` or
/// `{"type": "function", "function": {"name"}}` naming a tool offered (the spec's
/// `allowed_tools` and `custom` choices pass).
pub fn openai(body: &Value) -> Result<(), Rejection> {
    let offered = names(&body["tools"], &["function", "name"]);
    openai_parallel(body, !offered.is_empty())?;
    let choice = &body["tool_choice"];
    if choice.is_null() {
        return Ok(());
    }
    if offered.is_empty() {
        return Err(openai_without_tools("tool_choice"));
    }
    match (choice.as_str(), choice["type"].as_str()) {
        (Some("none" | "auto" | "required"), _) => Ok(()),
        (None, Some("function")) => match choice["function"]["name"].as_str() {
            Some(name) if offered.contains(&name) => Ok(()),
            Some(name) => Err(openai_unknown_tool(name)),
            None => Err(openai_error(
                400,
                "Missing required parameter: 'tool_choice.function.name'.",
                Some("tool_choice.function.name"),
                Some("missing_required_parameter"),
            )),
        },
        (None, Some("allowed_tools" | "custom")) => Ok(()),
        _ => Err(openai_error(
            400,
            "'$.tool_choice' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
            None,
            None,
        )),
    }
}

/// Responses: `"none"`, `"auto"`, `"required"` or `{"type": "function", "name"}` naming a
/// function tool offered (hosted tools' choices pass).
pub fn responses(body: &Value) -> Result<(), Rejection> {
    let offered = names(&body["tools"], &["name"]);
    let any_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    openai_parallel(body, any_tools)?;
    let choice = &body["tool_choice"];
    match (choice.as_str(), choice["type"].as_str()) {
        (None, None) if choice.is_null() => Ok(()),
        (Some("none" | "auto" | "required"), _) => Ok(()),
        (None, Some("function")) => match choice["name"].as_str() {
            Some(name) if offered.contains(&name) => Ok(()),
            Some(name) => Err(openai_unknown_tool(name)),
            None => Err(openai_error(
                400,
                "Missing required parameter: 'tool_choice.name'.",
                Some("tool_choice.name"),
                Some("missing_required_parameter"),
            )),
        },
        (None, Some(_)) => Ok(()),
        _ => Err(openai_error(
            400,
            "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a tool choice object.",
            Some("tool_choice"),
            Some("invalid_value"),
        )),
    }
}

/// Anthropic: `{"type": "auto" | "any" | "tool" | "none"}`, `tool` with the name of a tool
/// offered, `disable_parallel_tool_use` a boolean (not on `none`), and only with tools.
pub fn anthropic(body: &Value) -> Result<(), Rejection> {
    let choice = &body["tool_choice"];
    if choice.is_null() {
        return Ok(());
    }
    let bad = |message: String| Err(anthropic_error(400, "invalid_request_error", message));
    let kind = choice["type"].as_str().unwrap_or("");
    if !matches!(kind, "auto" | "any" | "tool" | "none") {
        return bad(format!(
            "tool_choice: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"
        ));
    }
    let offered = names(&body["tools"], &["name"]);
    if offered.is_empty() && kind != "none" {
        return bad("tool_choice may only be specified while providing tools.".into());
    }
    match &choice["disable_parallel_tool_use"] {
        Value::Null => {}
        Value::Bool(_) if kind != "none" => {}
        Value::Bool(_) => {
            return bad(
                "tool_choice.none.disable_parallel_tool_use: Extra inputs are not permitted".into(),
            );
        }
        _ => {
            return bad(format!(
                "tool_choice.{kind}.disable_parallel_tool_use: Input should be a valid boolean"
            ));
        }
    }
    match (kind, choice["name"].as_str()) {
        ("tool", None) => bad("tool_choice.tool.name: Field required".into()),
        ("tool", Some(name)) if !offered.contains(&name) => {
            bad(format!("Tool '{name}' not found in provided tools"))
        }
        _ => Ok(()),
    }
}

/// Gemini: `toolConfig.functionCallingConfig.mode` one of the modes, `allowedFunctionNames`
/// only with `ANY` (or `VALIDATED`), each a function declared.
pub fn gemini(body: &Value) -> Result<(), (u16, Value)> {
    let config = field(field(body, "toolConfig"), "functionCallingConfig");
    let bad = |message: String| Err((400, gemini_error(400, message)));
    let mode = field(config, "mode");
    let known = ["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"];
    if !mode.is_null() && !mode.as_str().is_some_and(|m| known.contains(&m)) {
        return bad(format!(
            "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), {mode}"
        ));
    }
    let allowed = field(config, "allowedFunctionNames");
    let Some(allowed) = allowed.as_array().filter(|a| !a.is_empty()) else {
        return Ok(());
    };
    let at = "GenerateContentRequest.tool_config.function_calling_config.allowed_function_names";
    if !matches!(mode.as_str(), Some("ANY" | "VALIDATED")) {
        return bad(format!(
            "* {at}: allowed_function_names may be set only when the mode is ANY or VALIDATED."
        ));
    }
    let declared: Vec<&str> = (field(body, "tools").as_array().into_iter().flatten())
        .flat_map(|t| names(field(t, "functionDeclarations"), &["name"]))
        .collect();
    for (i, name) in allowed.iter().enumerate() {
        if !name.as_str().is_some_and(|n| declared.contains(&n)) {
            return bad(format!(
                "* {at}[{i}]: {name} is not the name of a function declared in tools."
            ));
        }
    }
    Ok(())
}

/// Converse: `toolConfig.toolChoice` exactly one of `auto`, `any`, `tool` (with the name of a
/// tool offered).
pub fn bedrock(body: &Value) -> Result<(), Refusal> {
    let choice = &body["toolConfig"]["toolChoice"];
    if choice.is_null() {
        return Ok(());
    }
    let bad = |message: String| Err((400, "ValidationException", message));
    let members: Vec<&String> = choice
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .collect();
    let [member] = members.as_slice() else {
        return bad("toolConfig.toolChoice: exactly one of auto, any or tool must be set".into());
    };
    match member.as_str() {
        "auto" | "any" => Ok(()),
        "tool" => {
            let offered = names(&body["toolConfig"]["tools"], &["toolSpec", "name"]);
            match choice["tool"]["name"].as_str() {
                Some(name) if offered.contains(&name) => Ok(()),
                Some(name) => bad(format!(
                    "toolConfig.toolChoice.tool.name: the tool {name} is not in toolConfig.tools"
                )),
                None => bad("toolConfig.toolChoice.tool.name: Member must not be null".into()),
            }
        }
        other => bad(format!(
            "toolConfig.toolChoice: {other} is not a member; expected auto, any or tool"
        )),
    }
}

#[cfg(test)]
mod tests;
