//! Which turns of a scenario may answer a request, and which one does. A turn may name the
//! `model` it answers, the text the conversation's first `user` message must contain and a
//! tool the request must have `offered`; this module reads those three things from a request
//! of any wire and picks the turn, by the conversation's round (`by_round`) or from a client's
//! cursor.

use super::offered::offered_tools;
use super::scenario::Turn;
use serde_json::Value;

/// What a request asks that a turn's filters look at, read once per request.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// The models the request names: its body's `model` (OpenAI Chat Completions and
    /// Responses, Anthropic, Ollama) and the one in its URL (Gemini's
    /// `/models/{model}:generateContent`, Bedrock's `/model/{modelId}/converse`, Azure's
    /// `/deployments/{deployment}/`), each as sent.
    pub models: Vec<&'a str>,
    /// The text of the conversation's first user message (its text parts joined by `\n`).
    pub user: Option<String>,
    /// The request's system prompt (every system or developer text, joined by `\n`).
    pub system: String,
    /// The function tools the request offers.
    pub tools: Vec<&'a str>,
}

impl<'a> Request<'a> {
    /// Reads `body`; `url_model` is the model the request's URL names, if its wire puts one
    /// there.
    pub fn of(body: &'a Value, url_model: Option<&'a str>) -> Request<'a> {
        let models = body["model"]
            .as_str()
            .into_iter()
            .chain(url_model)
            .collect();
        Request {
            models,
            user: first_user_text(body),
            system: system_text(body),
            tools: offered_tools(body),
        }
    }
}

/// The text of the conversation's first user message, whatever the wire: OpenAI Chat
/// Completions, Ollama, Anthropic and Bedrock (`messages[]` with `role: "user"`, `content` a
/// string or blocks with `text`), Responses (`input` a string, or its first item with `role:
/// "user"`) and Gemini (`contents[]` with `role: "user"` or no role, `parts[].text`). None when
/// the request carries no user message (e.g. a Responses request that continues a stored one).
pub fn first_user_text(body: &Value) -> Option<String> {
    if let Some(text) = body["input"].as_str() {
        return Some(text.to_string());
    }
    let list = [&body["messages"], &body["input"], &body["contents"]]
        .into_iter()
        .find_map(Value::as_array)?;
    let gemini = body.get("contents").is_some();
    let first = list.iter().find(|m| {
        let role = m.get("role");
        role == Some(&Value::from("user")) || (gemini && role.is_none())
    })?;
    Some(text_of(
        first.get("content").or_else(|| first.get("parts"))?,
    ))
}

/// The system prompt, whatever the wire: Anthropic's `system` and Responses' `instructions`
/// (a string or text blocks), Gemini's `systemInstruction` (or `system_instruction`) parts,
/// Bedrock's `system` blocks, and `system`/`developer` messages (OpenAI Chat Completions,
/// Ollama, Responses input items); joined by `\n`.
pub fn system_text(body: &Value) -> String {
    let mut texts = Vec::new();
    for key in ["system", "instructions"] {
        let t = text_of(&body[key]);
        if !t.is_empty() {
            texts.push(t);
        }
    }
    for key in ["systemInstruction", "system_instruction"] {
        let t = text_of(&body[key]["parts"]);
        if !t.is_empty() {
            texts.push(t);
        }
    }
    let list = [&body["messages"], &body["input"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten();
    for m in list {
        if matches!(m["role"].as_str(), Some("system" | "developer")) {
            texts.push(text_of(&m["content"]));
        }
    }
    texts.join("\n")
}

/// A message's text: a string, or the `text` of each of its blocks (`text`, `input_text`,
/// Bedrock's `{text}`, Gemini's parts), joined by `\n`.
fn text_of(content: &Value) -> String {
    if let Some(text) = content.as_str() {
        return text.to_string();
    }
    let texts: Vec<&str> = (content.as_array().into_iter().flatten())
        .filter_map(|block| block["text"].as_str())
        .collect();
    texts.join("\n")
}

/// Whether `turn` may answer `request`: every filter the turn sets holds (a turn without
/// filters fits every request). `model` must equal a model the request names; `user` must be
/// a (case-sensitive) part of its first user message; `offered` must be one of its tools.
pub fn fits(turn: &Turn, request: &Request) -> bool {
    let model = (turn.model.as_deref()).is_none_or(|m| request.models.contains(&m));
    let user = (turn.user.as_deref())
        .is_none_or(|text| request.user.as_deref().is_some_and(|u| u.contains(text)));
    let offered = (turn.offered.as_deref()).is_none_or(|name| request.tools.contains(&name));
    let system = (turn.system.as_deref()).is_none_or(|text| request.system.contains(text));
    model && user && offered && system
}

/// The index of the turn answering a request in its conversation's `round` (`by_round`): the
/// round-th of the turns that fit it, in the scenario's order, wrapping when `repeat`. None
/// when no turn fits or the fitting turns ran out.
pub fn by_round(turns: &[Turn], round: usize, repeat: bool, request: &Request) -> Option<usize> {
    let fitting: Vec<usize> = (0..turns.len())
        .filter(|&i| fits(&turns[i], request))
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
pub fn next(turns: &[Turn], cursor: usize, repeat: bool, request: &Request) -> Option<usize> {
    if turns.is_empty() {
        return None;
    }
    let left = if repeat {
        turns.len()
    } else {
        turns.len().saturating_sub(cursor)
    };
    (cursor..cursor + left).find(|&n| fits(&turns[n % turns.len()], request))
}

#[cfg(test)]
mod tests;
