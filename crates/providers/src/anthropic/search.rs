//! Anthropic's tool search: a request with deferred tools ([`crate::ToolDef::deferred`]) sends
//! them with `defer_loading: true` and the tool search tool; the service searches them itself
//! and answers with `server_tool_use` and `tool_search_tool_result` blocks before the model's
//! `tool_use` of a tool it found. Those server blocks ride in the reply's [`Replay`] and go
//! back, in their place among the turn's blocks, in every later request.

use crate::{CallArgs, Replay, ToolCall, ToolDef};
use serde_json::{Value, json};

/// The tool-call ids this wire takes (the same rule as the rest of the wire's).
const ID: crate::call_ids::IdRule = crate::call_ids::IdRule::ANTHROPIC;

/// The wire's name on a [`Replay`].
pub const WIRE: &str = "anthropic";

/// The tool search tool's type: BM25, the model searching in words (as kiln's own
/// `search_tools` does).
pub const SEARCH_TYPE: &str = "tool_search_tool_bm25_20251119";

/// The tool search tool's name (the one its type takes).
pub const SEARCH_NAME: &str = "tool_search_tool_bm25";

/// The tool definitions `defs` (one per tool of `tools`, in order) with the deferred ones
/// flagged `defer_loading` and the tool search tool first, when any is deferred.
pub(super) fn with_search(mut defs: Value, tools: &[ToolDef]) -> Value {
    if let Value::Array(list) = &mut defs
        && tools.iter().any(|t| t.deferred)
    {
        for (d, t) in list.iter_mut().zip(tools) {
            if t.deferred {
                d["defer_loading"] = json!(true);
            }
        }
        list.insert(0, json!({"type": SEARCH_TYPE, "name": SEARCH_NAME}));
    }
    defs
}

/// Whether a content block of `kind` is one the service ran itself (`server_tool_use`, and
/// its result: `tool_search_tool_result`, ...), which later requests send back as it came.
pub(crate) fn server_block(kind: &str) -> bool {
    kind == "server_tool_use" || kind.ends_with("_tool_result")
}

/// The replay of a reply's `blocks`: its text, tool-use and server blocks in order, when any
/// ran on the server (else the transcript holds all a later request needs).
pub(crate) fn replay(blocks: &[Value]) -> Option<Replay> {
    let kind = |b: &Value| b["type"].as_str().unwrap_or_default().to_string();
    if !blocks.iter().any(|b| server_block(&kind(b))) {
        return None;
    }
    let kept = blocks.iter().filter(|b| {
        let k = kind(b);
        k == "text" || k == "tool_use" || server_block(&k)
    });
    Some(Replay {
        wire: WIRE.into(),
        data: Value::Array(kept.cloned().collect()),
    })
}

/// A `tool_use` block of `call` as this wire sends it.
fn tool_use(c: &ToolCall) -> Value {
    let input = match &c.args {
        CallArgs::Parsed(v) if v.is_object() => Value::clone(v),
        _ => json!({}),
    };
    json!({"type": "tool_use", "id": ID.wire_id(&c.id), "name": c.name, "input": input})
}

/// An assistant turn's blocks: this wire's [`Replay`] in its order (the server blocks as they
/// came, each call as the transcript has it), else its text and calls; a call or text the
/// replay lacks (a turn from another wire, an id renamed) is added after.
pub(super) fn assistant_blocks(
    content: &str,
    calls: &[ToolCall],
    replay: &Option<Replay>,
) -> Vec<Value> {
    let replayed = Replay::for_wire(replay, WIRE).and_then(Value::as_array);
    let mut blocks = Vec::new();
    let mut sent = vec![false; calls.len()];
    let mut text_sent = false;
    for b in replayed.into_iter().flatten() {
        match b["type"].as_str() {
            Some("tool_use") => {
                if let Some(i) = calls.iter().position(|c| b["id"] == c.id.as_str()) {
                    sent[i] = true;
                    blocks.push(tool_use(&calls[i]));
                }
            }
            Some("text") => {
                text_sent = true;
                blocks.push(b.clone());
            }
            _ => blocks.push(b.clone()),
        }
    }
    if !text_sent && !content.is_empty() {
        blocks.push(json!({"type": "text", "text": content}));
    }
    for (c, _) in calls.iter().zip(sent).filter(|(_, sent)| !sent) {
        blocks.push(tool_use(c));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, deferred: bool) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: format!("the {name} tool"),
            schema: json!({"type": "object", "properties": {}}).into(),
            deferred,
        }
    }

    #[test]
    fn deferred_tools_go_flagged_with_the_search_tool_and_none_without_them() {
        let tools = [def("weather", true), def("calc", false)];
        let defs = crate::tool_definitions(&tools, kiln_core::schema::Format::Anthropic);
        let sent = with_search(defs.clone(), &tools);
        assert_eq!(
            sent[0],
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
        );
        assert_eq!(
            (sent[1]["name"].as_str(), &sent[1]["defer_loading"]),
            (Some("weather"), &json!(true))
        );
        assert!(sent[2].get("defer_loading").is_none(), "{}", sent[2]);
        let plain = [def("weather", false)];
        let defs = crate::tool_definitions(&plain, kiln_core::schema::Format::Anthropic);
        assert_eq!(with_search(defs.clone(), &plain), defs);
    }

    #[test]
    fn server_blocks_are_replayed_in_their_place_and_calls_as_the_transcript_has_them() {
        let blocks = vec![
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather"}}),
            json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "weather"}]}}),
            json!({"type": "text", "text": "Found it."}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}),
            json!({"type": "thinking", "thinking": "", "signature": "s"}),
        ];
        let replay = replay(&blocks).expect("server blocks are kept");
        assert_eq!(replay.wire, "anthropic");
        assert_eq!(replay.data.as_array().map(Vec::len), Some(4), "no thinking");
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "weather".into(),
            args: CallArgs::parsed(json!({"city": "Paris"})),
        };
        let sent = assistant_blocks(
            "Found it.",
            std::slice::from_ref(&call),
            &Some(replay.clone()),
        );
        assert_eq!(sent, blocks[..4].to_vec());
        // A renamed call is sent after what the replay holds; another wire's replay is ignored.
        let renamed = ToolCall {
            id: "toolu_1_2".into(),
            ..call.clone()
        };
        let sent = assistant_blocks("Found it.", std::slice::from_ref(&renamed), &Some(replay));
        assert_eq!((sent.len(), &sent[3]["id"]), (4, &json!("toolu_1_2")));
        let other = Some(Replay {
            wire: "gemini".into(),
            data: json!([]),
        });
        let sent = assistant_blocks("hi", &[call], &other);
        assert_eq!(sent.len(), 2);
        assert!(
            self::replay(&blocks[2..]).is_none(),
            "no server block, no replay"
        );
    }

    #[test]
    fn the_bytes_sent_hold_the_replayed_turn_as_the_whole_body_does() {
        let blocks = json!([
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather"}},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "weather"}]}},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}]);
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "weather".into(),
            args: CallArgs::parsed(json!({})),
        };
        let replay = replay(blocks.as_array().expect("blocks"));
        let messages = [
            crate::Message::user("weather?"),
            crate::Message::Assistant {
                content: String::new(),
                tool_calls: vec![call],
                replay,
            },
            crate::Message::Tool {
                results: vec![crate::ToolResult {
                    call_id: "toolu_1".into(),
                    name: "weather".into(),
                    content: "21".into(),
                    is_error: false,
                }],
            },
        ];
        let mut req = crate::attach::tests::plain(&messages);
        req.tools = vec![def("weather", true), def("now", false)];
        let body = crate::anthropic::request_body(&req);
        assert_eq!(body["messages"][1]["content"], blocks);
        let rendered = crate::anthropic::Rendered::default();
        let sent: Value = serde_json::from_slice(&crate::anthropic::request_bytes(&req, &rendered))
            .expect("valid JSON");
        assert_eq!(sent, body);
    }

    #[test]
    fn a_streamed_reply_with_server_blocks_replays_what_the_whole_reply_holds() {
        let whole = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}, "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather"}},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "weather"}]}},
            {"type": "text", "text": "Found it."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}]});
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": "}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"weather\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": whole["content"][2]}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "Found it."}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 4, "delta": {"type": "input_json_delta", "partial_json": "{\"city\":\"Paris\"}"}}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_stop"}),
        ];
        let sse: String = events
            .iter()
            .map(|e| format!("event: e\ndata: {e}\n\n"))
            .collect();
        let sink: crate::TextSink = std::sync::Arc::new(|_: &str| {});
        let streamed = crate::anthropic::parse_sse(&sse, &sink).expect("stream");
        let read = crate::anthropic::parse_response(&whole).expect("whole");
        assert_eq!(streamed, read);
        let data = read.replay.expect("replayed").data;
        assert_eq!(data, whole["content"]);
        assert_eq!(
            (read.text.as_str(), read.tool_calls.len()),
            ("Let me look.Found it.", 1)
        );
    }
}
