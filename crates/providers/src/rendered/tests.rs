//! The bytes each wire sends, rendered incrementally round after round through one provider,
//! are byte for byte the whole render of the same request: as the conversation grows, when an
//! earlier message changes, when the conversation is another one, when the tools change.

use crate::{
    CallArgs, Endpoint, Limits, Message, ModelRequest, Provider, ToolCall, ToolDef, ToolResult,
    anthropic, gemini, ollama, openai::chat,
};
use serde_json::json;
use std::time::Duration;

/// The whole render of a request, as JSON text.
type Whole = fn(&ModelRequest<'_>) -> String;

/// The wires, each a fresh provider, with the whole render it must match.
fn providers() -> Vec<(Provider, Whole)> {
    let endpoint = |base_url: &str| Endpoint {
        base_url: base_url.into(),
        api_key: Some("k".into()),
        key_var: None,
        timeout: Duration::from_secs(1),
        max_retries: 0,
        limits: Limits::default(),
    };
    vec![
        (
            Provider::OpenAi(chat::OpenAi {
                endpoint: endpoint("http://127.0.0.1:1/v1"),
                rendered: Default::default(),
            }),
            |req| chat::request_body(req, false).to_string(),
        ),
        (
            Provider::OpenAi(chat::OpenAi {
                endpoint: endpoint(chat::DEFAULT_BASE_URL),
                rendered: Default::default(),
            }),
            |req| chat::request_body(req, true).to_string(),
        ),
        (
            Provider::Anthropic(anthropic::Anthropic {
                endpoint: endpoint(anthropic::DEFAULT_BASE_URL),
                rendered: Default::default(),
            }),
            |req| anthropic::request_body(req).to_string(),
        ),
        (
            Provider::Ollama(ollama::Ollama {
                endpoint: endpoint(ollama::DEFAULT_BASE_URL),
                rendered: Default::default(),
            }),
            |req| ollama::request_body(req).to_string(),
        ),
        (
            Provider::Gemini(gemini::Gemini {
                endpoint: endpoint(gemini::DEFAULT_BASE_URL),
                rendered: Default::default(),
            }),
            |req| gemini::request_body(req).to_string(),
        ),
    ]
}

/// The bytes `provider` sends for `req`, which must be the whole render's.
fn same(provider: &Provider, whole: Whole, req: &ModelRequest<'_>) {
    let sent = provider.prepare(req).body;
    let sent = std::str::from_utf8(&sent).expect("UTF-8");
    assert_eq!(sent, whole(req), "{} sent", provider.name());
}

fn tools() -> Vec<ToolDef> {
    vec![ToolDef {
        name: "calc".into(),
        description: "adds \"x\"".into(),
        schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}).into(),
        deferred: false,
    }]
}

/// A request as the loop makes it; the model name and system prompt hold what the splice
/// looks for.
fn request(messages: &[Message], unchanged_prefix: usize) -> ModelRequest<'_> {
    ModelRequest {
        model: "m\"messages\":[]\"tools\":null".into(),
        system: Some("be brief: \"tools\":null, \"messages\":[] \"contents\":[] é\n".into()),
        messages: messages.into(),
        tools: tools(),
        temperature: Some(0.5),
        max_tokens: 10,
        stream: false,
        unchanged_prefix,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

fn call(id: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "calc".into(),
        args: CallArgs::from_text(args),
    }
}

fn result(id: &str, content: &str, is_error: bool) -> ToolResult {
    ToolResult {
        call_id: id.into(),
        name: "calc".into(),
        content: content.into(),
        is_error,
    }
}

/// Every kind of message the wires render differently.
fn kinds() -> Vec<Message> {
    vec![
        Message::user("hi \"there\" \"messages\":["),
        Message::Assistant {
            replay: None,
            content: "thinking".into(),
            tool_calls: vec![],
        },
        Message::Assistant {
            replay: None,
            content: String::new(),
            tool_calls: vec![call("c1", "{\"x\": 1}"), call("ollama_call_1", "not json")],
        },
        Message::Assistant {
            replay: None,
            content: "both".into(),
            tool_calls: vec![call("c2", "[1]")],
        },
        Message::Assistant {
            replay: None,
            content: String::new(),
            tool_calls: vec![],
        },
        Message::Tool {
            results: vec![
                result("c1", "2", false),
                result("ollama_call_1", "no", true),
            ],
        },
        Message::Tool {
            results: vec![result("c2", "\"quoted\"\n", false)],
        },
        Message::Tool { results: vec![] },
        crate::attach::tests::user("see", vec![crate::attach::tests::png()]),
    ]
}

#[test]
fn a_conversation_sent_round_by_round_is_the_whole_render_each_round() {
    for (provider, whole) in providers() {
        let mut messages = vec![kinds()[0].clone()];
        let turns = [
            kinds()[2].clone(),
            kinds()[5].clone(),
            kinds()[3].clone(),
            kinds()[6].clone(),
            kinds()[7].clone(),
            kinds()[0].clone(),
            kinds()[8].clone(),
            kinds()[1].clone(),
        ];
        let mut sent_before = 0;
        for turn in turns {
            // The loop's promise: what it sent before is unchanged.
            same(&provider, whole, &request(&messages, sent_before));
            sent_before = messages.len();
            messages.push(turn);
        }
        same(&provider, whole, &request(&messages, sent_before));
        // Streamed, another temperature, and no system prompt change only the frame.
        let mut req = request(&messages, messages.len());
        req.stream = true;
        req.temperature = None;
        req.system = None;
        same(&provider, whole, &req);
        // A schema for the answer (a response format for OpenAI, the prompt elsewhere).
        req.output = Some(json!({"type": "object", "properties": {"messages": []}}));
        same(&provider, whole, &req);
    }
}

#[test]
fn an_earlier_message_changed_is_rendered_again() {
    for (provider, whole) in providers() {
        let mut messages = vec![
            kinds()[0].clone(),
            kinds()[2].clone(),
            kinds()[5].clone(),
            kinds()[3].clone(),
        ];
        same(&provider, whole, &request(&messages, 0));
        // Past the promise, an edited message is seen and rendered again.
        messages[1] = kinds()[1].clone();
        same(&provider, whole, &request(&messages, 1));
        messages[3] = kinds()[4].clone();
        same(&provider, whole, &request(&messages, 0));
        // Another conversation through the same provider (the planner's fresh prompt).
        messages.truncate(1);
        messages[0] = Message::user("other");
        same(&provider, whole, &request(&messages, 0));
        same(&provider, whole, &request(&[], 0));
    }
}

#[test]
fn other_tools_and_then_none_are_the_whole_render() {
    for (provider, whole) in providers() {
        let messages = [kinds()[0].clone(), kinds()[2].clone()];
        let mut req = request(&messages, 0);
        same(&provider, whole, &req);
        req.tools[0].name = "mul".into();
        same(&provider, whole, &req);
        req.tools.clear();
        same(&provider, whole, &req);
        req.tools = tools();
        same(&provider, whole, &req);
    }
}

/// Every sequence of up to four kinds of message, sent one after another through one
/// provider without a promise: consecutive sequences share a prefix and differ after it, so
/// each is an edit of the last (and on Anthropic's wire, every way of merging a role's run).
#[test]
fn every_short_conversation_after_every_other_is_the_whole_render() {
    let kinds = kinds();
    for (provider, whole) in providers() {
        for len in 1..=4u32 {
            for code in 0..kinds.len().pow(len) {
                let mut rest = code;
                let messages: Vec<Message> = (0..len)
                    .map(|_| {
                        let m = kinds[rest % kinds.len()].clone();
                        rest /= kinds.len();
                        m
                    })
                    .collect();
                same(&provider, whole, &request(&messages, 0));
            }
        }
    }
}

#[test]
fn every_tool_choice_round_after_round_is_the_whole_render() {
    use crate::ToolChoice;
    let choices = [
        ToolChoice::Tool("calc".into()),
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Tool("mul".into()),
        ToolChoice::Auto,
    ];
    for (provider, whole) in providers() {
        let mut messages = vec![kinds()[0].clone()];
        for (n, choice) in choices.iter().enumerate() {
            let mut req = request(&messages, messages.len().saturating_sub(1));
            req.tool_choice = choice.clone();
            req.parallel_tool_calls = [None, Some(false), Some(true)][n % 3];
            same(&provider, whole, &req);
            messages.push(kinds()[2 + n % 2].clone());
        }
    }
}

#[test]
fn anthropic_tool_choice_is_its_type_and_one_call_is_disable_parallel_tool_use() {
    use crate::ToolChoice;
    let messages = [kinds()[0].clone()];
    let choice = |choice: ToolChoice, parallel: Option<bool>| {
        let mut req = request(&messages, 0);
        (req.tool_choice, req.parallel_tool_calls) = (choice, parallel);
        anthropic::request_body(&req).get("tool_choice").cloned()
    };
    assert_eq!(choice(ToolChoice::Auto, None), None);
    assert_eq!(choice(ToolChoice::Auto, Some(true)), None);
    assert_eq!(
        choice(ToolChoice::Auto, Some(false)),
        Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
    );
    assert_eq!(
        choice(ToolChoice::None, Some(false)),
        Some(json!({"type": "none"}))
    );
    assert_eq!(
        choice(ToolChoice::Required, None),
        Some(json!({"type": "any"}))
    );
    assert_eq!(
        choice(ToolChoice::Tool("calc".into()), Some(false)),
        Some(json!({"type": "tool", "name": "calc", "disable_parallel_tool_use": true}))
    );
    let mut bare = request(&messages, 0);
    (bare.tools, bare.tool_choice) = (Vec::new(), ToolChoice::Required);
    assert!(anthropic::request_body(&bare).get("tool_choice").is_none());
}

#[test]
fn ollama_has_no_tool_choice_so_the_tools_offered_make_it() {
    use crate::ToolChoice;
    let messages = [kinds()[0].clone()];
    let names = |choice: ToolChoice| {
        let mut req = request(&messages, 0);
        req.tools.push(ToolDef {
            name: "mul".into(),
            ..tools()[0].clone()
        });
        (req.tool_choice, req.parallel_tool_calls) = (choice, Some(false));
        let body = ollama::request_body(&req);
        assert!(body.get("tool_choice").is_none() && body.get("parallel_tool_calls").is_none());
        let tools = body["tools"].as_array().cloned().unwrap_or_default();
        (tools.iter())
            .map(|t| t["function"]["name"].as_str().unwrap_or("?").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(ToolChoice::Auto), ["calc", "mul"]);
    assert_eq!(names(ToolChoice::Required), ["calc", "mul"]);
    assert_eq!(names(ToolChoice::Tool("mul".into())), ["mul"]);
    assert!(names(ToolChoice::None).is_empty());
    assert!(names(ToolChoice::Tool("nope".into())).is_empty());
}
