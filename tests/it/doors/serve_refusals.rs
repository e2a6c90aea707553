//! What `kiln serve` answers when a capability is refused: through Chat Completions a 4xx
//! naming the kind (it was a 500), and a direct call at `/v1/tools/{name}` in words that name
//! no agent (no agent is involved).

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::json;

fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            r#"tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| `kept ${{a.text}}`);
agent("plain").provider("openai").model("m").base_url("{}/v1").tools(["remember"]).capabilities(["store"]);"#,
            mock.url
        ),
    )])
}

#[test]
fn a_capability_refused_in_a_chat_completion_is_a_403_naming_its_kind() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]},
        {"text": "never"},
    ]}));
    let s = scripts(&mock);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    // The request narrows the run's grants to none: the model's call of `remember` is refused.
    let body = json!({"model": "plain", "messages": [{"role": "user", "content": "go"}], "kiln": {"caps": []}});
    let (status, said) = post(&format!("{}/v1/chat/completions", serve.url), &body, &[]);
    assert_eq!(status, 403, "{said}");
    assert_eq!(said["error"]["code"], "capability", "{said}");
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("store"), "{said}");
}

#[test]
fn a_direct_calls_refusal_names_no_agent() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": []}));
    let s = scripts(&mock);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let url = format!("{}/v1/tools/remember", serve.url);
    let (status, said) = post(&url, &json!({"arguments": {"text": "milk"}}), &[]);
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["error"]["kind"], "capability", "{said}");
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("store"), "{said}");
    assert!(!message.to_lowercase().contains("agent"), "{said}");
}
