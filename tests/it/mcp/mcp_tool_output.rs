//! What tools send besides a plain value, through every door: content blocks (`image`,
//! `audio`, `resource`, `resource_blob`) become MCP content and text for a model; `progress` and
//! `log` become MCP notifications (progress token, `logging/setLevel`), bounded, and reach a
//! library caller's observer. The real binary over stdio JSON-RPC, and the library.

use crate::common::*;
use kiln::content::Content;
use kiln::tool::{CallObserver, LogLevel};
use kiln::{CallOptions, Host, NativeTool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// Tools that return content, report progress and log (the Python SDK drives them too).
pub const TOOLS: &str = r#"
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

tool("pic").description("An image").handler(|args| image(PNG, "image/png"));

tool("mixed").description("Text, an image and a binary resource").handler(|args| [
    "A chart:",
    image(PNG, "image/png"),
    resource_blob("file:///data.bin", "AAEC", "application/octet-stream"),
    resource("test://notes", "some notes", "text/plain"),
]);

tool("wrong_mime").description("Bad").handler(|args| image(PNG, "text/plain"));
tool("stray_item").description("Bad").handler(|args| ["ok", image(PNG, "image/png"), #{ a: 1 }]);
tool("hand_built").description("Bad").handler(|args| #{ "$content": [#{ type: "image", data: "@@@@", mimeType: "image/png" }] });

tool("steps").description("Reports progress").handler(|args| {
    progress(1, 3, "first");
    progress(2, 3);
    progress(2, 3);
    progress(3, 3);
    "stepped"
});

tool("flood").description("Reports too much").handler(|args| {
    for i in 1..=500 { progress(i); log("error", `line ${i}`); }
    "flooded"
});

tool("chatty").description("Logs at four levels").handler(|args| {
    log("debug", "d"); log("info", "i"); log("warning", "w"); log("error", "e");
    "logged"
});

tool("summarize").description("Asks the client's model").param("text", "string")
    .requires(["sampling"]).handler(|args| sample(args.text));

tool("bad_log").description("Bad level").handler(|args| { log("loud", "x"); "no" });

agent("viewer").description("Looks at the chart").provider("script").tools(["mixed"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "mixed", args: #{} }] }; }
        #{ text: last.content }
    });
"#;

/// `kiln mcp` over stdio on this folder's scripts alone ([`mcp_stdio`]).
fn stdio_messages(dir: &std::path::Path, extra: &[&str], msgs: &[Value]) -> Vec<Value> {
    let mut args = vec!["--no-stdlib", "--scripts", "."];
    args.extend_from_slice(extra);
    mcp_stdio(dir, &args, msgs)
}

fn session(then: Vec<Value>) -> Vec<Value> {
    let mut msgs = vec![
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    msgs.extend(then);
    msgs
}

fn call(id: &str, tool: &str, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta}})
}

fn answer<'a>(seen: &'a [Value], id: &str) -> &'a Value {
    let v = seen.iter().find(|v| v["id"] == id).expect("an answer");
    &v["result"]
}

/// The notifications of `method` that came before the answer to `id` (and after the one before).
fn notes_before(seen: &[Value], id: &str, method: &str) -> Vec<Value> {
    let end = seen.iter().position(|v| v["id"] == id).expect("an answer");
    let start = seen[..end]
        .iter()
        .rposition(|v| v.get("id").is_some())
        .map_or(0, |p| p + 1);
    seen[start..end]
        .iter()
        .filter(|v| v["method"] == method)
        .map(|v| v["params"].clone())
        .collect()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn mcp_tools_return_content_blocks_and_bad_ones_fail_naming_the_problem() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let names = ["pic", "mixed", "wrong_mime", "stray_item", "hand_built"];
    let calls = names.iter().map(|n| call(n, n, json!({}))).collect();
    let seen = stdio_messages(scripts.path(), &[], &session(calls));

    let pic = answer(&seen, "pic");
    assert_eq!(
        pic["content"],
        json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    );
    assert!(pic.get("structuredContent").is_none(), "{pic}");

    let mixed = answer(&seen, "mixed");
    let types: Vec<&str> = mixed["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|b| b["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["text", "image", "resource", "resource"], "{mixed}");
    assert_eq!(
        mixed["content"][2]["resource"],
        json!({"uri": "file:///data.bin", "mimeType": "application/octet-stream", "blob": "AAEC"})
    );
    assert_eq!(mixed["content"][3]["resource"]["text"], "some notes");

    for (id, want) in [
        (
            "wrong_mime",
            "image(): mime type \"text/plain\" is not an image type",
        ),
        (
            "stray_item",
            "item 2 of the result is map: a list with content blocks holds only strings and blocks",
        ),
        (
            "hand_built",
            "$content[0] (image): data is not base64: byte 0 is '@'",
        ),
    ] {
        let r = answer(&seen, id);
        assert_eq!(r["isError"], true, "{r}");
        let msg = text(r);
        assert!(msg.starts_with("Tool failed (invalid_output): "), "{msg}");
        assert!(msg.contains(want), "{id}: {msg}");
    }
}

#[test]
fn content_is_json_for_kiln_call_and_text_for_a_model() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let out = kiln(
        &["call", "pic", "{}", "--no-stdlib", "--scripts", "."],
        scripts.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["result"]["$content"][0]["mimeType"], "image/png", "{v}");

    // A model gets the blocks as text (the script planner echoes what it was given).
    let out = kiln(
        &["ask", "viewer", "show me", "--no-stdlib", "--scripts", "."],
        scripts.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "A chart:\n[image image/png, 70 bytes]\n[resource file:///data.bin (application/octet-stream), 3 bytes]\n[resource test://notes (text/plain)]\nsome notes"
    );
}

#[test]
fn mcp_progress_goes_to_the_client_with_its_token_in_order_and_bounded() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let seen = stdio_messages(
        scripts.path(),
        &[],
        &session(vec![
            call("with", "steps", json!({"progressToken": "p-1"})),
            call("without", "steps", json!({})),
            call("flood", "flood", json!({"progressToken": 9})),
        ]),
    );
    let progress = notes_before(&seen, "with", "notifications/progress");
    assert_eq!(
        progress,
        [
            json!({"progressToken": "p-1", "progress": 1.0, "total": 3.0, "message": "first"}),
            json!({"progressToken": "p-1", "progress": 2.0, "total": 3.0}),
            json!({"progressToken": "p-1", "progress": 3.0, "total": 3.0}),
        ],
        "a repeated value is not sent (progress must increase)"
    );
    assert_eq!(text(answer(&seen, "with")), "stepped");
    assert!(notes_before(&seen, "without", "notifications/progress").is_empty());

    // 500 progress and 500 log calls at once: a bounded burst reaches the client, then the answer.
    let flood = notes_before(&seen, "flood", "notifications/progress").len()
        + notes_before(&seen, "flood", "notifications/message").len();
    assert!((32..=40).contains(&flood), "{flood} notifications passed");
    assert_eq!(text(answer(&seen, "flood")), "flooded");
}

#[test]
fn mcp_log_messages_follow_the_level_the_client_set() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let set = |id: &str, level: &str| json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}});
    let seen = stdio_messages(
        scripts.path(),
        &[],
        &session(vec![
            call("default", "chatty", json!({})),
            set("to-debug", "debug"),
            call("debug", "chatty", json!({})),
            set("to-error", "error"),
            call("error", "chatty", json!({})),
            call("bad", "bad_log", json!({})),
        ]),
    );
    let init = answer(&seen, "init");
    assert_eq!(init["capabilities"]["logging"], json!({}), "{init}");
    assert_eq!(answer(&seen, "to-debug"), &json!({}));
    let levels = |id: &str| -> Vec<String> {
        notes_before(&seen, id, "notifications/message")
            .iter()
            .map(|m| {
                assert_eq!(m["logger"], "chatty");
                format!(
                    "{}={}",
                    m["level"].as_str().unwrap_or(""),
                    m["data"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(
        levels("default"),
        ["warning=w", "error=e"],
        "warning and up by default"
    );
    assert_eq!(
        levels("debug"),
        ["debug=d", "info=i", "warning=w", "error=e"]
    );
    assert_eq!(levels("error"), ["error=e"]);
    let bad = answer(&seen, "bad");
    assert_eq!(bad["isError"], true, "{bad}");
}

#[test]
fn kiln_call_logs_a_tools_messages_to_stderr_and_refuses_an_unknown_level() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let out = kiln(
        &[
            "call",
            "chatty",
            "{}",
            "--no-stdlib",
            "--scripts",
            ".",
            "-v",
        ],
        scripts.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(" w") && err.contains(" e"), "{err}");
    let out = kiln(
        &["call", "bad_log", "{}", "--no-stdlib", "--scripts", "."],
        scripts.path(),
    );
    assert!(!out.status.success());
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("log(): unknown level \\\"loud\\\"")
            || all.contains("log(): unknown level \"loud\""),
        "{all}"
    );
}

#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl CallObserver for Seen {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let line = format!(
            "progress {progress}/{} {}",
            total.unwrap_or(0.0),
            message.unwrap_or_default()
        );
        self.0.lock().expect("seen").push(line);
    }
    fn log(&self, level: LogLevel, message: String) {
        self.0
            .lock()
            .expect("seen")
            .push(format!("{} {message}", level.as_str()));
    }
}

#[test]
fn a_native_tool_returns_content_and_reports_to_the_library_callers_observer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = NativeTool::new("chart", |_args: Value, ctx: &kiln::CallContext| {
        let ctx = ctx.clone();
        async move {
            ctx.progress(1.0, Some(2.0), Some("drawing"))
                .map_err(kiln::ToolFailure::tool_error)?;
            ctx.log(LogLevel::Notice, "drawn");
            Ok(kiln::content::to_result(&[
                Content::text("chart"),
                Content::image(PNG, "image/png"),
            ]))
        }
    })
    .description("Draws a chart");
    let broken = NativeTool::new(
        "broken",
        |_args: Value, _ctx: &kiln::CallContext| async move {
            Ok(kiln::content::to_result(&[Content::audio(
                "AAAA",
                "image/png",
            )]))
        },
    );
    let host = Host::builder()
        .workspace(dir.path())
        .stdlib(false)
        .tool(chart)
        .tool(broken)
        .build()
        .expect("host");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let seen = Arc::new(Seen::default());
    let opts = CallOptions {
        observer: Some(seen.clone()),
        ..CallOptions::default()
    };
    let outcome = rt
        .block_on(host.call("chart", json!({}), opts))
        .expect("call");
    let value = outcome.result.clone().expect("ok");
    let blocks = kiln::content::from_result(&value)
        .expect("content")
        .expect("valid");
    assert_eq!(blocks[1], Content::image(PNG, "image/png"));
    assert_eq!(outcome.model_text(), "chart\n[image image/png, 70 bytes]");
    assert_eq!(
        *seen.0.lock().expect("seen"),
        ["progress 1/2 drawing", "notice drawn"]
    );

    let outcome = rt
        .block_on(host.call("broken", json!({}), CallOptions::default()))
        .expect("call");
    let failure = outcome.result.expect_err("a bad block fails");
    assert_eq!(failure.kind.as_str(), "invalid_output");
    assert!(
        failure
            .message
            .contains("$content[0] (audio): mime type \"image/png\" is not an audio type"),
        "{}",
        failure.message
    );
}

#[test]
fn kiln_definitions_describe_the_content_progress_and_log_functions() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let out = kiln(
        &[
            "definitions",
            "--no-stdlib",
            "--scripts",
            ".",
            "-o",
            "k.d.rhai",
        ],
        scripts.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let defs = std::fs::read_to_string(scripts.path().join("k.d.rhai")).expect("definitions");
    // Registered plainly (Rhai names neither their parameters nor what they return), each is
    // written with the table's parameter names and types and its return type, under the
    // table's signature as its doc comment.
    for (table, line) in [
        (
            "image(data: string, mime: string) -> Content",
            "fn image(data: string, mime: string) -> Content;",
        ),
        (
            "audio(data: string, mime: string) -> Content",
            "fn audio(data: string, mime: string) -> Content;",
        ),
        (
            "resource_block(uri: string, text: string, mime: string) -> Content",
            "fn resource_block(uri: string, text: string, mime: string) -> Content;",
        ),
        (
            "resource(uri: string, text: string, mime: string) -> Content",
            "fn resource(uri: string, text: string, mime: string) -> Content;",
        ),
        (
            "resource_blob_block(uri: string, blob: string, mime: string) -> Content",
            "fn resource_blob_block(uri: string, blob: string, mime: string) -> Content;",
        ),
        (
            "resource_blob(uri: string, blob: string, mime: string) -> Content",
            "fn resource_blob(uri: string, blob: string, mime: string) -> Content;",
        ),
        (
            "progress(done: number[, total: number[, message: string]]) -> ()",
            "fn progress(done: number) -> ();",
        ),
        (
            "progress(done: number[, total: number[, message: string]]) -> ()",
            "fn progress(done: number, total: number, message: string) -> ();",
        ),
        (
            "log(level: string, message: any) -> ()",
            "fn log(level: string, message: ?) -> ();",
        ),
    ] {
        let lines: Vec<&str> = defs.lines().collect();
        let described = lines.iter().enumerate().any(|(i, doc)| {
            let fn_line = (lines[i..].iter())
                .find(|l| !l.starts_with("///"))
                .unwrap_or(&"");
            *doc == format!("/// `{table}`") && *fn_line == line
        });
        assert!(
            described,
            "{line} under /// `{table}` missing from:\n{defs}"
        );
    }
    assert!(
        !defs
            .lines()
            .any(|l| l.starts_with("fn image(") && l.contains('?')),
        "{defs}"
    );
}

#[test]
fn content_from_a_mounted_mcp_server_is_served_on_as_content() {
    // kiln both ways: one `kiln mcp` mounted into another keeps the image a content block.
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let inner = format!(
        "inner={} mcp --no-stdlib --scripts {}",
        kiln_bin().display(),
        scripts.path().display()
    );
    let outer = tempfile::tempdir().expect("outer workspace");
    let seen = stdio_messages(
        outer.path(),
        &["--mcp", &inner, "--caps", "mcp:inner"],
        &session(vec![call("mixed", "inner__mixed", json!({}))]),
    );
    let mixed = answer(&seen, "mixed");
    let types: Vec<&str> = mixed["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|b| b["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["text", "image", "resource", "resource"], "{mixed}");
    assert_eq!(mixed["content"][1]["data"], PNG);
}
