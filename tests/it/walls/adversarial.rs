//! The adversarial suite: every gated host function x {not declared, declared but not granted,
//! granted with a scope that excludes the target, granted}; escapes from the workspace; secrets;
//! redirects; limits; hostile scripts and hostile model input. Each ends in a clear error and the
//! host keeps serving.

use crate::common::*;
use serde_json::{Value, json};

fn ok_server() -> TestServer {
    TestServer::start(|path| match path {
        "/big" => (200, vec![], vec![b'x'; 2 * 1024 * 1024]),
        "/away" => (
            302,
            vec![("location".into(), "http://localhost:9/elsewhere".into())],
            b"moved".to_vec(),
        ),
        _ => (
            200,
            vec![("content-type".into(), "application/json".into())],
            br#"{"hello": "world"}"#.to_vec(),
        ),
    })
}

/// (function, capability, call expression, scope that covers the target, scope that does not)
fn matrix(
    url: &str,
) -> Vec<(
    &'static str,
    &'static str,
    String,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "http_get",
            "net",
            format!("http_get(\"{url}/x\").json.hello"),
            "net:127.0.0.1",
            "net:example.com",
        ),
        (
            "http_post",
            "net",
            format!("http_post(\"{url}/x\", #{{ a: 1 }}).status"),
            "net:127.0.0.1",
            "net:example.com",
        ),
        (
            "read_file",
            "fs.read",
            "read_file(\"docs/a.txt\")".into(),
            "fs.read:docs",
            "fs.read:other",
        ),
        (
            "list_dir",
            "fs.read",
            "list_dir(\"docs\").len()".into(),
            "fs.read:docs",
            "fs.read:other",
        ),
        (
            "write_file",
            "fs.write",
            "{ write_file(\"out/b.txt\", \"written\"); \"ok\" }".into(),
            "fs.write:out",
            "fs.write:docs",
        ),
        (
            "env",
            "env",
            "env(\"ADV_PLAIN_VAR\")".into(),
            "env:ADV_PLAIN_VAR",
            "env:PATH",
        ),
        (
            "store_set",
            "store",
            "{ store_set(\"cache\", \"k\", 1); \"ok\" }".into(),
            "store:cache",
            "store:other",
        ),
        (
            "store_get",
            "store",
            "store_get(\"cache\", \"nothing\") ?? \"none\"".into(),
            "store:cache",
            "store:other",
        ),
        (
            "store_delete",
            "store",
            "store_delete(\"cache\", \"k\")".into(),
            "store:cache",
            "store:other",
        ),
        (
            "store_list",
            "store",
            "store_list(\"cache\").len()".into(),
            "store:cache",
            "store:other",
        ),
    ]
}

fn workspace_with(script: &str) -> Scripts {
    let s = Scripts::new(&[("adv.rhai", script)]);
    std::fs::create_dir_all(s.path().join("docs")).expect("docs");
    std::fs::create_dir_all(s.path().join("out")).expect("out");
    std::fs::create_dir_all(s.path().join("other")).expect("other");
    std::fs::write(s.path().join("docs/a.txt"), "secret-ish doc").expect("doc");
    s
}

#[test]
fn only_declared_granted_and_in_scope_calls_work() {
    let server = ok_server();
    let url = format!("http://{}", server.addr);
    let rows = matrix(&url);
    let mut script = String::new();
    for (i, (_, cap, expr, _, _)) in rows.iter().enumerate() {
        script.push_str(&format!("tool(\"undeclared_{i}\").handler(|a| {expr});\n"));
        script.push_str(&format!(
            "tool(\"declared_{i}\").requires(\"{cap}\").handler(|a| {expr});\n"
        ));
    }
    let s = workspace_with(&script);
    let host = s.host();
    assert!(s.errors(&host).is_empty(), "{:?}", s.errors(&host));
    let mut cases = 0;
    for (i, (func, cap, _, good, bad)) in rows.iter().enumerate() {
        let undeclared = call(&host, &format!("undeclared_{i}"), json!({}), &[good]);
        let (kind, msg) = failure(&undeclared);
        assert_eq!(kind, "denied", "{func} undeclared");
        assert!(
            msg.contains(&format!("{func}("))
                && msg.contains("does not declare capability")
                && msg.contains(cap),
            "{func}: {msg}"
        );

        let not_granted = call(&host, &format!("declared_{i}"), json!({}), &[]);
        let (kind, msg) = failure(&not_granted);
        assert_eq!(kind, "capability", "{func} not granted");
        assert!(
            msg.contains(&format!("requires capabilities [{cap}]")),
            "{func}: {msg}"
        );

        let out_of_scope = call(&host, &format!("declared_{i}"), json!({}), &[bad]);
        let (kind, msg) = failure(&out_of_scope);
        assert_eq!(kind, "denied", "{func} out of scope");
        assert!(
            msg.contains("was not granted") && msg.contains(bad),
            "{func}: {msg}"
        );

        let granted = call(&host, &format!("declared_{i}"), json!({}), &[good]);
        assert!(
            granted.is_ok(),
            "{func} granted: {:?}",
            granted.to_json(true)
        );
        cases += 4;
    }
    assert_eq!(cases, 40);
    assert_eq!(
        std::fs::read_to_string(s.path().join("out/b.txt")).expect("written"),
        "written"
    );
    assert_eq!(
        call(&host, "declared_0", json!({}), &["net:127.0.0.1"])
            .result
            .ok(),
        Some(json!("world"))
    );
    assert_eq!(
        call_with_env(
            &s,
            "declared_5",
            "{}",
            "env",
            &[("ADV_PLAIN_VAR", "adv-value")]
        )["result"],
        json!("adv-value"),
        "an unscoped env grant reads ordinary variables"
    );
}

/// `kiln call TOOL ARGS --caps CAPS` in `s` with `env` added to the child's environment (tests
/// run in parallel: the test process's own environment is never changed).
fn call_with_env(s: &Scripts, tool: &str, args: &str, caps: &str, env: &[(&str, &str)]) -> Value {
    let out = std::process::Command::new(kiln_bin())
        .args(["call", tool, args, "--caps", caps, "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run kiln call");
    for (_, value) in env {
        assert!(
            !stderr(&out).contains(value),
            "{value} leaked to stderr: {}",
            stderr(&out)
        );
    }
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)))
}

#[test]
fn nothing_outside_the_workspace_is_read_or_written() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "outside secret").expect("write");
    let script = r#"
tool("r").param("p", "string").requires("fs.read").handler(|a| read_file(a.p));
tool("w").param("p", "string").requires("fs.write").handler(|a| { write_file(a.p, "pwned"); "ok" });
tool("l").param("p", "string").requires("fs.read").handler(|a| list_dir(a.p));
"#;
    let s = workspace_with(script);
    std::os::unix::fs::symlink(outside.path(), s.path().join("escape")).expect("symlink");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        s.path().join("docs/link.txt"),
    )
    .expect("symlink");
    let host = s.host();
    let abs = outside.path().join("secret.txt").display().to_string();
    let attempts = [
        ("r", "../secret.txt"),
        ("r", abs.as_str()),
        ("r", "escape/secret.txt"),
        ("r", "docs/link.txt"),
        ("r", "docs/../../x"),
        ("l", "escape"),
        ("l", "/"),
        ("w", "escape/new.txt"),
        ("w", "../new.txt"),
        ("w", "docs/link.txt"),
    ];
    for (tool, p) in attempts {
        let o = call(&host, tool, json!({"p": p}), &["fs.read", "fs.write"]);
        let (kind, msg) = failure(&o);
        assert_eq!(kind, "denied", "{tool}({p}): {msg}");
        assert!(msg.contains("refused"), "{msg}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).expect("intact"),
        "outside secret"
    );
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(
        call(&host, "r", json!({"p": "docs/a.txt"}), &["fs.read"])
            .result
            .ok(),
        Some(json!("secret-ish doc"))
    );
}

#[test]
fn a_tool_cannot_write_the_scripts_kiln_loads_or_its_state() {
    // With fs.write a tool could otherwise write a script that the next reload runs with the
    // powers of a script (declaring an agent's capabilities, starting an MCP server).
    let script = r#"
tool("w").param("p", "string").requires("fs.write").handler(|a| { write_file(a.p, "// x"); "ok" });
"#;
    let s = workspace_with(script);
    std::fs::create_dir_all(s.path().join(".kiln")).expect(".kiln");
    let host = s.host();
    for p in ["evil.rhai", "docs/evil.rhai", ".kiln/kiln.db"] {
        let (kind, msg) = failure(&call(&host, "w", json!({"p": p}), &["fs.write"]));
        assert_eq!(kind, "denied", "{p}: {msg}");
        assert!(msg.contains("refused"), "{p}: {msg}");
        assert!(!s.path().join(p).exists(), "{p} was written");
    }
    let ok = call(&host, "w", json!({"p": "docs/notes.txt"}), &["fs.write"]);
    assert_eq!(ok.result.ok(), Some(json!("ok")));
}

#[test]
fn a_scoped_read_cannot_probe_whether_files_outside_its_scope_exist() {
    let script = r#"
tool("r").param("p", "string").requires("fs.read").handler(|a| read_file(a.p));
tool("l").param("p", "string").requires("fs.read").handler(|a| list_dir(a.p));
"#;
    let s = workspace_with(script);
    std::fs::write(s.path().join("other/exists.txt"), "x").expect("write");
    let host = s.host();
    for tool in ["r", "l"] {
        let answers: Vec<(String, String)> = ["other/exists.txt", "other/missing.txt", "nowhere/x"]
            .iter()
            .map(|p| {
                let (kind, msg) = failure(&call(&host, tool, json!({"p": p}), &["fs.read:docs"]));
                (kind, msg.replace(p, "PATH"))
            })
            .collect();
        for (kind, msg) in &answers {
            assert_eq!(kind, "denied", "{tool}: {msg}");
            assert!(msg.contains("not granted \"fs.read\""), "{tool}: {msg}");
        }
        assert_eq!(answers[0], answers[1], "{tool}: existence leaks");
        assert_eq!(answers[0], answers[2], "{tool}: existence leaks");
    }
}

#[test]
fn provider_keys_need_a_grant_that_names_them() {
    let s = workspace_with(
        "tool(\"k\").param(\"n\", \"string\").requires(\"env\").handler(|a| env(a.n));",
    );
    let secrets = [
        ("KILN_ADV_API_KEY", "sk-adv-secret"),
        ("ANTHROPIC_API_KEY", "sk-adv-anthropic"),
        ("OPENAI_API_KEY", "sk-adv-openai"),
    ];
    for (name, value) in secrets {
        let v = call_with_env(&s, "k", &format!("{{\"n\": \"{name}\"}}"), "env", &secrets);
        assert_eq!(v["error"]["kind"], "denied", "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("secrets are readable only through a grant naming them"),
            "{msg}"
        );
        assert!(!v.to_string().contains(value), "{v}");
    }
    let v = call_with_env(
        &s,
        "k",
        r#"{"n": "KILN_ADV_API_KEY"}"#,
        "env:KILN_ADV_API_KEY",
        &secrets,
    );
    assert_eq!(v["result"], "sk-adv-secret");
}

#[test]
fn redirects_are_rechecked_and_responses_are_size_limited() {
    let server = ok_server();
    let s = workspace_with(
        "tool(\"g\").param(\"u\", \"string\").requires(\"net\").handler(|a| http_get(a.u).status);\ntool(\"ftp\").requires(\"net\").handler(|a| http_get(\"ftp://x/y\"));",
    );
    let host = s.host();
    let o = call(
        &host,
        "g",
        json!({"u": format!("http://{}/away", server.addr)}),
        &["net:127.0.0.1"],
    );
    let detail = o.to_json(true).to_string();
    assert!(
        !o.is_ok() && detail.contains("outside the net grant"),
        "{detail}"
    );
    let o = call(
        &host,
        "g",
        json!({"u": format!("http://{}/big", server.addr)}),
        &["net:127.0.0.1"],
    );
    assert!(
        o.to_json(true)
            .to_string()
            .contains("larger than 1048576 bytes"),
        "{}",
        o.to_json(true)
    );
    let (kind, msg) = failure(&call(&host, "ftp", json!({}), &["net"]));
    assert_eq!(kind, "denied");
    assert!(msg.contains("only http and https"), "{msg}");
}

#[test]
fn ask_grants_need_approval_and_are_refused_without_a_terminal() {
    let s = workspace_with(
        "tool(\"w\").requires(\"fs.write\").handler(|a| { write_file(\"out/x.txt\", \"x\"); \"ok\" });",
    );
    let out = kiln(
        &[
            "call",
            "w",
            "--caps",
            "fs.write",
            "--ask",
            "fs.write",
            "--scripts",
            ".",
        ],
        s.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert!(
        v["error"]["message"].as_str().is_some_and(|m| m
            .contains("needs approval and there is no one to ask (no person can approve it here")),
        "{v}"
    );
    assert!(!s.path().join("out/x.txt").exists());
    let out = kiln(
        &[
            "call",
            "w",
            "--caps",
            "fs.write",
            "--ask",
            "fs.write",
            "--yes",
            "--scripts",
            ".",
        ],
        s.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(s.path().join("out/x.txt").exists());
}

#[test]
fn the_approval_prompt_asks_on_the_terminal() {
    let s = workspace_with(
        "tool(\"w\").param(\"n\", \"string\").requires(\"fs.write\").handler(|a| { write_file(`out/${a.n}.txt`, \"x\"); \"ok\" });",
    );
    for (answer, written) in [("n", false), ("y", true)] {
        let mut cmd = std::process::Command::new(kiln_bin());
        cmd.args([
            "call",
            "w",
            &format!("{{\"n\": \"{answer}\"}}"),
            "--caps",
            "fs.write",
            "--ask",
            "fs.write",
            "--scripts",
            ".",
        ])
        .current_dir(s.path())
        .env("NO_COLOR", "1");
        let mut p = rexpect::session::spawn_command(cmd, Some(10_000)).expect("spawn");
        // Asked once, before the handler runs (and not again by `write_file` inside it).
        p.exp_string(&format!("tool \"w\" may use fs.write only when a person approves: run it with {{\"n\":\"{answer}\"}}?"))
            .expect("question names the call");
        p.exp_string("allow? [y]es / [n]o / [a]lways for this run:")
            .expect("prompt");
        p.send_line(answer).expect("answer");
        p.exp_eof().expect("exits");
        assert_eq!(
            s.path().join(format!("out/{answer}.txt")).exists(),
            written,
            "answer {answer}"
        );
    }
}

const HOSTILE: &str = r#"
tool("flood").handler(|a| { for i in 0..200000 { print(`line ${i}`); } "flooded" });
tool("fifty_mb").handler(|a| { let s = "x"; s.pad(1000000, 'x'); let big = []; for i in 0..50 { big.push(s); } big });
tool("three_mb").handler(|a| { let s = "x"; s.pad(3000000, 'x'); s });
tool("throw_map").handler(|a| throw #{ secret: "internal" });
tool("throw_int").handler(|a| throw 42);
tool("throw_unit").handler(|a| throw);
tool("num").param("n", "number").handler(|a| a.n);
tool("ok").handler(|a| "alive");
"#;

#[test]
fn hostile_scripts_end_in_clear_errors_and_the_host_stays_up() {
    let s = workspace_with(HOSTILE);
    let host = s.host();
    assert_eq!(
        call(&host, "flood", json!({}), &[]).result.ok(),
        Some(json!("flooded"))
    );
    let (kind, _) = failure(&call(&host, "fifty_mb", json!({}), &[]));
    assert_eq!(kind, "limit", "a 50 MB result stops at the data size limit");
    let huge = call(&host, "three_mb", json!({}), &[])
        .result
        .expect("truncated, not failed");
    assert_eq!(huge["truncated"], true);
    assert!(
        huge["note"]
            .as_str()
            .is_some_and(|n| n.contains("kiln passes on at most 1048576")),
        "{huge}"
    );
    for t in ["throw_map", "throw_int", "throw_unit"] {
        let o = call(&host, t, json!({}), &[]);
        assert_eq!(
            failure(&o),
            ("runtime".into(), "Tool failed (runtime)".into()),
            "{t}"
        );
        assert!(!o.model_text().contains("internal"));
    }
    assert_eq!(
        call(&host, "ok", json!({}), &[]).result.ok(),
        Some(json!("alive"))
    );
}

#[test]
fn hostile_model_input_is_rejected_clearly() {
    let s = workspace_with(HOSTILE);
    let host = s.host();
    let big = json!({"n": 1, "pad": "x".repeat(10 * 1024 * 1024)});
    let (kind, msg) = failure(&call(&host, "num", big, &[]));
    assert_eq!(kind, "invalid_arguments");
    assert!(msg.contains("the limit is 1048576"), "{msg}");
    for (args, want) in [
        (
            json!({"n": 1, "extra": true}),
            "Additional properties are not allowed",
        ),
        (json!({"n": "NaN"}), "is not of type \"number\""),
        (json!({"n": null}), "is not of type \"number\""),
        (json!({}), "\"n\" is a required property"),
    ] {
        let (kind, msg) = failure(&call(&host, "num", args.clone(), &[]));
        assert_eq!(kind, "invalid_arguments", "{args}");
        assert!(msg.contains(want), "{args}: {msg}");
    }
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let out = kiln(
        &[
            "call",
            "num",
            &format!("{{\"n\": {deep}}}"),
            "--scripts",
            ".",
        ],
        s.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("arguments are not valid JSON: recursion limit exceeded"),
        "{}",
        stderr(&out)
    );
    let out = kiln(
        &["call", "num", "{\"n\": 1e400}", "--scripts", "."],
        s.path(),
    );
    assert!(
        stderr(&out).contains("arguments are not valid JSON: number out of range"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        call(&host, "ok", json!({}), &[]).result.ok(),
        Some(json!("alive"))
    );
}

#[test]
fn deep_or_invalid_arguments_from_a_model_become_error_results() {
    let deep = format!(
        "{{\"expression\": {}1{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "calculator", "raw_arguments": deep}, {"name": "calculator", "raw_arguments": "{\"expression\": NaN}"}]},
        {"text": "ok"}
    ]}));
    let s = crate::scripts::agent_loop::agents();
    let out = ask(
        &[
            "shop_openai",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            &format!("{}/v1", mock.url),
            "--json",
        ],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let results = v["messages"][2]["results"].as_array().expect("results");
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("not valid JSON (recursion limit exceeded")),
        "{}",
        results[0]
    );
    assert!(
        results[1]["content"]
            .as_str()
            .is_some_and(|c| c.contains("not valid JSON")),
        "{}",
        results[1]
    );
}

#[test]
fn call_tool_keeps_callees_within_the_callers_declaration_and_depth() {
    let s = workspace_with(
        r#"
tool("inner").requires("db").handler(|a| "inner ran");
tool("outer_ok").requires("db").handler(|a| call_tool("inner", #{}));
tool("outer_sneaky").handler(|a| call_tool("inner", #{}));
tool("recursive").handler(|a| call_tool("recursive", #{}));
"#,
    );
    let host = s.host();
    assert_eq!(
        call(&host, "outer_ok", json!({}), &["db"]).result.ok(),
        Some(json!("inner ran"))
    );
    let (kind, msg) = failure(&call(&host, "outer_sneaky", json!({}), &["db"]));
    assert_eq!(kind, "denied");
    assert!(msg.contains("call_tool(\"inner\") refused: it requires [db] which tool \"outer_sneaky\" does not declare"), "{msg}");
    let o = call(&host, "recursive", json!({}), &[]);
    assert!(
        o.to_json(true)
            .to_string()
            .contains("nesting deeper than 4"),
        "{}",
        o.to_json(true)
    );
}
