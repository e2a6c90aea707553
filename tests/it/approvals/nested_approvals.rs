//! An agent called as a tool under `kiln serve` asks the same person as the run that called
//! it: its call that needs approval waits in the outer run's inbox (it used to be refused with
//! "no one to ask (pass --yes …)"), and no refusal an HTTP client reads names a CLI flag.

use crate::approvals::{awaiting, finished};
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::json;

/// `outer` asks `inner`, whose `remember` needs the `store` grant, held only with approval.
const SCRIPTS: &str = r#"
tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| `kept ${a.text}`);
agent("inner").provider("script").tools(["remember"]).capabilities(["store"])
    .needs_approval(["store"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "remember", args: #{ text: last.content } }] }; }
        #{ text: `inner: ${last.content}` }
    });
agent("outer").provider("script").tools(["agent:inner"]).capabilities(["store"])
    .needs_approval(["store"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "ask_inner", args: #{ prompt: last.content } }] }; }
        #{ text: `outer: ${last.content}` }
    });
"#;

fn start(serve: &Serve, input: &str) -> String {
    let body = json!({"agent": "outer", "input": input, "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert!((200..300).contains(&status), "{run}");
    run["id"].as_str().expect("id").to_string()
}

#[test]
fn an_agent_called_as_a_tool_waits_for_the_same_person_as_its_caller() {
    let s = Scripts::new(&[("a.rhai", SCRIPTS)]);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--approval-timeout", "1"],
        &[],
    );
    // Approved in the outer run's inbox: the nested agent's tool runs.
    let id = start(&serve, "milk");
    let approval = awaiting(&serve, &id);
    assert_eq!(approval["capability"], "store", "{approval}");
    assert!(
        approval["question"]
            .as_str()
            .is_some_and(|q| q.contains("tool \"remember\"")),
        "{approval}"
    );
    let (_, inbox) = get(&format!("{}/v1/approvals", serve.url));
    assert_eq!(inbox["approvals"][0]["run"], id.as_str(), "{inbox}");
    let url = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or_default()
    );
    let (status, said) = post(&url, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 200, "{said}");
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["report"]["answer"], "outer: inner: kept milk",
        "{done}"
    );

    // Nobody deciding: denied as the outer run's own calls are, in words naming no flag.
    let id = start(&serve, "eggs");
    awaiting(&serve, &id);
    let done = finished(&serve, &id);
    let text = done.to_string();
    assert!(text.contains("nobody approved it within 1 s"), "{done}");
    assert!(!text.contains("kept eggs"), "{done}");
    assert!(!text.contains("no one to ask"), "{done}");
    assert!(!text.contains("--yes"), "{done}");
}
