//! A capability a tool declares with `.requires(...)` and a grant marks `ask` is asked once
//! per call, before the handler, at every door: `kiln call`, `kiln ask` (plain tool calling
//! and code mode) against `kiln mock`, `kiln mcp`, and `kiln serve` (tests/it/approvals.rs).
//! Without anyone to ask the call is refused, and the refusal is what the model reads.

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};

/// The seeds' flagship case: a tool whose capability is its own (no host function asks).
const VAULT: &str = r#"tool("vault_read").description("Read a secret").param("key", "string").requires("vault").handler(|a| "VAULT-SECRET");"#;

fn call_args(extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = vec![
        "--scripts",
        ".",
        "--no-stdlib",
        "call",
        "vault_read",
        r#"{"key":"k"}"#,
        "--caps",
        "vault",
        "--ask",
        "vault",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn kiln_call_without_a_terminal_refuses_and_with_yes_runs() {
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    let out = kiln(&call_args(&[]), s.path());
    let said = stdout(&out);
    assert!(!said.contains("VAULT-SECRET"), "ran unasked: {said}");
    let report: Value = serde_json::from_str(&said).expect("report");
    assert_eq!(report["error"]["kind"], "denied", "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"vault\" needs approval and there is no one to ask")),
        "{report}"
    );
    let out = kiln(&call_args(&["--yes"]), s.path());
    assert!(stdout(&out).contains("VAULT-SECRET"), "{}", stdout(&out));
}

#[test]
fn kiln_call_asks_the_terminal_once_and_a_no_refuses() {
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    for (answer, runs) in [("n", false), ("y", true)] {
        let mut cmd = std::process::Command::new(kiln_bin());
        cmd.args(call_args(&[]))
            .current_dir(s.path())
            .env("NO_COLOR", "1");
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn");
        p.exp_string("tool \"vault_read\" may use vault only when a person approves: run it with {\"key\":\"k\"}?")
            .expect("the question");
        p.exp_string("allow? [y]es / [n]o / [a]lways for this run:")
            .expect("prompt");
        p.send_line(answer).expect("answer");
        let rest = p.exp_eof().expect("exits");
        assert_eq!(
            rest.contains("VAULT-SECRET"),
            runs,
            "answer {answer}: {rest}"
        );
        assert!(!rest.contains("approves: run it"), "asked twice: {rest}");
    }
}

/// `kiln ask` with the agent's `.ask(["vault"])`, stdin not a terminal: the tool call is
/// refused and the model reads why, in plain tool calling and inside a code-mode program.
#[test]
fn kiln_ask_against_the_mock_never_runs_an_ask_tool_unasked() {
    let program = r#"let r = ""; try { r = vault_read(#{ key: "k" }); } catch (e) { r = `refused: ${e}`; } r"#;
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]}, {"text": "done"},
        {"tool_calls": [{"name": "run_code", "args": {"code": program}}]}, {"text": "done"},
    ]}));
    let s = Scripts::new(&[(
        "vault.rhai",
        &format!(
            r#"{VAULT}
agent("asker").provider("openai").model("m").base_url("{url}/v1").tools(["vault_read"]).capabilities(["vault"]).ask(["vault"]);
agent("coder").provider("openai").model("m").base_url("{url}/v1").tools(["vault_read"]).capabilities(["vault"]).ask(["vault"]).code_mode(#{{}});"#,
            url = mock.url
        ),
    )]);
    for agent in ["asker", "coder"] {
        let out = ask(
            &[agent, "read it", "--json", "--no-stdlib", "--scripts", "."],
            s.path(),
        );
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{agent}: {} {}", stdout(&out), stderr(&out)));
        let text = report.to_string();
        let result = report["messages"][2]["results"][0]["content"].to_string();
        assert!(result.contains("needs approval"), "{agent}: {result}");
        assert!(
            !result.contains("VAULT-SECRET") && !text.contains("\"VAULT-SECRET\""),
            "{agent} ran it unasked: {text}"
        );
    }
}

#[test]
fn kiln_mcp_asks_the_client_for_a_tools_own_capability() {
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    let args = [
        "--scripts",
        ".",
        "--no-stdlib",
        "--caps",
        "vault",
        "--ask",
        "vault",
    ];
    let call = json!({"name": "vault_read", "arguments": {"key": "k"}});
    // A client that cannot ask: refused.
    let mut mcp = StdioMcp::start(s.path(), &args);
    let reply = mcp.rpc(2, "tools/call", call.clone());
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(!reply.to_string().contains("VAULT-SECRET"), "{reply}");
    // A client that asks its person: declined, then accepted.
    let mut mcp = StdioMcp::start_declaring(s.path(), &args, json!({"elicitation": {}}));
    for (id, action, runs) in [(3, "decline", false), (5, "accept", true)] {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call}));
        let question = mcp.next();
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let content = if runs {
            json!({"approve": true})
        } else {
            json!({})
        };
        mcp.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": action, "content": content}}));
        let reply = mcp.next();
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(
            reply.to_string().contains("VAULT-SECRET"),
            runs,
            "{action}: {reply}"
        );
    }
}

/// `kiln repl --caps vault --ask vault`: `:call` asks at the terminal; a no refuses, a yes runs
/// it once. (`--ask` used to be dropped by the REPL, which then ran the tool unasked.)
#[test]
fn the_repl_asks_the_terminal_before_the_handler() {
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    let mut cmd = std::process::Command::new(kiln_bin());
    cmd.args(["repl", "--scripts", ".", "--no-stdlib", "--caps", "vault"])
        .args(["--ask", "vault"])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .env("KILN_HISTORY", s.path().join("history"))
        .env("TERM", "xterm");
    let mut p = rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn repl");
    p.exp_string(":help for commands").expect("banner");
    for (answer, runs) in [("n", false), ("y", true)] {
        crate::commands::repl::ready(&mut p);
        p.send_line(r#":call vault_read {"key":"k"}"#)
            .expect("send");
        p.exp_string("tool \"vault_read\" may use vault only when a person approves: run it with {\"key\":\"k\"}?")
            .expect("the question");
        p.exp_string("allow? [y]es / [n]o / [a]lways for this run:")
            .expect("prompt");
        p.send_line(answer).expect("answer");
        let (said, _) = p.exp_regex(r"\(\d+\.\d+ ms\)").expect("the outcome");
        assert!(!said.contains("approves: run it"), "asked twice: {said}");
        if runs {
            assert!(said.contains("\"result\": \"VAULT-SECRET\""), "{said}");
        } else {
            assert!(!said.contains("VAULT-SECRET"), "ran unasked: {said}");
            assert!(
                said.contains(r#"\"vault\" needs approval and it was not approved"#),
                "{said}"
            );
        }
    }
    crate::commands::repl::ready(&mut p);
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");
}

/// The agent of the seeds, talking to `base_url`.
pub fn asker(base_url: &str) -> String {
    format!(
        r#"{VAULT}
agent("asker").provider("openai").model("m").base_url("{base_url}/v1").tools(["vault_read"]).capabilities(["vault"]).ask(["vault"]);"#
    )
}

/// `kiln test`: a test's run has no one to ask (no terminal, no `--yes` inside a test), so the
/// agent's call of the tool is refused and the refusal is what the test sees.
#[test]
fn kiln_test_refuses_an_ask_tool_inside_run_agent() {
    let test = r#"
test("vault_read is refused under the agent's ask grant", || {
    let run = run_agent("asker", "read it", #{ model: [
        #{ tool_calls: [#{ name: "vault_read", args: #{ key: "k" } }] },
        #{ text: "refused" },
    ] });
    assert_eq(run.tool_calls.len(), 1);
    assert_err(run.tool_calls[0], "denied");
    assert_match(run.tool_calls[0].error.message, "\"vault\" needs approval and there is no one to ask");
    assert_eq(run.answer, "refused");
});
"#;
    let s = Scripts::new(&[
        ("vault.rhai", &asker("http://127.0.0.1:9")),
        ("vault.test.rhai", test),
    ]);
    let out = kiln(&["test", "--scripts", ".", "--no-stdlib"], s.path());
    let text = stdout(&out);
    assert!(
        text.contains("1 passed, 0 failed"),
        "{text}{}",
        stderr(&out)
    );
    assert!(!text.contains("VAULT-SECRET"), "{text}");
}

/// `kiln run PIPELINE`: a node calling the tool under `--ask vault` is refused without a
/// terminal and runs with `--yes`.
#[test]
fn a_pipeline_node_is_refused_without_a_terminal_and_runs_with_yes() {
    let pipeline = r#"
pipeline("secret").input("key", "string").compute("read", ["key"], "vault_read").result("read").requires("vault");"#;
    let s = Scripts::new(&[("vault.rhai", &format!("{VAULT}{pipeline}"))]);
    let args = |yes: &'static [&'static str]| {
        let mut a = vec!["run", "secret", "--input", "key=k", "--scripts", "."];
        a.extend_from_slice(&["--no-stdlib", "--json", "--caps", "vault", "--ask", "vault"]);
        a.extend_from_slice(yes);
        a
    };
    let out = kiln(&args(&[]), s.path());
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{said}{}", stderr(&out));
    assert!(!said.contains("VAULT-SECRET"), "ran unasked: {said}");
    assert!(
        said.contains("\\\"vault\\\" needs approval and there is no one to ask"),
        "{said}"
    );
    let out = kiln(&args(&["--yes"]), s.path());
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    assert!(out.status.success(), "{report}");
    assert_eq!(report["outputs"]["read"], "VAULT-SECRET", "{report}");
}

/// `kiln extract --caps vault --ask vault`: the call written in the text is refused without a
/// terminal (`--ask` used to be dropped here too).
#[test]
fn kiln_extract_refuses_an_ask_tool_without_a_terminal() {
    use std::io::Write as _;
    let s = Scripts::new(&[("vault.rhai", VAULT)]);
    let mut child = std::process::Command::new(kiln_bin())
        .args([
            "extract",
            "--scripts",
            ".",
            "--no-stdlib",
            "--caps",
            "vault",
        ])
        .args(["--ask", "vault"])
        .current_dir(s.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let text = r#"Reading it: {"tool": "vault_read", "args": {"key": "k"}}"#;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{said}{}", stderr(&out));
    assert!(!said.contains("VAULT-SECRET"), "ran unasked: {said}");
    assert!(
        said.contains("\"vault\" needs approval and there is no one to ask"),
        "{said}"
    );
}
