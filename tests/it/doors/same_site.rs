//! A page on another port of this machine is another site (issue 56, item 5): every POST of
//! the API takes JSON only (`415` for the `text/plain` and form bodies a browser sends to
//! another site without asking first), and an `Origin` must be this server's own (scheme,
//! host and port) or one named with `--allow-origin`, at `/v1/*` and at `/mcp`. The real
//! binary on 127.0.0.1.

use crate::approvals::awaiting;
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};

fn scripts() -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        r#"tool("echo").param("text", "string").handler(|a| `echo ${a.text}`);
tool("wipe").param("what", "string").handler(|a| `wiped ${a.what}`);
policy("careful").applies_to(["wipe"]).check(|c, ctx| ask("wiping is permanent"));
agent("wiper").provider("script").tools(["wipe"]).planner(|m, t| {
    let last = m[m.len() - 1];
    if last.role == "user" { #{ tool_calls: [#{ name: "wipe", args: #{ what: "all" } }] } } else { #{ text: "done" } }
});"#,
    )])
}

fn port(serve: &Serve) -> String {
    serve.url.rsplit(':').next().unwrap_or("").to_string()
}

/// POSTs `body` as it is with `headers`; the status and the JSON reply.
fn send(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let (status, _, text) = http_raw("POST", url, headers, body);
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn runs_of(serve: &Serve, agent: &str) -> usize {
    let (_, runs) = get(&format!("{}/v1/runs", serve.url));
    runs["runs"]
        .as_array()
        .map_or(0, |r| r.iter().filter(|r| r["agent"] == agent).count())
}

#[test]
fn a_page_on_another_loopback_port_cannot_call_a_tool_or_decide() {
    let s = scripts();
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let own = format!("http://localhost:{}", port(&serve));
    let tool = format!("{}/v1/tools/echo", serve.url);
    let args = r#"{"arguments": {"text": "hi"}}"#;
    let plain = ("content-type", "text/plain");
    let json_type = ("content-type", "application/json");

    // The page of the issue: another loopback port, a body a browser sends without asking.
    let (status, e) = send(&tool, &[plain, ("origin", "http://localhost:3000")], args);
    assert_eq!(status, 403, "{e}");
    let message = e["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("origin http://localhost:3000"), "{e}");
    // Even as JSON, another port's page is refused; so is another scheme on this port.
    let other_port = ("origin", "http://127.0.0.1:3000");
    assert_eq!(send(&tool, &[json_type, other_port], args).0, 403);
    let https = format!("https://localhost:{}", port(&serve));
    assert_eq!(send(&tool, &[json_type, ("origin", &https)], args).0, 403);
    // Without an Origin (curl), a body that is not JSON is refused all the same.
    for kind in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let (status, e) = send(&tool, &[("content-type", kind)], args);
        assert_eq!(status, 415, "{kind}: {e}");
        assert_eq!(e["error"]["code"], "unsupported_media_type", "{e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("application/json"),
            "{e}"
        );
    }
    let (status, e) = send(&tool, &[], args);
    assert_eq!(status, 415, "no Content-Type: {e}");
    assert_eq!(runs_of(&serve, "call:echo"), 0, "no tool ran");

    // This server's own pages (either loopback name, its port), and JSON with parameters.
    let own_ip = format!("http://127.0.0.1:{}", port(&serve));
    for origin in [own.as_str(), own_ip.as_str()] {
        let (status, r) = send(&tool, &[json_type, ("origin", origin)], args);
        assert_eq!(status, 200, "{origin}: {r}");
        assert_eq!(r["result"], "echo hi", "{r}");
    }
    let utf8 = ("content-type", "application/json; charset=utf-8");
    assert_eq!(send(&tool, &[utf8], args).0, 200);
    assert_eq!(runs_of(&serve, "call:echo"), 3);

    // A decision: the same rules; the run still waits after each refusal.
    let run = json!({"agent": "wiper", "input": "go", "wait": false});
    let (status, started) = post(&format!("{}/v1/runs", serve.url), &run, &[]);
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap_or("").to_string();
    let approval = awaiting(&serve, &id);
    let decide = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    let yes = r#"{"decision": "approve"}"#;
    let (status, e) = send(&decide, &[plain], yes);
    assert_eq!(status, 415, "{e}");
    let foreign = ("origin", "http://localhost:3000");
    assert_eq!(send(&decide, &[json_type, foreign], yes).0, 403);
    assert_eq!(awaiting(&serve, &id)["id"], approval["id"], "still waiting");
    // Cancel takes no body: none is fine, a form is not, nor another port's page.
    let cancel = format!("{}/v1/runs/{id}/cancel", serve.url);
    let form = ("content-type", "application/x-www-form-urlencoded");
    assert_eq!(send(&cancel, &[form], "x=1").0, 415);
    assert_eq!(send(&cancel, &[foreign], "").0, 403);
    assert_eq!(awaiting(&serve, &id)["id"], approval["id"], "still waiting");
    let (status, r) = send(&cancel, &[], "");
    assert_eq!(status, 202, "{r}");
    let done = get(&format!("{}/v1/runs/{id}?wait=true", serve.url)).1;
    assert_eq!(done["status"], "cancelled", "{done}");
    let responses_cancel = format!("{}/v1/responses/resp_nope/cancel", serve.url);
    assert_eq!(send(&responses_cancel, &[plain], "x").0, 415);
    assert_eq!(send(&responses_cancel, &[], "").0, 404);

    // `/mcp` on the same server: the same rule for origins.
    let mcp = format!("{}/mcp", serve.url);
    assert_eq!(
        crate::mcp::post_initialize(&mcp, &[("Origin", "http://localhost:3000")]),
        403
    );
    assert_eq!(crate::mcp::post_initialize(&mcp, &[("Origin", &own)]), 200);
}

#[test]
fn allow_origin_admits_a_named_page() {
    let s = scripts();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--allow-origin", "http://localhost:3000"],
        &[],
    );
    let tool = format!("{}/v1/tools/echo", serve.url);
    let args = r#"{"arguments": {"text": "hi"}}"#;
    let json_type = ("content-type", "application/json");
    let named = ("origin", "http://localhost:3000");
    assert_eq!(send(&tool, &[json_type, named], args).0, 200);
    assert_eq!(
        send(
            &tool,
            &[json_type, ("origin", "http://localhost:3001")],
            args
        )
        .0,
        403
    );
}
