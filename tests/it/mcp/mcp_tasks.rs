//! Tools declared `.task(...)` served as MCP tasks (the tasks extension) to a client that
//! declared it: the task is the same call as ever (the guard, the run log), its questions wait
//! in the task until `tasks/update` answers them, a cancel stops its handler, and a client
//! without the extension is answered in the call or refused. The wire shapes are the
//! conformance suite's (`tasks-*` in mcp_conformance.rs).

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TASKS: &str = r#"
tool("report").description("Writes a report, slowly").param("topic", "string")
    .requires(["store:reports"])
    .task("optional")
    .handler(|args| { sleep(0.3); store_set("reports", args.topic, "done"); `report on ${args.topic}` });
tool("confirm").description("Asks first").requires(["elicitation"]).task("optional")
    .handler(|args| {
        let r = elicit("Go ahead?", #{ ok: #{ "type": "boolean", required: true } });
        `ok=${r.content.ok}`
    });
tool("forever").description("Never ends on its own").task("required")
    .handler(|args| { sleep(60); "late" });
tool("later").description("Answers in the call unless it goes to the background")
    .task("optional", #{ start: "background" })
    .handler(|args| { let b = background(); sleep(0.2); `background=${b}` });
"#;

fn declaring_tasks(s: &Scripts, caps: &str) -> StdioMcp {
    StdioMcp::start_declaring(
        s.path(),
        &["--no-stdlib", "--scripts", ".", "--caps", caps],
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
}

/// Polls `tasks/get` until the task has `status` (or any end), for at most 10 s.
fn poll(mcp: &mut StdioMcp, id: &mut u32, task: &str, status: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        *id += 1;
        let got = mcp.rpc(*id, "tasks/get", json!({"taskId": task}));
        let now = got["result"]["status"].as_str().unwrap_or("").to_string();
        let ended = ["completed", "failed", "cancelled"].contains(&now.as_str());
        if now == status || ended || Instant::now() > end {
            return got["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn task_id(created: &Value) -> String {
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId: {created}"))
        .to_string()
}

#[test]
fn a_task_is_the_same_call_through_the_guard_and_the_run_log_answered_when_polled() {
    let s = Scripts::new(&[("tasks.rhai", TASKS)]);
    let mut mcp = declaring_tasks(&s, "store:reports,elicitation");
    let created = mcp.rpc(
        1,
        "tools/call",
        json!({"name": "report", "arguments": {"topic": "q3"}}),
    );
    let task = task_id(&created);
    let mut id = 1;
    let done = poll(&mut mcp, &mut id, &task, "completed");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "report on q3");
    // Its arguments were validated like any call's: the task of a bad call completes as
    // the tool error the call would have answered.
    let bad = mcp.rpc(20, "tools/call", json!({"name": "report", "arguments": {}}));
    let bad_task = task_id(&bad);
    let failed = poll(&mut mcp, &mut id, &bad_task, "completed");
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let said = failed["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        said.contains("\"topic\" is a required property"),
        "{failed}"
    );
    drop(mcp);

    // Without the grant the guard refuses inside the task.
    let mut ungranted = declaring_tasks(&s, "elicitation");
    let created = ungranted.rpc(
        1,
        "tools/call",
        json!({"name": "report", "arguments": {"topic": "q4"}}),
    );
    let task = task_id(&created);
    let mut id = 1;
    let refused = poll(&mut ungranted, &mut id, &task, "completed");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let said = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(said.contains("store:reports"), "{refused}");
    drop(ungranted);

    // Every task is a logged call.
    let out = kiln(&["logs", "--json", "--tool", "report"], s.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let errors: Vec<bool> = runs
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["is_error"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(errors.len(), 3, "{runs}");
    assert_eq!(errors.iter().filter(|e| **e).count(), 2, "{runs}");
}

#[test]
fn a_tasks_question_waits_in_the_task_until_the_client_answers_it() {
    let s = Scripts::new(&[("tasks.rhai", TASKS)]);
    let mut mcp = declaring_tasks(&s, "elicitation");
    let task = task_id(&mcp.rpc(1, "tools/call", json!({"name": "confirm", "arguments": {}})));
    let mut id = 1;
    let waiting = poll(&mut mcp, &mut id, &task, "input_required");
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let requests = waiting["inputRequests"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(requests.len(), 1, "{waiting}");
    let (key, request) = requests.iter().next().expect("one question");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Go ahead?");
    let ack = mcp.rpc(
        50,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {key: {"action": "accept", "content": {"ok": true}}}}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = poll(&mut mcp, &mut id, &task, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "ok=true", "{done}");
}

#[test]
fn a_cancelled_task_stops_its_handler_and_a_client_without_tasks_is_answered_or_refused() {
    let s = Scripts::new(&[("tasks.rhai", TASKS)]);
    let mut mcp = declaring_tasks(&s, "elicitation");
    let task = task_id(&mcp.rpc(1, "tools/call", json!({"name": "forever", "arguments": {}})));
    let asked = Instant::now();
    let ack = mcp.rpc(2, "tasks/cancel", json!({"taskId": task}));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let mut id = 2;
    let ended = poll(&mut mcp, &mut id, &task, "cancelled");
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the handler stopped at once"
    );
    let unknown = mcp.rpc(90, "tasks/get", json!({"taskId": "no-such-task"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A tool that starts at `background()` becomes a task there.
    let later = task_id(&mcp.rpc(91, "tools/call", json!({"name": "later", "arguments": {}})));
    let done = poll(&mut mcp, &mut id, &later, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "background=true");
    drop(mcp);

    let mut plain = StdioMcp::start(
        s.path(),
        &["--no-stdlib", "--scripts", ".", "--caps", "store:reports"],
    );
    let answered = plain.rpc(
        1,
        "tools/call",
        json!({"name": "report", "arguments": {"topic": "now"}}),
    );
    assert_eq!(
        answered["result"]["content"][0]["text"], "report on now",
        "{answered}"
    );
    let refused = plain.rpc(2, "tools/call", json!({"name": "forever", "arguments": {}}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    let later = plain.rpc(3, "tools/call", json!({"name": "later", "arguments": {}}));
    assert_eq!(
        later["result"]["content"][0]["text"], "background=false",
        "{later}"
    );
    let gated = plain.rpc(4, "tasks/get", json!({"taskId": "x"}));
    assert_eq!(gated["error"]["code"], -32021, "{gated}");
}

#[test]
fn a_wrong_task_declaration_is_a_load_error_at_its_place() {
    let s = Scripts::new(&[(
        "bad.rhai",
        r#"tool("a").task("sometimes").handler(|args| 1);
tool("b").task("optional", #{ start: "later" }).handler(|args| 1);
tool("c").task("optional").task("required").handler(|args| 1);
"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "bad.rhai:1:11: tool \"a\": .task(\"sometimes\"): the mode is \"optional\"",
        "bad.rhai:2:11: tool \"b\": .task(...): start is \"call\" or \"background\"",
        "bad.rhai:3:28: tool \"c\": .task(...) is given twice",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

fn stateless(url: &str, client: &str, method: &str, params: Value) -> Value {
    let caps = crate::mcp::mcp_stateless::with_tasks();
    crate::mcp::mcp_stateless::request(url, client, caps, "", method, params).message
}

#[test]
fn a_task_is_seen_only_by_the_caller_that_started_it() {
    let s = Scripts::new(&[("tasks.rhai", TASKS)]);
    let server = crate::mcp::McpHttp::start(
        s.path(),
        &["--scripts", ".", "--caps", "store:reports"],
        &[],
    );
    let created = stateless(
        &server.url,
        "alice-app",
        "tools/call",
        json!({"name": "report", "arguments": {"topic": "q1"}}),
    );
    let task = task_id(&created);
    let mine = stateless(
        &server.url,
        "alice-app",
        "tasks/get",
        json!({"taskId": task}),
    );
    assert_eq!(mine["result"]["taskId"], task.as_str(), "{mine}");
    for method in ["tasks/get", "tasks/cancel"] {
        let theirs = stateless(&server.url, "bob-app", method, json!({"taskId": task}));
        assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
    }
}

/// One 2025-11-25 session on `kiln mcp --http`: its headers (its id among them), sent with
/// every request.
struct HttpSession {
    url: String,
    headers: Vec<(String, String)>,
}

impl HttpSession {
    /// Opens a session as client `client`, declaring the tasks extension.
    fn open(url: &str, client: &str) -> HttpSession {
        let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        HttpSession {
            url: url.to_string(),
            headers: crate::approvals::tool_asks_http::mcp_session(
                url,
                "2025-11-25",
                tasks,
                client,
            ),
        }
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        crate::approvals::tool_asks_http::borrowed(&self.headers)
    }

    /// Request `id`'s answer (from the event stream the server answers with).
    fn rpc(&self, id: u32, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (_, _, text) = http("POST", &self.url, &self.headers(), Some(&body));
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == id)
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or(Value::String(text))
    }
}

#[test]
fn a_task_belongs_to_its_session_even_when_both_sessions_are_the_same_client() {
    let s = Scripts::new(&[("tasks.rhai", TASKS)]);
    let server = crate::mcp::McpHttp::start(s.path(), &["--scripts", "."], &[]);
    // The same client name, so the same actor ("mcp:same-app"): only the session differs.
    let a = HttpSession::open(&server.url, "same-app");
    let b = HttpSession::open(&server.url, "same-app");
    let task = task_id(&a.rpc(1, "tools/call", json!({"name": "forever", "arguments": {}})));
    for (id, method) in [(2, "tasks/get"), (3, "tasks/cancel")] {
        let theirs = b.rpc(id, method, json!({"taskId": task}));
        assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
        // The same answer as for a task that does not exist.
        let none = b.rpc(id + 10, method, json!({"taskId": "no-such-task"}));
        let unknown = none["error"]["message"].as_str().unwrap_or("");
        let said = theirs["error"]["message"].as_str().unwrap_or("");
        assert_eq!(
            said.replace(task.as_str(), "ID"),
            unknown.replace("no-such-task", "ID"),
            "{theirs} vs {none}"
        );
    }
    let mine = a.rpc(4, "tasks/get", json!({"taskId": task}));
    assert_eq!(
        mine["result"]["status"], "working",
        "B's cancel did not reach it: {mine}"
    );
    let ack = a.rpc(5, "tasks/cancel", json!({"taskId": task}));
    assert!(ack.get("result").is_some(), "{ack}");
}
