//! The SQLite database: run log, sessions, the store, durability under SIGKILL, concurrency.

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const SHOP: &str = r#"
tool("lookup").param("sku", "string").handler(|a| #{ sku: a.sku, price: 4.5 });
tool("count").handler(|a, ctx| { ctx.state.n = (ctx.state.n ?? 0) + 1; #{ n: ctx.state.n, restored: ctx.restored } });
tool("slow").handler(|a| { sleep(30); "late" });
agent("shop").provider("anthropic").model("m").tools(["lookup", "count", "slow", "calculator"]).max_tool_iterations(12);
"#;

fn shop() -> Scripts {
    Scripts::new(&[("shop.rhai", SHOP)])
}

fn ask_shop(s: &Scripts, mock: &Mock, prompt: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "shop",
        prompt,
        "--scripts",
        ".",
        "--base-url",
        mock.url.as_str(),
    ];
    args.extend_from_slice(extra);
    ask(&args, s.path())
}

fn logs_json(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["logs", "--json"];
    args.extend_from_slice(extra);
    let out = kiln(&args, dir);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("logs json")
}

#[test]
fn every_run_message_and_tool_call_is_logged_and_filterable() {
    let s = shop();
    let mock = Mock::start(&json!({"loop": true, "turns": [
        {"text": "Looking. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}], "usage": {"input_tokens": 11, "output_tokens": 3}},
        {"text": "4.50", "usage": {"input_tokens": 20, "output_tokens": 2}}
    ]}));
    assert!(ask_shop(&s, &mock, "price of SKU-1?", &[]).status.success());
    let mock2 = Mock::start(&json!({"turns": [{"text": "no tools"}]}));
    assert!(ask_shop(&s, &mock2, "hello", &[]).status.success());

    let all = logs_json(s.path(), &[]);
    let runs = all.as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    let first = &runs[1];
    assert_eq!(first["prompt"], "price of SKU-1?");
    assert_eq!(first["status"], "ok");
    assert_eq!(first["answer"], "4.50");
    assert_eq!(
        (
            first["input_tokens"].as_i64(),
            first["output_tokens"].as_i64()
        ),
        (Some(31), Some(5))
    );
    assert_eq!(first["tool_calls"][0]["name"], "lookup");
    assert_eq!(first["tool_calls"][0]["outcome"]["result"]["price"], 4.5);
    assert!(
        first["tool_calls"][0]["script_version"]
            .as_str()
            .is_some_and(|v| v.len() == 16),
        "which script version ran it"
    );
    let roles: Vec<&str> = first["messages"]
        .as_array()
        .expect("m")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant"]);

    assert_eq!(
        logs_json(s.path(), &["--tool", "lookup"])
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        logs_json(s.path(), &["--agent", "nobody"])
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        logs_json(s.path(), &["-n", "1"]).as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        logs_json(s.path(), &["--since", "10m"])
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let text = kiln(&["logs"], s.path());
    assert!(
        stdout(&text).contains("→ lookup({\"sku\":\"SKU-1\"})"),
        "{}",
        stdout(&text)
    );
    let bad = kiln(&["logs", "--since", "5 parsecs"], s.path());
    assert_eq!(bad.status.code(), Some(2));

    for entry in std::fs::read_dir(s.path().join(".kiln")).expect(".kiln") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("db file");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TEST_KEY),
            "no API key in the database files"
        );
    }
}

#[test]
fn sessions_continue_with_messages_and_restored_state() {
    let s = shop();
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "count", "args": {}}]}, {"text": "one"},
        {"tool_calls": [{"name": "count", "args": {}}]}, {"text": "two"}
    ]}));
    assert!(
        ask_shop(&s, &mock, "count once", &["--session", "tally"])
            .status
            .success()
    );
    let out = ask_shop(&s, &mock, "count again", &["--session", "tally", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        v["tool_calls"][0]["outcome"]["result"],
        json!({"n": 2, "restored": true}),
        "state and the restored mark came back"
    );
    let third = &mock.requests()[2]["body"]["messages"];
    assert_eq!(
        third[0]["content"], "count once",
        "the earlier conversation is sent again"
    );
    assert_eq!(third.as_array().map(Vec::len), Some(5));

    // A session belongs to the agent it was started with.
    std::fs::write(
        s.path().join("clerk.rhai"),
        r#"agent("clerk").provider("anthropic").model("m");"#,
    )
    .expect("write");
    let other = ask(
        &[
            "clerk",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            mock.url.as_str(),
            "--session",
            "tally",
        ],
        s.path(),
    );
    assert!(!other.status.success());
    assert!(
        stderr(&other).contains("session \"tally\" belongs to agent \"shop\", not \"clerk\""),
        "{}",
        stderr(&other)
    );
    assert_eq!(mock.requests().len(), 4, "the refused run sent nothing");

    let list = kiln(&["sessions"], s.path());
    assert!(
        stdout(&list).starts_with("tally  shop  8 messages"),
        "{}",
        stdout(&list)
    );
    let show: Value =
        serde_json::from_str(&stdout(&kiln(&["sessions", "show", "tally"], s.path())))
            .expect("show json");
    assert_eq!(show["state"]["n"], 2);
    assert!(
        kiln(&["sessions", "delete", "tally"], s.path())
            .status
            .success()
    );
    let gone = kiln(&["sessions", "show", "tally"], s.path());
    assert!(stderr(&gone).contains("no session named \"tally\""));
}

#[test]
fn the_store_persists_across_processes_per_workspace() {
    let s = shop();
    let set = kiln(
        &[
            "call",
            "storage",
            r#"{"operation": "set", "key": "colour", "value": "celadon"}"#,
            "--caps",
            "store",
        ],
        s.path(),
    );
    assert!(set.status.success(), "{}", stdout(&set));
    let get = kiln(
        &[
            "call",
            "storage",
            r#"{"operation": "get", "key": "colour"}"#,
            "--caps",
            "store",
        ],
        s.path(),
    );
    let v: Value = serde_json::from_str(&stdout(&get)).expect("json");
    assert_eq!(v["result"], "celadon");
    let other = Scripts::new(&[]);
    let db = s.path().join(".kiln/kiln.db").display().to_string();
    let elsewhere = kiln(
        &[
            "call",
            "storage",
            r#"{"operation": "get", "key": "colour"}"#,
            "--caps",
            "store",
            "--db",
            &db,
        ],
        other.path(),
    );
    let v: Value = serde_json::from_str(&stdout(&elsewhere)).expect("json");
    assert_eq!(
        v["result"],
        Value::Null,
        "another workspace has its own namespace"
    );
}

#[test]
fn a_run_killed_with_sigkill_leaves_a_database_that_opens_and_a_session_that_continues() {
    let s = shop();
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "2+2"}}]},
        {"tool_calls": [{"name": "slow", "args": {}}]},
        {"text": "never"}
    ]}));
    let child = spawn_ask(
        &[
            "shop",
            "compute",
            "--session",
            "k",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ],
        s.path(),
    );
    mock.wait_for_requests(2);
    std::thread::sleep(std::time::Duration::from_millis(200));
    signal(child.id(), "KILL");
    let mut child = child;
    let _ = child.wait();

    // The CLI opens the database the killed run left (WORKSPACE/.kiln/kiln.db).
    let shown = kiln(&["sessions", "show", "k"], s.path());
    assert!(
        shown.status.success(),
        "the database opens after SIGKILL: {}",
        stderr(&shown)
    );
    let session: Value = serde_json::from_str(&stdout(&shown)).expect("session json");
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        roles,
        vec!["user", "assistant", "tool"],
        "intact up to the last completed step"
    );
    let logs = kiln(&["logs", "--json", "-n", "10"], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    assert_eq!(
        runs[0]["status"], "interrupted",
        "the killed run never ended, and its process is gone"
    );
    assert_eq!(runs[0]["tool_calls"].as_array().map(Vec::len), Some(1));

    let mock2 = Mock::start(&json!({"turns": [{"text": "continued"}]}));
    let out = ask_shop(&s, &mock2, "go on", &["--session", "k"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "continued\n");
    let sent = &mock2.requests()[0]["body"]["messages"];
    assert_eq!(
        sent.as_array().map(Vec::len),
        Some(3),
        "prompt+tool round restored, then the new prompt: {sent}"
    );
}

#[test]
fn two_hundred_concurrent_runs_log_without_lock_errors_while_logs_are_read() {
    let s = shop();
    let db_path = s.path().join("busy.db");
    let mock = Mock::start(&json!({"loop": true, "require_auth": false, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-7"}}]}, {"text": "done"}
    ]}));
    let script = "tool(\"lookup\").param(\"sku\", \"string\").handler(|a| a.sku);\nagent(\"busy\").provider(\"openai\").model(\"m\").base_url(\"BASE\").tools([\"lookup\"]).max_tool_iterations(20);";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rt");
    std::fs::write(
        s.path().join("busy.rhai"),
        script.replace("BASE", &format!("{}/v1", mock.url)),
    )
    .expect("write");
    // Each run is logged (the host has a database) under its own session.
    let host = kiln::Host::builder()
        .scripts(s.path())
        .workspace(s.path())
        .database(&db_path)
        .build()
        .expect("host");

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let dir = s.path().to_path_buf();
        let path = db_path.display().to_string();
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                let out = kiln(&["logs", "--json", "-n", "5", "--db", &path], &dir);
                assert!(
                    out.status.success(),
                    "kiln logs failed while runs were writing: {}",
                    stderr(&out)
                );
                assert!(!stderr(&out).contains("locked"));
                reads += 1;
            }
            reads
        })
    };
    let results = rt.block_on(async {
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let host = host.clone();
                tokio::spawn(async move {
                    let opts = kiln::RunOptions {
                        session: Some(format!("s{i}")),
                        ..Default::default()
                    };
                    host.run("busy", &format!("run {i}"), opts).await
                })
            })
            .collect();
        futures_util::future::join_all(tasks).await
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("reader never failed");
    assert!(reads >= 1);
    // The mock serves its turns in one sequence across all runs, so each run took its own path
    // (a tool call or not, one or more rounds): its log must hold exactly what it did.
    let reports: std::collections::HashMap<String, kiln::RunReport> = results
        .into_iter()
        .map(|r| {
            let report = r.expect("task").expect("run ok");
            (report.run_id.clone(), report)
        })
        .collect();
    let path = db_path.display().to_string();
    let logs = kiln(&["logs", "--json", "-n", "1000", "--db", &path], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 200);
    let mut called = 0;
    let mut sessions = std::collections::HashMap::new();
    for r in runs {
        let id = r["id"].as_str().expect("id");
        let report = &reports[id];
        assert_eq!(
            (&r["status"], &r["answer"], &r["rounds"]),
            (&json!("ok"), &json!(report.answer), &json!(report.rounds)),
            "run {id} logged to its end"
        );
        let logged: Vec<(&Value, &Value, &Value, &Value)> = r["tool_calls"]
            .as_array()
            .expect("tool calls")
            .iter()
            .map(|c| {
                (
                    &c["name"],
                    &c["args"],
                    &c["outcome"]["result"],
                    &c["is_error"],
                )
            })
            .collect();
        let done: Vec<(Value, &Value, &Value, Value)> = report
            .tool_calls
            .iter()
            .map(|c| {
                (
                    json!(c.name),
                    &*c.args,
                    c.outcome.result().unwrap_or(&serde_json::Value::Null),
                    json!(c.is_error),
                )
            })
            .collect();
        let done: Vec<(&Value, &Value, &Value, &Value)> =
            done.iter().map(|(n, a, o, e)| (n, *a, *o, e)).collect();
        assert_eq!(logged, done, "run {id}: its tool calls");
        called += logged.len();
        assert_eq!(
            r["messages"],
            serde_json::to_value(&report.messages).expect("messages json"),
            "run {id}: its messages"
        );
        let session = r["session"].as_str().expect("session").to_string();
        sessions.insert(session, report.messages.len());
    }
    assert!(called >= 100, "the runs called tools: {called}");
    // `kiln sessions`: NAME  AGENT  N messages  WHEN, one line per session.
    let listed = kiln(&["sessions", "--db", &path], s.path());
    let lines: Vec<String> = stdout(&listed).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 200);
    for line in &lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let count: usize = fields[2].parse().expect("message count");
        assert_eq!(Some(&count), sessions.get(fields[0]), "session line {line}");
    }
}

#[test]
fn a_step_that_cannot_be_logged_ends_the_run_before_any_further_tool_runs() {
    let s = shop();
    // The database the runs will be logged to, created with its tables by a host opening it.
    let db_path = s.path().join(".kiln").join("kiln.db");
    drop(
        kiln::Host::builder()
            .stdlib(false)
            .workspace(s.path())
            .database(&db_path)
            .build()
            .expect("host"),
    );
    rusqlite::Connection::open(&db_path)
        .expect("open")
        .execute_batch(
            "CREATE TRIGGER refuse_calls BEFORE INSERT ON steps WHEN NEW.kind = 'tool'
             BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END;",
        )
        .expect("trigger");
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-2"}}]},
        {"text": "4.50"}
    ]}));
    let out = ask_shop(&s, &mock, "price of SKU-1?", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the run log could not record the run's step")
            && stderr(&out).contains("simulated write failure"),
        "{}",
        stderr(&out)
    );
    // The first step's commit fails while the second model request is out (the log is off
    // the critical path); the call that reply asks for never runs, and nothing follows it.
    assert!(
        stderr(&out).contains("lookup({\"sku\":\"SKU-1\"})") && !stderr(&out).contains("SKU-2"),
        "only the first step's tool ran: {}",
        stderr(&out)
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "the request in flight during the failed commit, and none after"
    );
    let runs = logs_json(s.path(), &[]);
    assert_eq!(runs[0]["status"], "error");
    assert!(
        runs[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("simulated write failure")),
        "{}",
        runs[0]
    );
}

#[test]
fn a_broken_store_is_an_error_not_a_missing_key() {
    let s = shop();
    let storage = |args: &str| kiln(&["call", "storage", args, "--caps", "store"], s.path());
    let set = storage(r#"{"operation": "set", "key": "colour", "value": "celadon"}"#);
    assert!(set.status.success(), "{}", stdout(&set));
    // Damage the database behind kiln's back: its key-value table is gone.
    let conn = rusqlite::Connection::open(s.path().join(".kiln/kiln.db")).expect("open");
    conn.execute_batch("DROP TABLE kv").expect("drop kv");
    drop(conn);
    for args in [
        r#"{"operation": "get", "key": "colour"}"#,
        r#"{"operation": "delete", "key": "colour"}"#,
        r#"{"operation": "list"}"#,
    ] {
        let out = storage(args);
        let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
        assert_eq!(out.status.code(), Some(1), "{args}: {v:#}");
        assert_eq!(v["success"], false, "{args}: {v:#}");
        let text = v["error"].to_string();
        assert!(
            text.contains("no such table: kv") && text.contains("kiln.db"),
            "{args}: the database error is named: {v:#}"
        );
    }
}
