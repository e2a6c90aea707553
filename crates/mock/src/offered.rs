//! Turns served only to requests that offer a given tool (`"offered": "get_weather"`): which
//! tools a request offers, on every wire (and those it defers to the service's own tool
//! search, [`search`]). Which turn fits a request is [`crate::fits`].

pub mod search;

use super::gemini::field;
use serde_json::Value;

/// The names of the function tools a request offers, whatever its wire: OpenAI Chat
/// Completions and Ollama (`tools[].function.name`), Responses and Anthropic
/// (`tools[].name`), Gemini (`tools[].functionDeclarations[].name`, camel or snake case) and
/// Bedrock Converse (`toolConfig.tools[].toolSpec.name`).
pub fn offered_tools(body: &Value) -> Vec<&str> {
    let mut names = Vec::new();
    for tool in field(body, "tools").as_array().into_iter().flatten() {
        if let Some(name) = tool["function"]["name"].as_str() {
            names.push(name);
        } else if let Some(name) = tool["name"].as_str() {
            names.push(name);
        }
        let decls = field(tool, "functionDeclarations").as_array();
        names.extend(
            decls
                .into_iter()
                .flatten()
                .filter_map(|d| d["name"].as_str()),
        );
    }
    let bedrock = body["toolConfig"]["tools"].as_array();
    names.extend(
        bedrock
            .into_iter()
            .flatten()
            .filter_map(|t| t["toolSpec"]["name"].as_str()),
    );
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_wire_s_tool_list_is_read() {
        let bodies = [
            json!({"tools": [{"type": "function", "function": {"name": "get_weather"}}]}),
            json!({"tools": [{"type": "function", "name": "get_weather"}]}),
            json!({"tools": [{"name": "get_weather", "input_schema": {}}]}),
            json!({"tools": [{"functionDeclarations": [{"name": "a"}, {"name": "get_weather"}]}]}),
            json!({"tools": [{"function_declarations": [{"name": "get_weather"}]}]}),
            json!({"toolConfig": {"tools": [{"toolSpec": {"name": "get_weather"}}]}}),
        ];
        for body in &bodies {
            assert!(offered_tools(body).contains(&"get_weather"), "{body}");
        }
        assert!(offered_tools(&json!({"messages": []})).is_empty());
        assert_eq!(
            offered_tools(&json!({"tools": [{"name": "a"}, {"function": {"name": "b"}}]})),
            ["a", "b"]
        );
    }
}
