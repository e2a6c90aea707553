//! Call policies on three doors (`kiln call`, an agent run, `kiln mcp`): denying with a reason
//! the model sees, asking a person, rewriting arguments (validated again), and a saved script
//! changing the policy mid-session.

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::json;

const DB: &str = r#"tool("db_delete").description("Deletes rows")
    .param("table", "string").param("limit", "integer", #{ optional: true })
    .handler(|a| `deleted from ${a.table} (limit ${a.limit})`);
tool("db_read").param("table", "string").handler(|a| `read ${a.table}`);
"#;

const POLICY: &str = r#"policy("no-prod-deletes").applies_to(["db_*"]).check(|c, ctx| {
    if c.name != "db_delete" { return allow(); }
    if c.args.table == "prod" { return deny("never delete from prod"); }
    if c.args.table == "users" { return ask("deleting users"); }
    if c.args.limit == () || c.args.limit > 100 {
        let args = c.args;
        args.limit = 100;
        return args;
    }
    allow()
});
"#;

fn call(s: &Scripts, args: &str, more: &[&str]) -> (Option<i32>, String) {
    call_tool(s, "db_delete", args, more)
}

/// `kiln call TOOL ARGS` over `s`: the exit code and everything it printed.
fn call_tool(s: &Scripts, tool: &str, args: &str, more: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["call", tool, args, "--no-stdlib", "--scripts", "."];
    all.extend_from_slice(more);
    let out = kiln(&all, s.path());
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn kiln_call_meets_each_verdict() {
    let s = Scripts::new(&[("db.rhai", DB), ("policy.rhai", POLICY)]);
    let (code, said) = call(&s, r#"{"table": "prod"}"#, &[]);
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains(
            r#"policy \"no-prod-deletes\" denied the call of db_delete: never delete from prod"#
        ),
        "{said}"
    );
    let (code, said) = call(&s, r#"{"table": "logs", "limit": 5000}"#, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("deleted from logs (limit 100)"),
        "rewritten: {said}"
    );
    let (code, said) = call(&s, r#"{"table": "logs", "limit": 7}"#, &[]);
    assert!(code == Some(0) && said.contains("(limit 7)"), "{said}");
    let (code, said) = call(&s, r#"{"table": "users"}"#, &[]);
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains(
            "deleting users; it needs approval and there is no one to ask (no person can approve it here, and approving every call without asking is off)"
        ),
        "{said}"
    );
    let (code, said) = call(&s, r#"{"table": "users"}"#, &["--yes"]);
    assert_eq!(code, Some(0), "approved with --yes: {said}");

    // A rewrite into arguments the schema refuses is a refusal, not a call.
    let bad = POLICY.replace("args.limit = 100;", "args.limit = \"many\";");
    let s = Scripts::new(&[("db.rhai", DB), ("policy.rhai", &bad)]);
    let (code, said) = call(&s, r#"{"table": "logs"}"#, &[]);
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains(r#"it rewrote the arguments into invalid ones:\n/limit"#),
        "{said}"
    );
}

#[test]
fn an_agents_call_is_denied_with_the_reason_as_a_tool_error_and_the_run_goes_on() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "db_delete", "args": {"table": "prod"}}]},
        {"text": "I may not."},
    ]}));
    let agent = format!(
        "agent(\"ops\").provider(\"openai\").model(\"m\").base_url(\"{}/v1\").tools([\"db_delete\"]);",
        mock.url
    );
    let s = Scripts::new(&[
        ("db.rhai", DB),
        ("policy.rhai", POLICY),
        ("agent.rhai", &agent),
    ]);
    let report = ask_report(s.path(), "ops", "clean prod");
    assert_eq!(report["answer"], "I may not.");
    assert_eq!(
        report["tool_calls"][0]["outcome"]["error"]["kind"], "denied",
        "{report}"
    );
    let sent = mock.requests()[1]["body"]["messages"].to_string();
    assert!(
        sent.contains("never delete from prod"),
        "the model saw the reason: {sent}"
    );
}

#[test]
fn an_mcp_call_takes_the_policy_and_a_saved_script_changes_it_mid_session() {
    let s = Scripts::new(&[("db.rhai", DB), ("policy.rhai", POLICY)]);
    let mut mcp = StdioMcp::start(s.path(), &["--no-stdlib", "--scripts", "."]);
    let call = |mcp: &mut StdioMcp, id: u32, table: &str| {
        let v = mcp.rpc(
            id,
            "tools/call",
            json!({"name": "db_delete", "arguments": {"table": table, "limit": 1}}),
        );
        (
            v["result"]["isError"] == true,
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    let (err, text) = call(&mut mcp, 2, "prod");
    assert!(err && text.contains("never delete from prod"), "{text}");
    let (err, text) = call(&mut mcp, 3, "logs");
    assert!(!err && text == "deleted from logs (limit 1)", "{text}");
    std::fs::write(
        s.path().join("policy.rhai"),
        r#"policy("no-prod-deletes").applies_to(["db_*"]).check(|c, ctx| deny("frozen for the audit"));"#,
    )
    .expect("write");
    mcp.wait_line("reloaded ./policy.rhai");
    let (err, text) = call(&mut mcp, 4, "logs");
    assert!(err && text.contains("frozen for the audit"), "{text}");
    // A broken save keeps the last good version.
    std::fs::write(
        s.path().join("policy.rhai"),
        "policy(\"no-prod-deletes\").check(",
    )
    .expect("write");
    mcp.wait_line("the last good version stays live");
    let (err, text) = call(&mut mcp, 5, "logs");
    assert!(err && text.contains("frozen for the audit"), "{text}");
}

/// A policy that cannot be read never means no policy: a file that declares policies and does
/// not load refuses every call; a check that throws denies its call.
#[test]
fn a_broken_or_throwing_policy_refuses_instead_of_letting_calls_through() {
    let broken = Scripts::new(&[
        ("db.rhai", DB),
        (
            "policy.rhai",
            "policy(\"p\").applies_to([\"*\"]).check(|call, ctx| allow());",
        ),
    ]);
    let (code, said) = call_tool(&broken, "db_read", r#"{"table": "t"}"#, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("the file did not load, so every call is refused until it does"),
        "{said}"
    );
    assert!(
        said.contains("name the parameter something else, such as |c, ctx|"),
        "{said}"
    );

    let throwing = Scripts::new(&[
        ("db.rhai", DB),
        (
            "policy.rhai",
            "policy(\"p\").applies_to([\"db_read\"]).check(|c, ctx| throw \"boom\");",
        ),
    ]);
    let (code, said) = call_tool(&throwing, "db_read", r#"{"table": "t"}"#, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("policy \\\"p\\\" denied the call of db_read: the policy failed"),
        "{said}"
    );
}

/// A broken policy file's refusal names the file as callers see files (its name), never where
/// it lives: to an MCP client, in a `/v1/runs` report, and to the model.
#[test]
fn a_broken_policy_files_refusal_shows_its_name_not_its_absolute_path() {
    let mock = Mock::start(&json!({"by_round": true, "require_auth": false, "turns": [
        {"tool_calls": [{"name": "db_read", "args": {"table": "t"}}]},
        {"text": "Refused."},
    ]}));
    let agent = format!(
        "agent(\"ops\").provider(\"openai\").model(\"m\").base_url(\"{}/v1\").tools([\"db_read\"]);",
        mock.url
    );
    let s = Scripts::new(&[
        ("db.rhai", DB),
        ("agent.rhai", &agent),
        (
            "pol.rhai",
            "policy(\"p\").applies_to([\"*\"])\n    .check(|call, ctx| allow());",
        ),
        // Loaded first, so its check runs before the broken file's refusal.
        (
            "a_throws.rhai",
            "policy(\"t\").applies_to([\"db_delete\"]).check(|c, ctx| throw \"boom\");",
        ),
    ]);
    let dir = s.path().display().to_string();
    let shown = |what: &str, text: &str| {
        assert!(!text.contains(&dir), "{what} shows {dir}: {text}");
        assert!(
            text.contains("policy \\\"policies of pol.rhai\\\" denied")
                || text.contains("policy \"policies of pol.rhai\" denied"),
            "{what}: {text}"
        );
        assert!(text.contains("pol.rhai:2:"), "{what}: {text}");
    };

    let mut mcp = StdioMcp::start(s.path(), &["--no-stdlib", "--scripts", &dir]);
    let got = mcp.rpc(
        1,
        "tools/call",
        json!({"name": "db_read", "arguments": {"table": "t"}}),
    );
    assert_eq!(got["result"]["isError"], true, "{got}");
    shown(
        "MCP",
        got["result"]["content"][0]["text"].as_str().unwrap_or(""),
    );
    // A check that throws names its file the same way.
    let got = mcp.rpc(
        2,
        "tools/call",
        json!({"name": "db_delete", "arguments": {"table": "t"}}),
    );
    let text = got["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(!text.contains(&dir), "a throwing check shows {dir}: {text}");
    assert!(
        text.contains(
            "policy \"t\" denied the call of db_delete: the policy failed: a_throws.rhai"
        ),
        "{text}"
    );
    drop(mcp);

    let db = s.path().join("k.db");
    let serve = crate::doors::serve::Serve::start(s.path(), &db, &["--no-stdlib"], &[]);
    let (status, run) = post(
        &format!("{}/v1/runs", serve.url),
        &json!({"agent": "ops", "input": "read t"}),
        &[],
    );
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["report"]["answer"], "Refused.", "{run}");
    shown("/v1/runs", &run.to_string());
    shown(
        "the model",
        &mock.requests()[1]["body"]["messages"].to_string(),
    );
}
