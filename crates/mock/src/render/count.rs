//! Input tokens counted from the request (`"count_usage": true`), for comparing what requests
//! cost: the reply's `input_tokens` (and the recorded request's) is an estimate of the prompt
//! the model reads, at four bytes of its JSON text a token (the rule of thumb OpenAI's and
//! Anthropic's guides give: about four characters of English a token).
//!
//! What the model reads ([`prompt_text`]): the system prompt, the conversation, and the tools
//! loaded. A tool deferred to the service's own search (`defer_loading: true`) is not loaded
//! until a search in the conversation found it: on Anthropic's wire nothing of it is read
//! before (a `tool_reference` loads its definition); on OpenAI Responses' its name and
//! description are (the model sees what it may search for; a `tool_search_output` in the
//! input holds the definitions it loaded, read as part of the conversation).

use serde_json::{Value, json};

/// The estimated input tokens of a request: its [`prompt_text`] at four bytes a token.
pub fn input_tokens(body: &Value) -> u64 {
    (prompt_text(body).len() as u64).div_ceil(4)
}

/// The JSON text of what the model reads of a request, whatever the wire: the system prompt
/// (`system`, `instructions`, Gemini's `systemInstruction`), the conversation (`messages`,
/// `input`, `contents`) and the tools loaded ([`loaded_tools`]), one per line.
pub fn prompt_text(body: &Value) -> String {
    let keys = [
        "system",
        "instructions",
        "systemInstruction",
        "system_instruction",
        "messages",
        "input",
        "contents",
    ];
    let mut parts: Vec<String> = (keys.iter())
        .filter_map(|k| body.get(*k))
        .map(Value::to_string)
        .collect();
    parts.extend(loaded_tools(body).iter().map(Value::to_string));
    parts.join("\n")
}

/// The tool definitions a request loads: every tool it sends (Bedrock's under `toolConfig`),
/// a deferred one only once a search in the conversation found it (Anthropic: a
/// `tool_reference` to it; Responses: its name and description before, the definitions a
/// `tool_search_output` loaded being in the conversation already).
pub fn loaded_tools(body: &Value) -> Vec<Value> {
    let tools = [&body["tools"], &body["toolConfig"]["tools"]];
    let tools = tools.into_iter().filter_map(Value::as_array).flatten();
    let found = referenced(body);
    let responses = body.get("input").is_some();
    let mut loaded = Vec::new();
    for t in tools {
        let name = t["name"].as_str().unwrap_or("");
        if t["defer_loading"] != true || found.contains(&name) {
            loaded.push(t.clone());
        } else if responses {
            loaded.push(json!({"name": name, "description": t["description"]}));
        }
    }
    loaded
}

/// The tools Anthropic's searches in the conversation referenced (`tool_reference`s).
fn referenced(body: &Value) -> Vec<&str> {
    let messages = body["messages"].as_array().into_iter().flatten();
    let blocks = messages.flat_map(|m| m["content"].as_array().into_iter().flatten());
    let results = blocks.filter(|b| b["type"] == "tool_search_tool_result");
    let refs = results.flat_map(|b| {
        let refs = b["content"]["tool_references"].as_array();
        refs.into_iter().flatten()
    });
    refs.filter_map(|r| r["tool_name"].as_str()).collect()
}

#[cfg(test)]
mod tests {
    use crate::render::count::*;

    #[test]
    fn deferred_tools_count_once_found_and_responses_reads_their_names() {
        let weather = json!({"name": "weather", "description": "Weather of a city", "input_schema": {"type": "object"}, "defer_loading": true});
        let search =
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"});
        let before = json!({"system": "s", "messages": [{"role": "user", "content": "hi"}],
            "tools": [search, weather]});
        assert_eq!(loaded_tools(&before), std::slice::from_ref(&search));
        let mut after = before.clone();
        after["messages"] = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
            {"type": "tool_search_tool_result", "tool_use_id": "s1", "content": {"type": "tool_search_tool_search_result",
             "tool_references": [{"type": "tool_reference", "tool_name": "weather"}]}}]}]);
        assert_eq!(loaded_tools(&after), [search, weather.clone()]);
        assert!(input_tokens(&after) > input_tokens(&before));
        let text = prompt_text(&before);
        assert_eq!(input_tokens(&before), (text.len() as u64).div_ceil(4));
        assert!(text.starts_with("\"s\"\n"), "{text}");
        let responses = json!({"input": "hi", "tools": [{"type": "function", "name": "weather",
            "description": "Weather of a city", "parameters": {"type": "object"}, "defer_loading": true}]});
        assert_eq!(
            loaded_tools(&responses),
            [json!({"name": "weather", "description": "Weather of a city"})]
        );
        let bedrock =
            json!({"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "a"}}]}});
        assert_eq!(loaded_tools(&bedrock).len(), 1);
    }
}
