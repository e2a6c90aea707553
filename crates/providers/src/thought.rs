//! The model's reasoning a reply carries as text, where its wire gives it: the summaries of an
//! OpenAI Responses reasoning item, the text of Gemini's thought parts (both kept in the
//! reply's [`Replay`](crate::Replay) to be sent back). Doors show it as the model thinking
//! (ACP's `agent_thought_chunk`); it is never part of the answer.

use crate::ModelResponse;
#[cfg(test)]
use serde_json::Value;

/// The reply's reasoning text, its pieces joined by a blank line; `None` where it has none.
pub fn thought_of(reply: &ModelResponse) -> Option<String> {
    let replay = reply.replay.as_ref()?;
    let mut texts: Vec<&str> = Vec::new();
    match replay.wire.as_str() {
        crate::openai::responses::WIRE => {
            for item in replay.data.as_array().into_iter().flatten() {
                if item["type"] != "reasoning" {
                    continue;
                }
                let summary = item["summary"].as_array().into_iter().flatten();
                texts.extend(summary.filter_map(|s| s["text"].as_str()));
            }
        }
        crate::gemini::WIRE => {
            let parts = replay.data["thoughts"].as_array().into_iter().flatten();
            texts.extend(parts.filter_map(|p| p["text"].as_str()));
        }
        _ => {}
    }
    let texts: Vec<&str> = texts.into_iter().filter(|t| !t.trim().is_empty()).collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// For tests: a reply whose replay is `data` of `wire`.
#[cfg(test)]
fn reply(wire: &str, data: Value) -> ModelResponse {
    ModelResponse {
        text: String::new(),
        tool_calls: Vec::new(),
        stop: crate::StopReason::EndTurn,
        usage: crate::Usage::default(),
        replay: Some(crate::Replay {
            wire: wire.into(),
            data,
        }),
        answered_by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_summaries_and_thought_parts_are_the_thought() {
        let responses = reply(
            "openai-responses",
            json!([{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Add them."},
                {"type": "summary_text", "text": "Then answer."}]}, {"type": "message"}]),
        );
        assert_eq!(
            thought_of(&responses).as_deref(),
            Some("Add them.\n\nThen answer.")
        );
        let gemini = reply(
            "gemini",
            json!({"thoughts": [{"thought": true, "text": "Look it up."}]}),
        );
        assert_eq!(thought_of(&gemini).as_deref(), Some("Look it up."));
        let none = reply(
            "openai-responses",
            json!([{"type": "reasoning", "summary": []}]),
        );
        assert_eq!(thought_of(&none), None);
    }
}
