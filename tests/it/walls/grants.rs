//! Every door narrows and none widens: the grants a run or call gets are the meet of the
//! agent's own, the door's ceiling and the request's caps, through the real binary.

use crate::common::post;
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};

/// Agent `reader` may read `docs/` only; agent `writer` may write `out/` after approval.
/// Each planner calls one tool and answers with what the tool said.
const AGENTS: &str = r#"
agent("reader").provider("script").tools(["read_file"]).capabilities(["fs.read:docs"])
    .planner(|m, t| {
        let last = m[m.len() - 1];
        if last.role == "user" { #{ tool_calls: [#{ name: "read_file", args: #{ path: "secret/key.txt" } }] } }
        else { #{ text: `tool said: ${last.content}` } }
    });
agent("writer").provider("script").tools(["write_file"]).capabilities(["fs.write:out"]).ask(["fs.write"])
    .planner(|m, t| {
        let last = m[m.len() - 1];
        if last.role == "user" { #{ tool_calls: [#{ name: "write_file", args: #{ path: "out/w.txt", text: "written" } }] } }
        else { #{ text: `tool said: ${last.content}` } }
    });
agent("envy").provider("script").tools(["peek"]).capabilities(["env"])
    .planner(|m, t| {
        let last = m[m.len() - 1];
        if last.role == "user" { #{ tool_calls: [#{ name: "peek", args: #{ name: "KILN_TOKENS" } }] } }
        else { #{ text: `tool said: ${last.content}` } }
    });
tool("peek").param("name", "string").requires("env").handler(|a| env(a.name));
"#;

const SECRET: &str = "the-secret-key-text";

fn workspace() -> Scripts {
    let s = Scripts::new(&[("agents.rhai", AGENTS)]);
    for dir in ["secret", "docs", "out"] {
        std::fs::create_dir_all(s.path().join(dir)).expect("mkdir");
    }
    std::fs::write(s.path().join("secret/key.txt"), SECRET).expect("secret");
    s
}

fn answer(run: &Value) -> String {
    run["report"]["answer"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn start_run(serve: &Serve, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    post(&format!("{}/v1/runs", serve.url), &body, headers)
}

#[test]
fn a_requests_caps_cannot_widen_the_agents_grants_on_kiln_serve() {
    let s = workspace();
    // Nobody approves over HTTP here: a short wait, then the approval is refused.
    let quick = ["--approval-timeout", "0.5"];
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &quick, &[]);
    for body in [
        json!({"agent": "reader", "input": "x"}),
        json!({"agent": "reader", "input": "x", "caps": ["fs.read"]}),
        json!({"agent": "reader", "input": "x", "caps": ["fs.read:secret"]}),
    ] {
        let (status, run) = start_run(&serve, body.clone(), &[]);
        assert_eq!(status, 200, "{run}");
        assert!(!run.to_string().contains(SECRET), "{body}: {run}");
        // Refused at the call, or (nothing left of fs.read) a capability error for the run.
        let said = answer(&run);
        let error = run["error"].to_string();
        assert!(
            said.contains("refused") || error.contains("capabilit"),
            "{body}: {run}"
        );
    }
    // The approval the agent asks for stays asked: nobody decides, so it is refused.
    let (_, run) = start_run(
        &serve,
        json!({"agent": "writer", "input": "x", "caps": ["fs.write:out"]}),
        &[],
    );
    assert!(answer(&run).contains("needs approval"), "{run}");
    assert!(!s.path().join("out/w.txt").exists());
}

#[test]
fn a_tokens_ceiling_and_the_servers_ask_hold_on_both_http_doors() {
    let s = workspace();
    let tokens = json!([
        {"token": "reader-token-0123456789", "actor": "ann", "caps": ["fs.read", "env"]},
        {"token": "netenv-token-0123456789", "actor": "bob", "caps": ["env", "net"]},
    ])
    .to_string();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--caps", "fs.read,fs.write:out,env", "--ask", "fs.write"],
        &[("KILN_TOKENS", &tokens)],
    );
    let ann = [("authorization", "Bearer reader-token-0123456789")];
    let (_, run) = start_run(
        &serve,
        json!({"agent": "reader", "input": "x", "caps": ["fs.read"]}),
        &ann,
    );
    assert!(!answer(&run).contains(SECRET), "{run}");
    let (status, chat) = post(
        &format!("{}/v1/chat/completions", serve.url),
        &json!({"model": "reader", "messages": [{"role": "user", "content": "x"}],
                "kiln": {"caps": ["fs.read"]}}),
        &ann,
    );
    assert_eq!(status, 200, "{chat}");
    let said = chat["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(!said.contains(SECRET) && said.contains("refused"), "{chat}");
    // Plain `env` on the agent and the token does not reach kiln's own tokens variable.
    let (_, run) = start_run(&serve, json!({"agent": "envy", "input": "x"}), &ann);
    assert!(!answer(&run).contains("token-0123456789"), "{run}");
    assert!(answer(&run).contains("refused"), "{run}");
    // An unscoped ceiling admits no scope it does not reach itself.
    let bob = [("authorization", "bearer netenv-token-0123456789")];
    for caps in [
        json!(["env:OPENAI_API_KEY"]),
        json!(["env:KILN_TOKENS"]),
        json!(["net:127.0.0.1"]),
        json!(["net:private"]),
        json!(["net:169.254.169.254"]),
    ] {
        let (status, err) = start_run(
            &serve,
            json!({"agent": "envy", "input": "x", "caps": caps}),
            &bob,
        );
        assert_eq!(status, 403, "{caps}: {err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("beyond"),
            "{err}"
        );
    }
}

#[test]
fn the_servers_ask_stays_ask_for_an_agent_that_allows() {
    let s = Scripts::new(&[(
        "w.rhai",
        r#"agent("plain_writer").provider("script").tools(["write_file"]).capabilities(["fs.write:out"])
    .planner(|m, t| {
        let last = m[m.len() - 1];
        if last.role == "user" { #{ tool_calls: [#{ name: "write_file", args: #{ path: "out/w.txt", text: "written" } }] } }
        else { #{ text: `tool said: ${last.content}` } }
    });"#,
    )]);
    std::fs::create_dir_all(s.path().join("out")).expect("mkdir");
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &[
            "--caps",
            "fs.write:out",
            "--ask",
            "fs.write",
            "--approval-timeout",
            "0.5",
        ],
        &[],
    );
    let (_, run) = start_run(&serve, json!({"agent": "plain_writer", "input": "x"}), &[]);
    assert!(answer(&run).contains("needs approval"), "{run}");
    assert!(!s.path().join("out/w.txt").exists());
}

#[test]
fn kiln_ask_caps_narrow_the_agent_and_env_keeps_kilns_secrets() {
    let s = workspace();
    let out = kiln(&s, &["ask", "reader", "x", "--caps", "fs.read"], &[]);
    assert!(!stdout(&out).contains(SECRET), "{}", stdout(&out));
    assert!(stdout(&out).contains("refused"), "{}", stdout(&out));
    // `kiln call` with plain `env`: no kiln credential, no common secret name.
    for name in [
        "KILN_TOKENS",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "MY_TOKEN_ENV",
    ] {
        let out = kiln(
            &s,
            &[
                "call",
                "peek",
                &json!({"name": name}).to_string(),
                "--caps",
                "env",
            ],
            &[(name, "hunter2-secret")],
        );
        assert!(
            !stdout(&out).contains("hunter2"),
            "{name}: {}",
            stdout(&out)
        );
        assert!(
            stdout(&out).contains("secrets are readable only through a grant naming them"),
            "{name}: {}",
            stdout(&out)
        );
    }
    let named = kiln(
        &s,
        &[
            "call",
            "peek",
            r#"{"name":"DB_PASSWORD"}"#,
            "--caps",
            "env:DB_PASSWORD",
        ],
        &[("DB_PASSWORD", "hunter2-secret")],
    );
    assert!(stdout(&named).contains("hunter2"), "{}", stdout(&named));
}

/// Runs the real binary in the scripts folder, its own keys and tokens removed.
fn kiln(s: &Scripts, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(kiln_bin());
    cmd.arg("--scripts")
        .arg(s.path())
        .arg("--workspace")
        .arg(s.path())
        .args(args)
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .env_remove("KILN_TOKENS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("kiln runs")
}
