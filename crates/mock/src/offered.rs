//! Turns served only to requests that offer a given tool (`"offered": "get_weather"`): which
//! tools a request offers, on every wire, and which turn of a scenario fits a request.

use super::gemini::field;
use super::scenario::Turn;
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

/// Whether `turn` may answer a request offering `offered`: a turn without `offered` fits
/// every request.
fn fits(turn: &Turn, offered: &[&str]) -> bool {
    turn.offered
        .as_deref()
        .is_none_or(|name| offered.contains(&name))
}

/// The index of the turn answering a request in its conversation's `round` (`by_round`): the
/// round-th of the turns that fit it, wrapping when `repeat`. None when no turn fits or the
/// fitting turns ran out.
pub fn by_round(turns: &[Turn], round: usize, repeat: bool, body: &Value) -> Option<usize> {
    let offered = offered_tools(body);
    let fitting: Vec<usize> = (0..turns.len())
        .filter(|&i| fits(&turns[i], &offered))
        .collect();
    if fitting.is_empty() || (round >= fitting.len() && !repeat) {
        return None;
    }
    Some(fitting[round % fitting.len()])
}

/// The place in the scenario of the next turn for a client at `cursor` (which counts on
/// past the end when `repeat`): the first turn from there on that fits the request (the
/// turns it passes over are skipped), looking at most once round the scenario. None when no
/// turn is left that fits.
pub fn next(turns: &[Turn], cursor: usize, repeat: bool, body: &Value) -> Option<usize> {
    if turns.is_empty() {
        return None;
    }
    let offered = offered_tools(body);
    let left = if repeat {
        turns.len()
    } else {
        turns.len().saturating_sub(cursor)
    };
    (cursor..cursor + left).find(|&n| fits(&turns[n % turns.len()], &offered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turns(v: Value) -> Vec<Turn> {
        serde_json::from_value(v).expect("turns")
    }

    fn weather_scenario() -> Vec<Turn> {
        turns(json!([
            {"offered": "get_weather", "tool_calls": [{"name": "get_weather", "args": {"location": "SF"}}]},
            {"text": "It is sunny."}
        ]))
    }

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

    #[test]
    fn by_round_counts_only_the_turns_that_fit_the_request() {
        let t = weather_scenario();
        let offers = json!({"tools": [{"type": "function", "name": "get_weather"}]});
        let plain = json!({"input": "hi"});
        assert_eq!(by_round(&t, 0, false, &offers), Some(0));
        assert_eq!(by_round(&t, 1, false, &offers), Some(1));
        assert_eq!(by_round(&t, 0, false, &plain), Some(1));
        // One turn fits a request without the tool: a second round has none left...
        assert_eq!(by_round(&t, 1, false, &plain), None);
        // ...unless the scenario loops, which wraps among the fitting turns.
        assert_eq!(by_round(&t, 1, true, &plain), Some(1));
        assert_eq!(by_round(&t, 3, true, &offers), Some(1));
        let only = turns(json!([{"offered": "x", "text": "a"}]));
        assert_eq!(by_round(&only, 0, true, &plain), None);
    }

    #[test]
    fn the_cursor_skips_turns_that_do_not_fit() {
        let t = weather_scenario();
        let offers = json!({"tools": [{"type": "function", "function": {"name": "get_weather"}}]});
        let plain = json!({"messages": []});
        assert_eq!(next(&t, 0, false, &offers), Some(0));
        assert_eq!(next(&t, 0, false, &plain), Some(1));
        assert_eq!(next(&t, 1, false, &offers), Some(1));
        assert_eq!(next(&t, 2, false, &plain), None);
        // Looping, the cursor counts on: 2 is the first turn again, which needs the tool.
        assert_eq!(next(&t, 2, true, &plain), Some(3));
        assert_eq!(next(&t, 2, true, &offers), Some(2));
        assert_eq!(next(&[], 0, true, &plain), None);
        let only = turns(json!([{"offered": "x", "text": "a"}]));
        assert_eq!(next(&only, 0, true, &plain), None);
    }

    #[test]
    fn turns_without_offered_fit_every_request_as_before() {
        let t = turns(json!([{"text": "a"}, {"text": "b"}]));
        let offers = json!({"tools": [{"name": "anything"}]});
        for body in [json!({}), offers] {
            assert_eq!(by_round(&t, 1, false, &body), Some(1));
            assert_eq!(next(&t, 1, false, &body), Some(1));
            assert_eq!(next(&t, 5, true, &body), Some(5));
        }
    }
}
