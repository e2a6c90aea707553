//! MCP Apps (the `io.modelcontextprotocol/ui` extension) on `kiln mcp`: a tool's `.ui(...)`
//! links its page, the page is served as the extension's HTML type with its CSP and
//! permissions, a page-only tool is listed only to a client that shows pages, an edit of the
//! page reaches a subscribed client, and `kiln check` refuses a wrong declaration at its place.

use crate::common::{Scripts, kiln_bin};
use crate::mcp::StdioMcp;
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

const APPS: &str = "io.modelcontextprotocol/ui";
const MIME: &str = "text/html;profile=mcp-app";

fn fixture(name: &str) -> String {
    let path = crate::common::repo().join("tests/fixtures/apps").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The order tools and their page, copied from tests/fixtures/apps.
fn orders() -> Scripts {
    Scripts::new(&[
        ("orders.rhai", &fixture("orders.rhai")),
        ("order_form.html", &fixture("order_form.html")),
    ])
}

fn shows_pages() -> Value {
    json!({"extensions": {APPS: {"mimeTypes": [MIME]}}})
}

fn tool<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["result"]["tools"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn mcp_apps_a_tool_links_its_page_and_kiln_serves_it() {
    let scripts = orders();
    let mut mcp = StdioMcp::start_declaring(
        scripts.path(),
        &["--no-stdlib", "--scripts", "."],
        shows_pages(),
    );
    let list = mcp.rpc(1, "tools/list", json!({}));
    let place = tool(&list, "place_order").expect("place_order listed");
    assert_eq!(
        place["_meta"]["ui"],
        json!({"resourceUri": "ui://orders/form"})
    );
    assert_eq!(place["_meta"]["ui/resourceUri"], "ui://orders/form");
    let status = tool(&list, "order_status").expect("a page-only tool is listed to a host");
    assert_eq!(status["_meta"]["ui"]["visibility"], json!(["app"]));

    let read = mcp.rpc(2, "resources/read", json!({"uri": "ui://orders/form"}));
    let page = &read["result"]["contents"][0];
    assert_eq!(page["mimeType"], MIME, "{read}");
    assert_eq!(page["text"], fixture("order_form.html"));
    assert_eq!(page["_meta"]["ui"]["prefersBorder"], true, "{read}");
    let listed = mcp.rpc(3, "resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().expect("resources");
    assert!(
        resources
            .iter()
            .any(|r| r["uri"] == "ui://orders/form" && r["mimeType"] == MIME),
        "{listed}"
    );
    let called = mcp.rpc(
        4,
        "tools/call",
        json!({"name": "order_status", "arguments": {"item": "kiln"}}),
    );
    assert_eq!(called["result"]["structuredContent"]["status"], "packed");
    let placed = mcp.rpc(
        5,
        "tools/call",
        json!({"name": "place_order", "arguments": {"item": "kiln", "qty": 2}}),
    );
    assert_eq!(placed["result"]["structuredContent"]["ordered"], 2);
    // As ChatGPT's Apps SDK reads it: the result names its page too.
    assert_eq!(
        placed["result"]["_meta"]["ui"]["resourceUri"], "ui://orders/form",
        "{placed}"
    );
}

#[test]
fn mcp_apps_a_client_without_pages_never_sees_a_page_only_tool() {
    let scripts = orders();
    let mut mcp = StdioMcp::start(scripts.path(), &["--no-stdlib", "--scripts", "."]);
    let init_caps = mcp.rpc(1, "tools/list", json!({}));
    assert!(tool(&init_caps, "place_order").is_some(), "{init_caps}");
    assert!(tool(&init_caps, "order_status").is_none(), "{init_caps}");
    let called = mcp.rpc(
        2,
        "tools/call",
        json!({"name": "order_status", "arguments": {"item": "kiln"}}),
    );
    assert!(
        called["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool \"order_status\"")),
        "{called}"
    );
}

#[test]
fn mcp_apps_an_edited_page_reaches_a_subscribed_client() {
    let scripts = orders();
    let mut mcp = StdioMcp::start_declaring(
        scripts.path(),
        &["--no-stdlib", "--scripts", "."],
        shows_pages(),
    );
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp.rpc(1, "resources/subscribe", json!({"uri": "ui://orders/form"}));
    let edited = "<!doctype html><html lang=\"en\"><title>v2</title><p>second version</p></html>";
    // The watcher starts with the session; write until it sees the edit.
    let (mut updated, mut text) = (false, Value::Null);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 10;
    while Instant::now() < deadline && !(updated && text == edited) {
        std::fs::write(scripts.path().join("order_form.html"), edited).expect("edit the page");
        std::thread::sleep(Duration::from_millis(400));
        id += 1;
        mcp.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": {"uri": "ui://orders/form"}}),
        );
        loop {
            let msg = mcp.next();
            if msg["method"] == "notifications/resources/updated" {
                updated |= msg["params"]["uri"] == "ui://orders/form";
            }
            if msg["id"] == id {
                text = msg["result"]["contents"][0]["text"].clone();
                break;
            }
        }
    }
    assert_eq!(text, edited, "the page read after the edit");
    assert!(updated, "no notifications/resources/updated for the page");
}

fn check(files: &[(&str, &str)]) -> String {
    let scripts = Scripts::new(files);
    let out = Command::new(kiln_bin())
        .args(["check", "--no-stdlib", "--scripts", "."])
        .current_dir(scripts.path())
        .output()
        .expect("kiln check");
    assert!(!out.status.success(), "kiln check passed {files:?}");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn mcp_apps_kiln_check_refuses_a_wrong_page_at_its_place() {
    let tool = |ui: &str| format!("tool(\"t\").description(\"d\")\n  {ui}\n  .handler(|a| 1);\n");
    let cases = [
        (
            tool(r#".ui("orders/form", #{ html: "<p>x</p>" })"#),
            "starts with ui://",
        ),
        (
            tool(r#".ui("ui://a", #{ file: "missing.html" })"#),
            "cannot read ./missing.html",
        ),
        (
            tool(r#".ui("ui://a", #{ file: "../up.html" })"#),
            "inside the script's folder",
        ),
        (
            tool(r#".ui("ui://a", #{ html: "<p>x</p>", visibility: ["user"] })"#),
            "visibility \"user\"",
        ),
        (
            tool(
                r#".ui("ui://a", #{ html: "x", csp: #{ connect_domains: ["https://a.com; script-src *"] } })"#,
            ),
            "is not an origin",
        ),
        (
            tool(r#".ui("ui://a", #{ html: "x", permissions: ["usb"] })"#),
            "no permission \"usb\"",
        ),
        (
            tool(r#".ui("ui://a", #{ visibility: ["app"] })"#),
            "which no tool gives",
        ),
    ];
    for (source, wanted) in cases {
        let said = check(&[("t.rhai", &source)]);
        assert!(said.contains(wanted), "{source}\nsaid: {said}");
        assert!(said.contains("t.rhai:"), "no place in: {said}");
    }
    let said = check(&[(
        "t.rhai",
        &tool(r#".ui("ui://a", #{ html: "x", colour: 1 })"#),
    )]);
    assert!(said.contains("t.rhai:2:4"), "{said}");
}

#[test]
fn mcp_apps_an_agent_model_never_sees_a_page_only_tool() {
    let agent = r#"
agent("clerk").description("Lists its tools").provider("script")
    .tools(["place_order", "order_status"])
    .planner(|messages, tools| { let names = ""; for t in tools { names += t.name + ","; } #{ text: names } });
"#;
    let scripts = orders();
    std::fs::write(scripts.path().join("clerk.rhai"), agent).expect("agent");
    let out = Command::new(kiln_bin())
        .args([
            "ask",
            "--no-stdlib",
            "--scripts",
            ".",
            "clerk",
            "which tools?",
        ])
        .current_dir(scripts.path())
        .output()
        .expect("kiln ask");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("place_order"), "{said}");
    assert!(!said.contains("order_status"), "{said}");
}

#[test]
fn mcp_apps_kiln_init_app_scaffolds_a_tool_with_a_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let init = Command::new(kiln_bin())
        .args(["init", "--app", "."])
        .current_dir(dir.path())
        .output()
        .expect("kiln init");
    assert!(init.status.success(), "{init:?}");
    let checked = Command::new(kiln_bin())
        .arg("check")
        .current_dir(dir.path())
        .output()
        .expect("kiln check");
    assert!(checked.status.success(), "{checked:?}");
    let mut mcp = StdioMcp::start_declaring(dir.path(), &["--no-stdlib"], shows_pages());
    let list = mcp.rpc(1, "tools/list", json!({}));
    let stats = tool(&list, "word_stats").expect("word_stats listed");
    assert_eq!(stats["_meta"]["ui"]["resourceUri"], "ui://stats/page");
    let read = mcp.rpc(2, "resources/read", json!({"uri": "ui://stats/page"}));
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("ui/initialize"), "{read}");
    let called = mcp.rpc(
        3,
        "tools/call",
        json!({"name": "word_stats", "arguments": {"text": "a kiln with a face"}}),
    );
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"words": 5, "letters": 14, "longest": "kiln"})
    );
}

/// The npm folder of the ext-apps SDK's host for the browser checks (tests/peers/apps).
fn apps_deps() -> Option<String> {
    std::env::var("KILN_APPS_DEPS")
        .ok()
        .filter(|d| !d.is_empty())
}

/// A kiln tool's page in the MCP Apps SDK's own host side (`AppBridge` from
/// `@modelcontextprotocol/ext-apps`, the MCP client from `@modelcontextprotocol/client`) in
/// Chromium under Playwright, against `kiln mcp --http`: the page renders behind a sandbox
/// proxy on another origin, the bridge exchanges `ui/initialize`, the tool's input and result,
/// and the page's refresh button calls the page-only `order_status` back through kiln.
#[test]
#[ignore = "needs KILN_APPS_DEPS (npm, tests/peers/apps/package.json) and Chromium; .ci/run runs it"]
fn mcp_apps_a_kiln_page_runs_in_the_sdk_host() {
    let Some(deps) = apps_deps() else {
        panic!("set KILN_APPS_DEPS to the npm folder of tests/peers/apps/package.json");
    };
    let scripts = orders();
    let server = crate::mcp::McpHttp::start(scripts.path(), &["--scripts", "."], &[]);
    let shots = tempfile::tempdir().expect("shots");
    let out = Command::new("python3")
        .arg(crate::common::repo().join("tests/peers/apps/sdk_host_check.py"))
        .args(["--app", "order_form"])
        .env("KILN_MCP_URL", &server.url)
        .env("KILN_APPS_DEPS", &deps)
        .env("KILN_SHOTS", shots.path())
        .output()
        .expect("python3");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.trim_end().ends_with("ok"), "{said}");
    assert!(said.contains("bridge in  tools/call"), "{said}");
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The console's side of MCP Apps over HTTP (the browser suite drives it in Chromium): the
/// pages a caller may see, a page read through the call path, a page's calls kept to tools that
/// show a page and let apps call them, and the sandbox origin that serves nothing but the proxy,
/// under the page's CSP and framed only by the console that asked.
#[test]
fn mcp_apps_the_console_keeps_a_page_to_its_own_calls_and_origin() {
    use crate::common::{get, http, post};
    let scripts = orders();
    std::fs::write(
        scripts.path().join("wipe.rhai"),
        r#"tool("wipe").description("Wipes").param("what", "string").handler(|a| `wiped ${a.what}`);"#,
    )
    .expect("wipe");
    let db = scripts.path().join("k.db");
    let serve = crate::doors::serve::Serve::start(scripts.path(), &db, &["--no-stdlib"], &[]);
    let url = &serve.url;
    let (status, apps) = get(&format!("{url}/v1/apps"));
    assert_eq!(status, 200, "{apps}");
    let port = apps["sandbox_port"].as_u64().expect("a sandbox port");
    assert_eq!(apps["tools"]["order_status"]["app_only"], true, "{apps}");
    assert!(apps["tools"].get("wipe").is_none(), "{apps}");

    let (status, page) = get(&format!("{url}/v1/apps/place_order"));
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["html"], fixture("order_form.html"));
    assert_eq!(page["meta"]["prefersBorder"], true, "{page}");
    assert_eq!(
        page["tool"]["_meta"]["ui"]["resourceUri"],
        "ui://orders/form"
    );
    let (status, none) = get(&format!("{url}/v1/apps/wipe"));
    assert_eq!(status, 404, "{none}");

    let call = |name: &str, args: Value| {
        post(
            &format!("{url}/v1/apps/place_order/call"),
            &json!({"name": name, "arguments": args}),
            &[],
        )
    };
    let (status, ok) = call("order_status", json!({"item": "kiln"}));
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["structuredContent"]["status"], "packed", "{ok}");
    assert!(
        ok["_meta"]["kiln/run"].is_string(),
        "the call is a run: {ok}"
    );
    let (status, refused) = call("wipe", json!({"what": "everything"}));
    assert_eq!(status, 403, "a tool with no page is no app's: {refused}");
    let (status, bad) = call("order_status", json!({"item": 3}));
    assert_eq!(status, 200, "{bad}");
    assert_eq!(bad["isError"], true, "arguments are validated: {bad}");
    let (_, runs) = get(&format!("{url}/v1/runs"));
    assert!(!runs.to_string().contains("call:wipe"), "{runs}");

    let (_, headers, _) = http("GET", &format!("{url}/ui"), &[], None);
    let console_csp = header(&headers, "content-security-policy");
    assert!(
        console_csp.ends_with(&format!("; frame-src http://127.0.0.1:{port}")),
        "{console_csp}"
    );
    let sandbox = format!("http://127.0.0.1:{port}");
    let host = url.trim_end_matches('/');
    let csp = r#"{"connectDomains":["https://api.example.com"]}"#;
    let proxy = format!(
        "{sandbox}/sandbox?host={}&csp={}",
        host.replace(':', "%3A").replace('/', "%2F"),
        csp.replace('"', "%22")
            .replace(':', "%3A")
            .replace('/', "%2F")
    );
    let (status, headers, body) = http("GET", &proxy, &[], None);
    assert_eq!(status, 200, "{body}");
    let page_csp = header(&headers, "content-security-policy");
    assert!(
        page_csp.contains("connect-src https://api.example.com;"),
        "{page_csp}"
    );
    assert!(page_csp.contains("frame-src 'none'"), "{page_csp}");
    assert!(
        page_csp.ends_with(&format!("frame-ancestors {host}")),
        "{page_csp}"
    );
    assert!(body.contains("/sandbox.js"), "{body}");
    let (status, _, _) = http(
        "GET",
        &format!("{sandbox}/sandbox?host=javascript%3Aalert(1)"),
        &[],
        None,
    );
    assert_eq!(status, 400);
    let (status, _, _) = http("GET", &format!("{sandbox}/v1/runs"), &[], None);
    assert_eq!(status, 404, "the sandbox origin serves no API");
}
