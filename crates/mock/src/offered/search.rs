//! Tool search as Anthropic's Messages API and OpenAI's Responses API run it on their side:
//! tools sent with `defer_loading: true` are found by the service's own search tool (Anthropic's
//! `tool_search_tool_regex` / `tool_search_tool_bm25`, Responses' `tool_search`). A turn's
//! `tool_search` (its query) makes the mock search the request's deferred tools by the
//! query's words in their names and descriptions and answer with the search's server blocks
//! (`server_tool_use` + `tool_search_tool_result` naming each found tool by a
//! `tool_reference`) or output items (`tool_search_call` + `tool_search_output` with the
//! found definitions) before the turn's calls. The checks refuse, as the services do, a
//! deferred tool without the search tool, a search tool deferred itself, and (Anthropic) a
//! `tool_reference` to a tool the request does not defer.

use crate::errors::{Rejection, anthropic_error, openai_error};
pub use crate::scenario::Searched;
use serde_json::{Value, json};

/// The tools of a request sent with `defer_loading: true`.
pub fn deferred(body: &Value) -> Vec<&Value> {
    let tools = body["tools"].as_array().into_iter().flatten();
    tools.filter(|t| t["defer_loading"] == true).collect()
}

/// Whether an Anthropic tool is a tool search tool, by its `type`.
fn anthropic_search_tool(t: &Value) -> bool {
    t["type"]
        .as_str()
        .is_some_and(|k| k.starts_with("tool_search_tool_"))
}

/// Whether an Anthropic tool is one the service runs (a typed tool), not a client tool.
pub fn anthropic_server_tool(t: &Value) -> bool {
    t["type"].as_str().is_some_and(|k| k != "custom")
}

/// How many tools one search finds at most (the services load "3-5" a search).
const MAX_FOUND: usize = 5;

/// The deferred tools of `body` that a search for `query` finds: those with a word of the
/// query (case-insensitive, three letters or more) in their name (which counts most) or
/// description, the best first (the request's order among equals), five at most.
fn find(body: &Value, query: &str) -> Vec<Value> {
    let query = query.to_lowercase();
    let words: Vec<&str> = (query.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.len() > 2)
        .collect();
    let score = |t: &Value| -> usize {
        let name = t["name"].as_str().unwrap_or("").to_lowercase();
        let description = t["description"].as_str().unwrap_or("").to_lowercase();
        (words.iter())
            .map(|w| 3 * usize::from(name.contains(w)) + usize::from(description.contains(w)))
            .sum()
    };
    let mut ranked: Vec<(usize, &Value)> = (deferred(body).into_iter())
        .map(|t| (score(t), t))
        .filter(|(s, _)| *s > 0)
        .collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.0));
    ranked
        .into_iter()
        .take(MAX_FOUND)
        .map(|(_, t)| t.clone())
        .collect()
}

/// The search a turn asks for (`query`) in an Anthropic request; an error when the request
/// offers no tool search tool (the model could not search).
pub fn anthropic(body: &Value, query: &str) -> Result<Searched, String> {
    let tools = body["tools"].as_array().into_iter().flatten();
    let Some(tool) = tools.clone().find(|t| anthropic_search_tool(t)) else {
        return Err(
            "kiln-mock: the turn searches tools but the request offers no tool search tool".into(),
        );
    };
    let name = tool["name"].as_str().unwrap_or("tool_search_tool_regex");
    let input = match name.contains("bm25") {
        true => json!({"query": query}),
        false => json!({"pattern": query}),
    };
    Ok(Searched {
        tool: name.to_string(),
        input,
        found: find(body, query),
    })
}

/// The search a turn asks for (`query`) in a Responses request; an error when the request
/// offers no `tool_search` tool.
pub fn responses(body: &Value, query: &str) -> Result<Searched, String> {
    let mut tools = body["tools"].as_array().into_iter().flatten();
    if !tools.any(|t| t["type"] == "tool_search") {
        return Err(
            "kiln-mock: the turn searches tools but the request offers no tool_search tool".into(),
        );
    }
    let found = find(body, query);
    let paths: Vec<&str> = found.iter().filter_map(|t| t["name"].as_str()).collect();
    Ok(Searched {
        tool: "tool_search".into(),
        input: json!({"paths": paths}),
        found,
    })
}

/// Anthropic's checks of a request's tool search: the search tools well named and never
/// deferred, a deferred tool only beside a search tool, not every tool deferred, and each
/// `tool_reference` in the turns naming a tool the request defers.
pub fn check_anthropic(body: &Value) -> Result<(), Rejection> {
    let bad = |m: String| Err(anthropic_error(400, "invalid_request_error", m));
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    for (i, t) in tools
        .iter()
        .enumerate()
        .filter(|(_, t)| anthropic_search_tool(t))
    {
        let kind = t["type"].as_str().unwrap_or("");
        let variant = if kind.contains("bm25") {
            "bm25"
        } else {
            "regex"
        };
        if t["name"] != format!("tool_search_tool_{variant}").as_str() {
            return bad(format!(
                "tools.{i}.name: Input should be 'tool_search_tool_{variant}'"
            ));
        }
        if t["defer_loading"] == true {
            return bad(format!(
                "tools.{i}: the tool search tool cannot have defer_loading set"
            ));
        }
    }
    let deferred = deferred(body);
    if !deferred.is_empty() && !tools.iter().any(anthropic_search_tool) {
        return bad(
            "tools: a tool has defer_loading set but no tool search tool is present".into(),
        );
    }
    let names: Vec<&str> = deferred.iter().filter_map(|t| t["name"].as_str()).collect();
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let refs = b["content"]["tool_references"]
                .as_array()
                .into_iter()
                .flatten();
            for r in refs.filter(|_| b["type"] == "tool_search_tool_result") {
                let name = r["tool_name"].as_str().unwrap_or("");
                if !names.contains(&name) {
                    return bad(format!(
                        "messages.{i}.content.{j}: tool reference '{name}' does not name a tool with defer_loading in the request's tools"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The Responses API's check of a request's tool search: a deferred function only beside a
/// `tool_search` tool.
pub fn check_responses(body: &Value) -> Result<(), Rejection> {
    let mut tools = body["tools"].as_array().into_iter().flatten();
    if !deferred(body).is_empty() && !tools.any(|t| t["type"] == "tool_search") {
        return Err(openai_error(
            400,
            "Deferred tools (defer_loading: true) require the tool_search tool in 'tools'.",
            Some("tools"),
            None,
        ));
    }
    Ok(())
}

/// Anthropic's server blocks of a search, whole: the `server_tool_use` (id `srvtoolu_mock_N`)
/// and its `tool_search_tool_result`.
pub fn anthropic_blocks(s: &Searched, n: usize) -> [Value; 2] {
    let id = format!("srvtoolu_mock_{n}");
    let refs: Vec<Value> = (s.names().into_iter())
        .map(|name| json!({"type": "tool_reference", "tool_name": name}))
        .collect();
    [
        json!({"type": "server_tool_use", "id": id, "name": s.tool, "input": s.input}),
        json!({"type": "tool_search_tool_result", "tool_use_id": id, "content": {
            "type": "tool_search_tool_search_result", "tool_references": refs}}),
    ]
}

/// The Responses output items of a search: its `tool_search_call` and `tool_search_output`
/// (the found definitions, as the request sent them).
pub fn responses_items(s: &Searched, n: usize) -> [Value; 2] {
    [
        json!({"id": format!("tsc_mock_{n}"), "type": "tool_search_call", "status": "completed",
            "call_id": null, "execution": "server", "arguments": s.input}),
        json!({"id": format!("tso_mock_{n}"), "type": "tool_search_output", "status": "completed",
            "call_id": null, "execution": "server", "tools": s.found}),
    ]
}

#[cfg(test)]
mod tests {
    use crate::offered::search::*;

    fn tools() -> Value {
        json!([
            {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
            {"name": "weather_lookup", "description": "Current weather of a city", "input_schema": {"type": "object"}, "defer_loading": true},
            {"name": "unit_convert", "description": "Converts a temperature", "input_schema": {"type": "object"}, "defer_loading": true},
            {"name": "now", "description": "The time", "input_schema": {"type": "object"}}
        ])
    }

    #[test]
    fn a_search_finds_deferred_tools_by_words_and_renders_both_wires_shapes() {
        let body = json!({"tools": tools()});
        let s = anthropic(&body, "weather in Paris").expect("search tool offered");
        assert_eq!(
            (s.tool.as_str(), s.names()),
            ("tool_search_tool_bm25", vec!["weather_lookup"])
        );
        let [used, result] = anthropic_blocks(&s, 3);
        assert_eq!(used["input"], json!({"query": "weather in Paris"}));
        assert_eq!(result["tool_use_id"], "srvtoolu_mock_3");
        assert_eq!(
            result["content"]["tool_references"][0]["tool_name"],
            "weather_lookup"
        );
        assert!(find(&body, "time").is_empty(), "`now` is not deferred");
        assert!(anthropic(&json!({"tools": [tools()[1]]}), "weather").is_err());
        let responses_body = json!({"tools": [
            {"type": "function", "name": "unit_convert", "description": "Converts a temperature", "defer_loading": true},
            {"type": "tool_search"}]});
        let s = responses(&responses_body, "temperature").expect("tool_search offered");
        let [call, output] = responses_items(&s, 1);
        assert_eq!(call["arguments"], json!({"paths": ["unit_convert"]}));
        assert_eq!(output["tools"][0]["name"], "unit_convert");
        assert!(responses(&json!({"tools": []}), "x").is_err());
    }

    #[test]
    fn deferred_tools_need_the_search_tool_and_references_name_deferred_tools() {
        let ok = json!({"tools": tools(), "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "s1", "name": "tool_search_tool_bm25", "input": {"query": "x"}},
                {"type": "tool_search_tool_result", "tool_use_id": "s1", "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "weather_lookup"}]}}]}]});
        assert!(check_anthropic(&ok).is_ok());
        let mut unknown = ok.clone();
        unknown["messages"][1]["content"][1]["content"]["tool_references"][0]["tool_name"] =
            json!("now");
        let (status, err) = check_anthropic(&unknown).expect_err("now is not deferred");
        assert_eq!(status, 400);
        assert!(err.to_string().contains("messages.1.content.1"), "{err}");
        let no_search = json!({"tools": [tools()[1], tools()[3]], "messages": []});
        assert!(check_anthropic(&no_search).is_err());
        let all = json!({"tools": [tools()[1]], "messages": []});
        assert!(check_anthropic(&all).is_err());
        let mut search_deferred = json!({"tools": tools(), "messages": []});
        search_deferred["tools"][0]["defer_loading"] = json!(true);
        assert!(check_anthropic(&search_deferred).is_err());
        let misnamed = json!({"tools": [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_bm25"}]});
        assert!(check_anthropic(&misnamed).is_err());
        let responses_body =
            json!({"tools": [{"type": "function", "name": "a", "defer_loading": true}]});
        assert!(check_responses(&responses_body).is_err());
        let with_search = json!({"tools": [{"type": "function", "name": "a", "defer_loading": true}, {"type": "tool_search"}]});
        assert!(check_responses(&with_search).is_ok());
    }
}
