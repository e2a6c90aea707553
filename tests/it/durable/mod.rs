//! Durable runs on Restate (issue 14): a real `restate-server` on 127.0.0.1 with its data in a
//! temp dir, two `kiln serve --restate` workers behind one address (a failover TCP proxy),
//! agents against `kiln mock`, tools counting their executions at a loopback counter.
//!
//! `#[ignore]`d because they need the Restate server binary: `.ci/run` installs the pinned
//! `@restatedev/restate-server@1.7.12` from npm and runs them with `KILN_RESTATE_SERVER` set
//! (without it they fail saying so).

mod a2a_fleet;
mod approvals;
mod code_mode;
mod compact;
mod counter;
mod decisions;
mod fixtures;
mod front;
mod gemini;
mod responses;
mod steer;
mod tasks;

use fixtures::{ALICE, Cluster, ok_output, three_steps};
use serde_json::{Value, json};

fn one_tool_then(step: &str, answer: &str) -> [Value; 2] {
    [
        json!({"tool_calls": [{"name": "count", "args": {"step": step}}]}),
        json!({"text": answer}),
    ]
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_run_whose_worker_is_killed_completes_on_the_other_without_repeating_steps() {
    let mut c = Cluster::start(&[
        ("kill", three_steps("k")),
        ("clean", three_steps("u")),
        ("local", three_steps("l")),
    ]);
    // Submitted through worker B's front door; Restate runs it on A (the proxy's first choice).
    // Hold the third tool step at the counter, check steps 1-5 are journaled, kill worker A.
    c.counter.hold("kc");
    let body = json!({"agent": "kill", "input": "count", "wait": false});
    let sent = ok_output(
        "submit through B",
        c.api(1, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let inv = sent["id"].as_str().expect("run id").to_string();
    c.counter
        .wait_until("the third tool step to start", |s| s.holding);
    let journal = c.restate.journal(&inv);
    // The third tool step may already be announced (its command), never completed.
    let steps: Vec<&str> = journal
        .iter()
        .filter(|(t, n)| t == "Command: Run" && n != "tool-3-call_mock_2_0")
        .map(|(_, n)| n.as_str())
        .collect();
    let completed = journal
        .iter()
        .filter(|(t, _)| t == "Notification: Run")
        .count();
    let expected = [
        "model-1",
        "tool-1-call_mock_0_0",
        "model-2",
        "tool-2-call_mock_1_0",
        "model-3",
    ];
    assert_eq!(
        (steps.as_slice(), completed),
        (&expected[..], 5),
        "steps 1-5 journaled and completed before the kill: {journal:?}"
    );
    let killed = c.kill(0);
    c.counter.release();
    c.counter.wait_until("the third step to run again", |s| {
        s.hits.iter().filter(|h| h.0 == "kc").count() >= 2
    });
    let resumed = c.counter.arrivals("kc")[1].duration_since(killed);
    let wait = format!("/v1/runs/{inv}?wait=true");
    let done = ok_output("await through B", c.api(1, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    let report = done["report"].clone();

    let counts = c.counter.counts("k");
    assert_eq!(
        counts["ka"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["kb"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["kc"].len(),
        2,
        "the step in flight ran again: {counts:?}"
    );
    assert_eq!(
        counts["kc"][0], counts["kc"][1],
        "one idempotency key per step"
    );
    assert_eq!(counts["kc"][0], format!("{inv}/tool-3-call_mock_2_0"));
    assert_eq!(
        c.mock("kill").requests().len(),
        4,
        "no model request was repeated"
    );
    assert_eq!(
        report["run_id"],
        inv.as_str(),
        "the run id is the invocation id"
    );
    assert_eq!(report["answer"], "counted three");
    // ctx.state after the replayed steps was restored before the third ran on worker B.
    assert_eq!(
        report["tool_calls"][2]["outcome"]["result"],
        "counted kc (#3)"
    );
    // Each call records the tool version that ran it: A's for the journaled steps, B's after.
    let version = |i: usize| report["tool_calls"][i]["script_version"].clone();
    assert_eq!(version(0), version(1));
    assert_ne!(version(1), version(2), "{report}");

    // The same run uninterrupted (durable) and in the local mode: the same transcript.
    let body = json!({"agent": "clean", "prompt": "count"});
    let clean = ok_output("clean run", c.post("/KilnRun/run-clean/run", None, &body));
    let host = kiln::Host::builder()
        .scripts(c.scripts.path())
        .workspace(c.scripts.path())
        .stdlib(false)
        .build()
        .expect("host");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let local = runtime
        .block_on(host.run("local", "count", kiln::RunOptions::default()))
        .expect("local run");
    let local = serde_json::to_value(&local).expect("report");
    // The runs differ only in their step names (ka / ua / la ...).
    let plain = |v: &Value, p: &str| {
        ["a", "b", "c"]
            .iter()
            .fold(v.to_string(), |t, x| t.replace(&format!("{p}{x}"), x))
    };
    assert_eq!(
        plain(&report["messages"], "k"),
        plain(&clean["messages"], "u")
    );
    assert_eq!(
        plain(&report["messages"], "k"),
        plain(&local["messages"], "l")
    );

    // The run log has the run once, under its invocation id, with the versions that ran: what A
    // logged before it died was replaced when B replayed the run.
    let logs = std::process::Command::new(crate::common::kiln_bin())
        .args(["logs", "--json", "--db"])
        .arg(c.db())
        .output()
        .expect("kiln logs");
    let logs: Value = serde_json::from_slice(&logs.stdout).expect("logs json");
    let run = logs
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["id"] == inv.as_str()))
        .unwrap_or_else(|| panic!("the log has run {inv}: {logs}"));
    assert_eq!(
        (&run["status"], &run["rounds"]),
        (&json!("ok"), &json!(4)),
        "{run}"
    );
    let versions: Vec<&Value> = run["tool_calls"]
        .as_array()
        .map(|calls| calls.iter().map(|c| &c["script_version"]).collect())
        .unwrap_or_default();
    assert_eq!(versions, [&version(0), &version(1), &version(2)], "{run}");
    assert!(
        versions
            .iter()
            .all(|v| v.as_str().is_some_and(|v| !v.is_empty())),
        "{run}"
    );
    eprintln!("durable: kill -> resumed step running on the other worker: {resumed:?}");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_session_continues_on_another_worker_with_its_messages_and_state() {
    // The first turn's round has two calls: the journal runs them one at a time, in call order.
    let t1 = json!({"tool_calls": [
        {"name": "count", "args": {"step": "s1"}}, {"name": "count", "args": {"step": "s1b"}},
    ]});
    let a1 = json!({"text": "first"});
    let [t2, a2] = one_tool_then("s2", "second");
    let mut c = Cluster::start(&[(
        "chat",
        json!({"require_auth": false, "turns": [t1, a1, t2, a2]}),
    )]);
    let turn = |c: &Cluster, prompt: &str| {
        let body = json!({"agent": "chat", "prompt": prompt});
        ok_output("turn", c.post("/KilnSession/s-1/turn", None, &body))
    };
    let turn1 = turn(&c, "hello");
    assert_eq!(turn1["answer"], "first", "{turn1}");
    c.kill(0);
    let turn2 = turn(&c, "again");
    assert_eq!(turn2["answer"], "second", "{turn2}");
    let messages = turn2["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 8, "two turns of four messages: {turn2}");
    assert_eq!(
        messages[..4],
        turn1["messages"].as_array().expect("messages")[..]
    );
    assert_eq!(
        turn2["tool_calls"][0]["outcome"]["result"], "counted s2 (#3)",
        "ctx.state carried over"
    );
    let transcript = ok_output("transcript", {
        let url = format!("{}/KilnSession/s-1/transcript", c.restate.ingress);
        fixtures::http("POST", &url, &[], None)
    });
    assert_eq!(transcript.as_array().map(Vec::len), Some(8), "{transcript}");
    let requests = c.mock("chat").requests();
    assert_eq!(requests.len(), 4);
    // user, assistant (two calls), two tool messages (OpenAI's wire), assistant, user.
    assert_eq!(
        requests[2]["body"]["messages"].as_array().map(Vec::len),
        Some(6),
        "history sent"
    );
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn the_same_idempotency_key_runs_once_and_timeouts_follow_the_request_timeout() {
    let [t, a] = one_tool_then("i1", "once");
    let c = Cluster::start(&[("idem", json!({"require_auth": false, "turns": [t, a]}))]);
    // The workers run with --request-timeout 30 (and 3 retries): 30 s x 4 attempts + 60 s.
    for service in ["KilnRun", "KilnSession"] {
        let url = format!("{}/services/{service}", c.restate.admin);
        let (_, svc) = fixtures::http("GET", &url, &[], None);
        assert_eq!(svc["inactivity_timeout"], "3m", "{svc}");
        assert_eq!(svc["abort_timeout"], "3m", "{svc}");
    }
    // Registering the same address again changes nothing; --force makes a new revision.
    let register = |force: &[&str]| {
        let (admin, endpoint) = (c.restate.admin.as_str(), c.endpoint.as_str());
        let args = [
            "restate",
            "register",
            "--admin",
            admin,
            "--endpoint",
            endpoint,
        ];
        let out = crate::common::kiln(&[&args[..], force].concat(), c.scripts.path());
        assert!(out.status.success(), "{}", crate::common::stderr(&out));
        let reply: Value = serde_json::from_slice(&out.stdout).expect("registration json");
        (
            reply["id"].clone(),
            reply["services"][0]["revision"].clone(),
        )
    };
    let (id, revision) = register(&[]);
    assert_eq!(revision, 1);
    assert_eq!(register(&["--force"]), (id, json!(2)));
    let req = json!({"agent": "idem", "prompt": "count once"});
    let first = ok_output(
        "send",
        c.post("/KilnSession/idem/turn/send", Some("key-1"), &req),
    );
    let again = ok_output(
        "resend",
        c.post("/KilnSession/idem/turn/send", Some("key-1"), &req),
    );
    assert_eq!(
        first["invocationId"], again["invocationId"],
        "{first} {again}"
    );
    assert_eq!(again["status"], "PreviouslyAccepted", "{again}");
    let inv = first["invocationId"].as_str().expect("invocation id");
    let report = ok_output(
        "attach",
        c.get(&format!("/restate/invocation/{inv}/attach")),
    );
    assert_eq!(report["answer"], "once", "{report}");
    assert_eq!(c.counter.counts("i").get("i1").map(Vec::len), Some(1));
    assert_eq!(
        c.mock("idem").requests().len(),
        2,
        "one run: two model requests"
    );

    // Bad requests end at once with a clear error (terminal: Restate does not retry them).
    let bad = |key: &str, body: Value| c.post(&format!("/KilnRun/{key}/run"), None, &body);
    let (status, body) = bad("bad-1", json!({"agent": "idem"}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string()
            .contains("invalid run request: missing field `prompt`"),
        "{body}"
    );
    let (status, body) = bad("bad-2", json!({"agent": "nope", "prompt": "hi"}));
    assert_eq!(status, 404, "{body}");
    assert!(body.to_string().contains("nope"), "{body}");
    // A caller of the ingress (no kiln token) gets no more than the agent's own grants.
    let (status, body) = bad(
        "bad-caps",
        json!({"agent": "idem", "prompt": "hi", "caps": ["net:127.0.0.1", "env", "fs.write"]}),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.to_string()
            .contains("capability \\\"env\\\" is beyond"),
        "{body}"
    );
    let (status, body) = bad("bad-3", json!({"agent": "plan", "prompt": "hi"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("json_planner agent"), "{body}");
    assert_eq!(c.mock("idem").requests().len(), 2, "no bad request ran");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn cancelling_the_invocation_in_restate_stops_the_run_at_its_next_step() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "x1"}}]},
        {"tool_calls": [{"name": "count", "args": {"step": "x2"}}]}, {"text": "not reached"},
    ]});
    let c = Cluster::start(&[("cancel", scenario)]);
    c.counter.hold("x1");
    let body = json!({"agent": "cancel", "prompt": "go"});
    let sent = ok_output("send", c.post("/KilnRun/run-cancel/run/send", None, &body));
    let inv = sent["invocationId"].as_str().expect("invocation id");
    c.counter.wait_until("the tool step", |s| s.holding);
    let url = format!("{}/invocations/{inv}/cancel", c.restate.admin);
    let (status, body) = fixtures::http("PATCH", &url, &[], None);
    assert!(
        (200..300).contains(&status),
        "cancel: HTTP {status}: {body}"
    );
    c.counter.release();
    let (status, body) = c.get("/restate/workflow/KilnRun/run-cancel/attach");
    assert!(
        !(200..300).contains(&status),
        "a cancelled run fails: {body}"
    );
    assert!(body.to_string().contains("cancelled"), "{body}");
    assert!(
        !c.counter.counts("x").contains_key("x2"),
        "no step after the cancel"
    );
    assert_eq!(
        c.mock("cancel").requests().len(),
        1,
        "no model request after the cancel"
    );
}

#[test]
fn a_worker_reloads_its_scripts_as_they_change() {
    use std::io::BufRead;
    let tool = |word: &str| {
        format!(
            "tool(\"echo\").description(\"Echo\").param(\"x\", \"string\", \"x\")\n    .handler(|args, ctx| `{word} ${{args.x}}`);\n"
        )
    };
    let scripts = crate::common::Scripts::new(&[("tools.rhai", &tool("one"))]);
    let mut child = std::process::Command::new(crate::common::kiln_bin())
        .args([
            "worker",
            "--restate",
            "--bind",
            "127.0.0.1:0",
            "--no-stdlib",
            "--scripts",
        ])
        .arg(scripts.path())
        .arg("--db")
        .arg(scripts.path().join("w.db"))
        .env("KILN_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start worker");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("worker prints its address");
    assert!(line.contains("listening on http://127.0.0.1:"), "{line}");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    std::fs::write(scripts.path().join("tools.rhai"), tool("two")).expect("edit");
    let reloaded = loop {
        match rx.recv_timeout(fixtures::WAIT) {
            Ok(l) if l.contains("reloaded") && l.contains("tools.rhai") => break l,
            Ok(_) => {}
            Err(e) => panic!("the worker never reported a reload: {e}"),
        }
    };
    assert!(reloaded.contains("~1"), "one tool changed: {reloaded}");
    crate::common::signal(child.id(), "TERM");
    assert!(child.wait().expect("worker exits").success());
}

#[test]
fn a_worker_stops_cleanly_on_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(crate::common::kiln_bin())
        .args([
            "worker",
            "--restate",
            "--bind",
            "127.0.0.1:0",
            "--no-stdlib",
            "--db",
        ])
        .arg(dir.path().join("w.db"))
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start worker");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("worker prints its address");
    assert!(line.contains("listening on http://127.0.0.1:"), "{line}");
    crate::common::signal(child.id(), "TERM");
    let status = child.wait().expect("worker exits");
    assert!(status.success(), "{status:?}");
}

/// Starts `kiln serve --restate` on free ports in `dir`.
fn serve_restate(dir: &std::path::Path, more: &[&str]) -> std::process::Child {
    std::process::Command::new(crate::common::kiln_bin())
        .args(["serve", "--bind", "127.0.0.1:0", "--restate"])
        .args(["--restate-bind", "127.0.0.1:0", "--no-stdlib", "--db"])
        .arg(dir.join("w.db"))
        .args(more)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start kiln serve --restate")
}

#[test]
fn serve_restate_serves_the_api_and_the_worker_and_stops_both_on_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = serve_restate(dir.path(), &[]);
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let (mut api, mut worker) = (String::new(), String::new());
    out.read_line(&mut api).expect("the API address");
    out.read_line(&mut worker).expect("the worker address");
    assert!(
        api.starts_with("kiln serve: listening on http://127.0.0.1:"),
        "{api}"
    );
    let prefix = "kiln serve: Restate worker listening on http://";
    let worker = worker
        .trim()
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{worker}"));
    // (Restate's discovery through that port is what the registrations of the tests above use.)
    assert!(worker.starts_with("127.0.0.1:"), "{worker}");
    let health = fixtures::http(
        "GET",
        &format!(
            "{}/healthz",
            api.trim().trim_start_matches("kiln serve: listening on ")
        ),
        &[],
        None,
    );
    assert_eq!(health.0, 200, "{health:?}");
    crate::common::signal(child.id(), "TERM");
    let status = child.wait().expect("kiln serve exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn serve_restate_refuses_an_open_worker_beyond_loopback_and_bad_flags() {
    use crate::common::{kiln, stderr};
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = |args: &[&str]| {
        let mut all = vec!["serve", "--bind", "127.0.0.1:0", "--no-stdlib"];
        all.extend_from_slice(args);
        let out = kiln(&all, dir.path());
        assert!(!out.status.success(), "{args:?} was accepted");
        stderr(&out)
    };
    // Refused before anything is bound: nothing connects to 0.0.0.0.
    let err = refused(&["--restate", "--restate-bind", "0.0.0.0:0"]);
    assert!(
        err.contains(
            "refusing to serve Restate handlers on 0.0.0.0:0 without --restate-identity-key"
        ),
        "{err}"
    );
    let err = refused(&["--restate", "--restate-identity-key", "not-a-key"]);
    assert!(err.contains("--restate-identity-key: "), "{err}");
    let err = refused(&["--restate-ingress", "http://127.0.0.1:8080"]);
    assert!(err.contains("--restate-admin"), "{err}");
    let err = refused(&[
        "--restate-ingress",
        "ftp://x",
        "--restate-admin",
        "http://127.0.0.1:9070",
    ]);
    assert!(
        err.contains("--restate-ingress: \"ftp://x\" is not an http:// or https:// URL"),
        "{err}"
    );
}

#[test]
fn worker_and_register_refuse_bad_arguments_clearly() {
    use crate::common::{kiln, stderr};
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kiln(
        &["worker", "--bind", "127.0.0.1:0", "--no-stdlib"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("kiln worker needs --restate"),
        "{}",
        stderr(&out)
    );

    let register = |admin: &str, endpoint: &str| {
        let out = kiln(
            &[
                "restate",
                "register",
                "--admin",
                admin,
                "--endpoint",
                endpoint,
            ],
            dir.path(),
        );
        assert!(!out.status.success());
        stderr(&out)
    };
    let err = register("ftp://127.0.0.1:9070", "http://127.0.0.1:9080");
    assert!(
        err.contains("--admin: \"ftp://127.0.0.1:9070\" is not an http:// or https:// URL"),
        "{err}"
    );
    let err = register("http://127.0.0.1:9070", "9080");
    assert!(
        err.contains("--endpoint: \"9080\" is not an http:// or https:// URL"),
        "{err}"
    );
    // Nothing listens on a port just released.
    let port = fixtures::free_port();
    let err = register(&format!("http://127.0.0.1:{port}"), "http://127.0.0.1:9080");
    assert!(
        err.contains(&format!(
            "cannot reach the Restate admin API at http://127.0.0.1:{port}/deployments"
        )),
        "{err}"
    );
}
