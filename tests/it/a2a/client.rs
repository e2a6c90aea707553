//! kiln as an A2A client: `a2a_agent("name").url(...)` makes a remote A2A agent a tool a kiln
//! agent lists as `"a2a:name"` (offered as `a2a__name`, needing capability `a2a:name`). The
//! remote agents are kiln's own A2A door (another `kiln serve`) and a server built on the
//! official `a2a-sdk` (tests/peers/a2a/server.py, `#[ignore]`d without it). The caller is a
//! script planner, so it can answer a remote question by passing the task's id back.

use super::A2a;
use crate::common::*;
use serde_json::{Value, json};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// A caller that sends the user's words to `remote`, answers "yes" to a question on the same
/// task, and ends with what the remote agent answered.
pub(super) fn caller(url: &str, bearer: Option<&str>) -> Scripts {
    let auth = bearer.map_or(String::new(), |v| format!(".bearer_env(\"{v}\")"));
    Scripts::new(&[(
        "caller.rhai",
        &format!(
            r#"a2a_agent("remote").url("{url}"){auth}.description("Answers questions");
agent("caller").provider("script").tools(["a2a:remote"]).capabilities(["a2a:remote"])
    .planner(|messages, tools| {{
        let last = messages[messages.len() - 1];
        if last.role == "user" {{
            return #{{ tool_calls: [#{{ name: "a2a__remote", args: #{{ message: last.content }} }}] }};
        }}
        if last.is_error {{ return #{{ text: `failed: ${{last.content}}` }}; }}
        let r = last.content;
        if r.state == "input_required" {{
            return #{{ tool_calls: [#{{ name: "a2a__remote", args: #{{ message: "yes", task_id: r.task_id }} }}] }};
        }}
        #{{ text: `${{r.state}}: ${{r.answer}}` }}
    }});"#
        ),
    )])
}

/// `kiln ask caller PROMPT` in `dir`: its report.
fn ask_caller(dir: &Scripts, prompt: &str, env: &[(&str, &str)]) -> Value {
    let mut cmd = ask_command(
        &[
            "caller",
            prompt,
            "--scripts",
            &dir.path().display().to_string(),
            "--json",
        ],
        dir.path(),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("kiln ask");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "kiln ask said:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a2a_agent_asks_a_kiln_agent_and_answers_its_question_on_the_same_task() {
    let a = A2a::start(&[], &[]);
    let dir = caller(&format!("{}/a2a/clerk", a.serve.url), None);
    let report = ask_caller(&dir, "Refund order A-1", &[]);
    assert_eq!(
        report["answer"], "completed: Done: the refund of A-1 is settled.",
        "{report:#}"
    );
    let calls = report["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2, "{report:#}");
    let first = &calls[0]["outcome"]["result"];
    assert_eq!(first["state"], "input_required", "{first}");
    assert!(
        first["message"]
            .as_str()
            .is_some_and(|m| m.contains("refund")),
        "{first}"
    );
    // The remote task's status as the call's progress.
    let notes = calls[0]["notes"].to_string();
    assert!(notes.contains("input_required: tool"), "{notes}");
    // The answer went to the same remote task.
    assert_eq!(calls[1]["args"]["task_id"], first["task_id"]);
    assert_eq!(calls[1]["outcome"]["result"]["task_id"], first["task_id"]);
}

#[test]
fn a2a_agents_are_checked_when_loaded_and_need_their_grant() {
    let dir = Scripts::new(&[(
        "bad.rhai",
        r#"a2a_agent("nourl");
a2a_agent("bad name").url("http://localhost:1/a2a/x");
a2a_agent("ok").url("http://localhost:1/a2a/x");
agent("greedy").provider("openai").model("m").tools(["a2a:ok", "a2a:missing"]);"#,
    )]);
    let out = kiln(
        &["check", "--scripts", &dir.path().display().to_string()],
        dir.path(),
    );
    let err = stderr(&out);
    assert!(!out.status.success());
    for want in [
        "bad.rhai:1:1: a2a_agent \"nourl\": needs .url(",
        "bad.rhai:2:1: a2a_agent \"bad name\": invalid name",
        "lists \"a2a:ok\" which requires [a2a:ok] but the agent grants only []",
        "lists \"a2a:missing\" but no a2a_agent(\"missing\") is declared",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
}

/// tests/peers/a2a/server.py on a free port: the process and its URL.
fn sdk_server(token: Option<&str>) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("tests/peers/a2a/server.py"))
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = token {
        cmd.env("ECHOER_TOKEN", t);
    }
    let mut child = cmd.spawn().expect("start server.py");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("server.py says where it listens");
    let url = line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_default()
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "server.py said {line:?}"
    );
    (child, url)
}

#[test]
#[ignore = "needs the a2a-sdk Python package with its HTTP server (run by .ci/run)"]
fn a2a_agent_asks_a_server_built_on_the_official_sdk() {
    let token = "echoer-token-0123456789";
    let (mut server, url) = sdk_server(Some(token));
    let dir = caller(url.trim_end_matches('/'), Some("ECHOER_TOKEN"));
    let asked = ask_caller(&dir, "hello there", &[("ECHOER_TOKEN", token)]);
    let question = ask_caller(&dir, "please ask me", &[("ECHOER_TOKEN", token)]);
    // Without the token the server refuses, and the model reads why.
    let refused = ask_caller(&dir, "hello", &[("ECHOER_TOKEN", "wrong-token-0000000000")]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(asked["answer"], "completed: echo: hello there", "{asked:#}");
    assert_eq!(question["answer"], "completed: colour: yes", "{question:#}");
    assert_eq!(
        question["tool_calls"][0]["outcome"]["result"]["message"],
        "Which colour?"
    );
    let why = refused["answer"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("failed: ") && why.contains("401"),
        "{refused:#}"
    );
    assert_eq!(
        json!(asked["tool_calls"][0]["name"]),
        json!("a2a__remote"),
        "{asked:#}"
    );
}

#[test]
fn a_remote_kiln_agents_approval_is_asked_at_the_callers_door() {
    let a = A2a::start(&[], &[]);
    let dir = caller(&format!("{}/a2a/clerk", a.serve.url), None);
    let door = crate::doors::serve::Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let body = json!({"agent": "caller", "input": "Refund order A-1", "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", door.url), &body, &[]);
    assert_eq!(status, 202, "{run}");
    let id = run["id"].as_str().expect("run id").to_string();
    let seen = |want: &str| -> Value {
        for _ in 0..200 {
            let (_, v) = get(&format!("{}/v1/runs/{id}", door.url));
            if v["status"] == want {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("run {id} never {want}");
    };
    // The remote clerk's approval waits in the caller's inbox, with the remote's question.
    let waiting = seen("awaiting_approval");
    let ask = &waiting["approvals"][0];
    assert_eq!(ask["capability"], "a2a:remote", "{waiting}");
    let question = ask["question"].as_str().unwrap_or_default();
    assert!(
        question.starts_with("the agent \"remote\" asks: tool \"refund\""),
        "{question}"
    );
    let approval = ask["id"].as_str().expect("approval id");
    let decide = format!("{}/v1/runs/{id}/approvals/{approval}", door.url);
    let (status, _) = post(&decide, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 200);
    let done = seen("completed");
    assert_eq!(
        done["report"]["answer"], "completed: Done: the refund of A-1 is settled.",
        "{done:#}"
    );
    // One call: the person answered, not the model.
    assert_eq!(
        done["report"]["tool_calls"].as_array().map(Vec::len),
        Some(1),
        "{done:#}"
    );
}

#[test]
#[ignore = "needs Node 22 and oidc-provider: run by .ci/run"]
fn a2a_agent_gets_its_token_from_the_remote_agents_authorization_server() {
    let p = crate::doors::serve_oauth::provider();
    let audience = "http://kiln.test/";
    let a = A2a::start(
        &["--auth-issuer", &p.issuer, "--auth-audience", audience],
        &[],
    );
    let url = format!("{}/a2a/helper", a.serve.url);
    let dir = Scripts::new(&[(
        "caller.rhai",
        &format!(
            r#"a2a_agent("remote").url("{url}")
    .oauth(#{{ grant: "client_credentials", client_id: "app", client_secret_env: "APP_SECRET", scopes: ["kiln:net"] }});
agent("caller").provider("script").tools(["a2a:remote"]).capabilities(["a2a:remote"])
    .planner(|messages, tools| {{
        let last = messages[messages.len() - 1];
        if last.role == "user" {{
            return #{{ tool_calls: [#{{ name: "a2a__remote", args: #{{ message: last.content }} }}] }};
        }}
        if last.is_error {{ return #{{ text: `failed: ${{last.content}}` }}; }}
        #{{ text: `${{last.content.state}}: ${{last.content.answer}}` }}
    }});"#
        ),
    )]);
    // The token URL and the resource from the agent's protected resource metadata, then the
    // provider's discovery; the client authenticates with its secret from the environment.
    let done = ask_caller(
        &dir,
        "Quick question",
        &[("APP_SECRET", "app-secret-0123456789")],
    );
    assert_eq!(done["answer"], "completed: A quick answer.", "{done:#}");
    let wrong = ask_caller(
        &dir,
        "Quick question",
        &[("APP_SECRET", "not-the-secret-000000")],
    );
    let why = wrong["answer"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("failed: ") && why.contains("token request answered HTTP 401"),
        "{wrong:#}"
    );
    assert!(
        !wrong.to_string().contains("not-the-secret"),
        "the secret is never shown"
    );
    let unset = ask_caller(&dir, "Quick question", &[]);
    assert!(
        unset["answer"]
            .as_str()
            .is_some_and(|a| a.contains("set APP_SECRET")),
        "{unset:#}"
    );

    // Pinned, the secret goes where the script says, not where the agent's metadata points.
    let caller = std::fs::read_to_string(dir.path().join("caller.rhai")).expect("caller");
    let pin = |to: &str| caller.replace("scopes: [", &format!("token_url: \"{to}\", scopes: ["));
    let secret = [("APP_SECRET", "app-secret-0123456789")];
    let pinned = Scripts::new(&[("caller.rhai", &pin(&format!("{}/token", p.issuer)))]);
    let done = ask_caller(&pinned, "Quick question", &secret);
    assert_eq!(done["answer"], "completed: A quick answer.", "{done:#}");
    let elsewhere = Scripts::new(&[("caller.rhai", &pin(&format!("{}/elsewhere", p.issuer)))]);
    let missed = ask_caller(&elsewhere, "Quick question", &secret);
    assert!(
        missed["answer"]
            .as_str()
            .is_some_and(|a| a.contains("token request answered HTTP 404")),
        "{missed:#}"
    );
}

#[test]
fn a2a_agent_reads_the_remote_artifacts_files_by_name_type_and_size() {
    let a = A2a::start(&[], &[]);
    let dir = caller(&format!("{}/a2a/painter", a.serve.url), None);
    let report = ask_caller(&dir, "Draw a square", &[]);
    assert_eq!(
        report["answer"], "completed: <svg/>\nHere is your square.",
        "{report:#}"
    );
    let result = &report["tool_calls"][0]["outcome"]["result"];
    assert_eq!(
        result["files"],
        json!([{"bytes": 8, "media_type": "image/png"}]),
        "the bytes stay out of the model's context: {result}"
    );
}

/// An A2A agent on 127.0.0.1 whose card says it streams and whose stream never ends: status
/// updates of 256 KiB each, until the reader hangs up. Its URL.
fn endless_streamer() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://127.0.0.1:{}/a2a/endless",
        listener.local_addr().expect("addr").port()
    );
    let card = json!({"name": "endless", "capabilities": {"streaming": true},
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let mut head = [0u8; 8192];
            let n = s.read(&mut head).unwrap_or(0);
            if head[..n].starts_with(b"GET") {
                let body = card.to_string();
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                continue;
            }
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            let filler = "x".repeat(256 << 10);
            let event = json!({"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t",
                "contextId": "c", "status": {"state": "TASK_STATE_WORKING",
                "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": filler}]}}}}});
            let frame = format!("data: {event}\n\n");
            while s.write_all(frame.as_bytes()).is_ok() {}
        }
    });
    url
}

#[test]
fn a2a_agent_stops_reading_a_remote_stream_past_its_bound() {
    let dir = caller(&endless_streamer(), None);
    let report = ask_caller(&dir, "hello", &[]);
    let why = report["answer"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("failed: ") && why.contains("its stream is over 16777216 bytes"),
        "{why}"
    );
}
