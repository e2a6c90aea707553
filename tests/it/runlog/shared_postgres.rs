//! Two `kiln serve` on one PostgreSQL database (issue 62): a session's turns alternated across
//! them, a value stored through one and read through the other, each one's runs listed and
//! read by the other, a stored Response continued on the other; and one killed with SIGKILL
//! mid-run, its run seen as `interrupted` from the other. The real binary, a real PostgreSQL
//! server (`KILN_POSTGRES`, `#[ignore]`d without it), 127.0.0.1.

use crate::common::*;
use crate::doors::serve::{Serve, second_request_carried_the_first, shop_scripts};
use kiln_db::scratch::Scratch;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

fn both(scripts: &Scripts, url: &str) -> (Serve, Serve) {
    let start = || Serve::start(scripts.path(), Path::new(url), &["--caps", "store"], &[]);
    (start(), start())
}

fn store_tools(scripts: &Scripts) {
    std::fs::write(
        scripts.path().join("store.rhai"),
        r#"tool("put").requires("store").param("v", "string").handler(|a| { store_set("ns", "k", a.v); "kept" });
tool("get").requires("store").handler(|a| store_get("ns", "k"));
tool("slow").handler(|a| { sleep(20); "slept" });
tool("nap").handler(|a| { sleep(1); "napped" });
agent("turner").provider("script").tools(["nap"]).planner(|m, t| {
    if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "nap", args: #{} }] } } else { #{ text: `turn ${m.len()}` } }
});
agent("sleeper").provider("script").tools(["slow"]).planner(|m, t| {
    if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "slow", args: #{} }] } } else { #{ text: "up" } }
});"#,
    )
    .expect("write");
}

fn call(serve: &Serve, tool: &str, arguments: Value) -> Value {
    let (status, out) = post(
        &format!("{}/v1/tools/{tool}", serve.url),
        &json!({ "arguments": arguments }),
        &[],
    );
    assert_eq!(status, 200, "{out}");
    out
}

fn runs_of(serve: &Serve) -> Vec<Value> {
    let (status, runs) = get(&format!("{}/v1/runs", serve.url));
    assert_eq!(status, 200, "{runs}");
    runs["runs"].as_array().cloned().unwrap_or_default()
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn two_servers_on_postgres_share_sessions_the_store_runs_and_responses() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    store_tools(&scripts);
    let (a, b) = both(&scripts, scratch.url());

    // A session begun on A continues on B with what A said.
    let mut ids = Vec::new();
    for (serve, input) in [(&a, "My name is Ada."), (&b, "What is my name?")] {
        let body = json!({"agent": "shop", "input": input, "session": "ada"});
        let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
        assert_eq!(
            (status, &run["status"]),
            (200, &json!("completed")),
            "{run}"
        );
        ids.push(run["id"].as_str().unwrap_or_default().to_string());
    }
    second_request_carried_the_first(&mock);
    let (status, session) = get(&format!("{}/v1/sessions/ada", a.url));
    assert_eq!(status, 200, "{session}");
    assert_eq!(
        session["messages"].as_array().map(Vec::len),
        Some(4),
        "{session}"
    );

    // The store is one.
    assert_eq!(call(&a, "put", json!({"v": "from A"}))["result"], "kept");
    let read = call(&b, "get", json!({}));
    assert_eq!(read["result"], "from A", "{read}");

    // Each lists the other's runs and reads their timelines; run ids never collide.
    for serve in [&a, &b] {
        let listed: Vec<String> = runs_of(serve)
            .iter()
            .filter_map(|r| r["id"].as_str().map(str::to_string))
            .collect();
        for id in &ids {
            assert!(listed.contains(id), "{id} not in {listed:?}");
        }
        let (status, run) = get(&format!("{}/v1/runs/{}", serve.url, ids[0]));
        assert_eq!(
            (status, &run["status"]),
            (200, &json!("completed")),
            "{run}"
        );
    }
    assert_ne!(ids[0], ids[1]);

    // A stored Response continues on the other server.
    let (status, first) = post(
        &format!("{}/v1/responses", a.url),
        &json!({"model": "shop", "input": "Remember 7.", "store": true}),
        &[],
    );
    assert_eq!(status, 200, "{first}");
    let body =
        json!({"model": "shop", "input": "Which number?", "previous_response_id": first["id"]});
    let (status, next) = post(&format!("{}/v1/responses", b.url), &body, &[]);
    assert_eq!(status, 200, "{next}");
    let last = mock.requests().pop().expect("a request");
    let sent = last["body"]["messages"].to_string();
    assert!(
        sent.contains("Remember 7.") && sent.contains("Which number?"),
        "{sent}"
    );
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn a_server_killed_on_postgres_leaves_its_run_interrupted_as_the_other_sees_it() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    store_tools(&scripts);
    let (mut a, b) = both(&scripts, scratch.url());
    let id = start_run(&a);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !runs_of(&b)
        .iter()
        .any(|r| r["id"] == id.as_str() && r["status"] == "running")
    {
        assert!(Instant::now() < deadline, "B never saw A's run running");
        std::thread::sleep(Duration::from_millis(50));
    }
    a.child.kill().expect("SIGKILL");
    let _ = a.child.wait();
    let (status, run) = get(&format!("{}/v1/runs/{id}", b.url));
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "interrupted", "{run}");
}

/// Starts a run of `sleeper` without waiting for it; its id.
fn start_run(serve: &Serve) -> String {
    let body = json!({"agent": "sleeper", "input": "go", "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert!(status == 200 || status == 202, "{status} {run}");
    run["id"].as_str().unwrap_or_default().to_string()
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn kiln_db_migrate_copies_an_sqlite_log_sessions_store_and_responses_onto_postgres() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    store_tools(&scripts);
    let file = scripts.path().join("k.db");
    let mut before = Serve::start(scripts.path(), &file, &["--caps", "store"], &[]);
    let body = json!({"agent": "shop", "input": "My name is Ada.", "session": "ada"});
    let (status, run) = post(&format!("{}/v1/runs", before.url), &body, &[]);
    assert_eq!(status, 200, "{run}");
    call(&before, "put", json!({"v": "kept in SQLite"}));
    let body = json!({"model": "shop", "input": "Remember 7.", "store": true});
    let (status, stored) = post(&format!("{}/v1/responses", before.url), &body, &[]);
    assert_eq!(status, 200, "{stored}");
    let _ = before.child.kill();
    let _ = before.child.wait();

    let db = file.to_string_lossy().to_string();
    let out = kiln(
        &["--db", &db, "db", "migrate", "--to", scratch.url()],
        scripts.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("runs: 3 rows, 3 added"), "{said}");
    assert!(said.contains("kv: 1 rows, 1 added"), "{said}");
    assert!(said.contains("responses: 1 rows, 1 added"), "{said}");
    // Again: nothing is added twice.
    let again = kiln(
        &["--db", &db, "db", "migrate", "--to", scratch.url()],
        scripts.path(),
    );
    assert!(
        stdout(&again).contains("runs: 3 rows, 0 added, 3 already there"),
        "{}",
        stdout(&again)
    );

    let after = Serve::start(
        scripts.path(),
        Path::new(scratch.url()),
        &["--caps", "store"],
        &[],
    );
    let (status, session) = get(&format!("{}/v1/sessions/ada", after.url));
    assert_eq!(status, 200, "{session}");
    assert_eq!(
        session["messages"].as_array().map(Vec::len),
        Some(2),
        "{session}"
    );
    assert_eq!(call(&after, "get", json!({}))["result"], "kept in SQLite");
    let listed = runs_of(&after);
    assert!(listed.iter().any(|r| r["id"] == run["id"]), "{listed:?}");
    let (status, read) = get(&format!(
        "{}/v1/runs/{}",
        after.url,
        run["id"].as_str().unwrap_or("")
    ));
    assert_eq!(
        (status, &read["status"]),
        (200, &json!("completed")),
        "{read}"
    );
    let body =
        json!({"model": "shop", "input": "Which number?", "previous_response_id": stored["id"]});
    let (status, next) = post(&format!("{}/v1/responses", after.url), &body, &[]);
    assert_eq!(status, 200, "{next}");
    let sent = mock.requests().pop().expect("a request")["body"]["messages"].to_string();
    assert!(sent.contains("Remember 7."), "{sent}");
    // Copying into itself is refused by name.
    let same = kiln(
        &[
            "--db",
            scratch.url(),
            "db",
            "migrate",
            "--to",
            scratch.url(),
        ],
        scripts.path(),
    );
    assert!(!same.status.success());
    assert!(
        stderr(&same).contains("is the database kiln reads from"),
        "{}",
        stderr(&same)
    );
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn a_sessions_turns_sent_to_two_servers_on_postgres_at_once_run_one_after_the_other() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    store_tools(&scripts);
    let (a, b) = both(&scripts, scratch.url());
    let body = json!({"agent": "turner", "input": "first", "session": "s", "wait": false});
    let (status, first) = post(&format!("{}/v1/runs", a.url), &body, &[]);
    assert!(status == 200 || status == 202, "{status} {first}");
    let first_id = first["id"].as_str().unwrap_or_default().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !runs_of(&b).iter().any(|r| r["id"] == first_id.as_str()) {
        assert!(Instant::now() < deadline, "B never saw A's run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // B's turn waits for A's, then continues after it.
    let body = json!({"agent": "turner", "input": "second", "session": "s"});
    let (status, second) = post(&format!("{}/v1/runs", b.url), &body, &[]);
    assert_eq!(
        (status, &second["status"]),
        (200, &json!("completed")),
        "{second}"
    );
    let (_, first) = get(&format!("{}/v1/runs/{first_id}", b.url));
    assert_eq!(first["status"], "completed", "{first}");
    let (status, session) = get(&format!("{}/v1/sessions/s", a.url));
    assert_eq!(status, 200, "{session}");
    let said: Vec<String> = session["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["content"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        session["messages"].as_array().map(Vec::len),
        Some(8),
        "{session}"
    );
    assert!(
        said.contains(&"first".to_string()) && said.contains(&"second".to_string()),
        "{said:?}"
    );
    assert_eq!(
        second["report"]["answer"], "turn 7",
        "B's run began after A's four messages: {second}"
    );
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn a_kiln_older_than_the_postgres_schema_refuses_to_start_and_says_why() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let db = kiln_db::Db::connect(scratch.url()).expect("migrated");
    db.execute("UPDATE kiln_schema SET version = 999", &[])
        .expect("a newer kiln's schema");
    drop(db);
    let scripts = Scripts::new(&[("a.rhai", r#"tool("t").handler(|a| 1);"#)]);
    for args in [
        vec!["--db", scratch.url(), "logs"],
        vec!["--db", scratch.url(), "serve", "--bind", "127.0.0.1:0"],
    ] {
        let out = kiln(&args, scripts.path());
        assert!(!out.status.success(), "{args:?} started");
        let said = stderr(&out);
        assert!(
            said.contains("schema version 999, newer than this kiln knows")
                && said.contains("upgrade kiln"),
            "{args:?}: {said}"
        );
        assert!(said.contains("postgres://kiln@127.0.0.1"), "{said}");
    }
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn an_eval_baseline_saved_on_one_machine_is_compared_against_on_another_through_postgres() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let scripts = repo().join("examples/demo").display().to_string();
    let eval = |dir: &Path, extra: &[&str]| {
        let mut all = vec![
            "--db",
            scratch.url(),
            "eval",
            "percentages",
            "--scripts",
            &scripts,
        ];
        all.extend_from_slice(extra);
        kiln(&all, dir)
    };
    let (a, b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let saved = eval(a.path(), &["--save", "main", "--quiet"]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    assert!(
        stderr(&saved).contains("table eval_reports"),
        "{}",
        stderr(&saved)
    );
    let compared = eval(b.path(), &["--baseline", "main", "--json"]);
    assert!(compared.status.success(), "{}", stderr(&compared));
    let report: Value = serde_json::from_str(&stdout(&compared)).expect("json");
    assert_eq!(report["comparison"]["baseline"], "main", "{report}");
    assert!(
        !a.path().join(".kiln/evals").exists() && !b.path().join(".kiln/evals").exists(),
        "the reports went to the database, not the workspaces"
    );
}
