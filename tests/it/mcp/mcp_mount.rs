//! MCP servers inside kiln: `kiln mcp` itself is mounted with `--mcp srv=...`, its tools run in
//! an agent against `kiln mock`, and its list_changed reaches the registry.

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};
use std::process::Command;

const SERVER_TOOLS: &str = r#"
tool("add").description("Adds two numbers").title("Add").param("a", "int").param("b", "int")
    .handler(|args| args.a + args.b);
tool("refuse").description("Always refuses").handler(|args| throw tool_error("no way"));
"#;

/// `kiln ask calc Add --json [EXTRA...]` against `mock`: the tool calls of the run.
pub(crate) fn ask_calc(dir: &std::path::Path, mock: &Mock, extra: &[&str]) -> Vec<Value> {
    let base = [
        "calc",
        "Add",
        "--scripts",
        ".",
        "--base-url",
        &mock.url,
        "--json",
    ];
    let out = ask(&[&base[..], extra].concat(), dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("--json output");
    v["tool_calls"].as_array().cloned().expect("calls")
}

const AGENT: &str = r#"
agent("calc").provider("anthropic").model("mock-model")
    .tools(["srv__add", "srv__refuse"]).capabilities(["mcp:srv"]);
"#;

/// `srv=kiln mcp ...` serving the tools of `dir`.
fn mount_arg(dir: &std::path::Path) -> String {
    format!(
        "srv={} mcp --no-stdlib --scripts {}",
        kiln_bin().display(),
        dir.display()
    )
}

#[test]
fn mcp_mounted_tools_run_in_an_agent_validated_before_forwarding() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let agent = Scripts::new(&[("agent.rhai", AGENT)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [
            {"name": "srv__add", "args": {"a": 2, "b": 3}},
            {"name": "srv__add", "args": {"a": "two", "b": 3}},
            {"name": "srv__refuse", "args": {}}
        ]},
        {"text": "Done."}
    ]}));
    let mount = mount_arg(server.path());
    let out = ask(
        &[
            "calc",
            "Add 2 and 3",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
            "--json",
            "--mcp",
            &mount,
        ],
        agent.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("--json output");
    assert_eq!(v["answer"], "Done.");
    let calls = v["tool_calls"].as_array().expect("calls");
    assert_eq!(calls[0]["outcome"]["result"], "5", "{}", calls[0]);
    let invalid = calls[1]["outcome"].to_string();
    // kiln's own validation, under the mounted name: the call never left kiln.
    assert!(
        invalid.contains("Invalid arguments for tool \\\"srv__add\\\"") && invalid.contains("/a"),
        "{invalid}"
    );
    let refused = calls[2]["outcome"].to_string();
    assert!(
        refused.contains("no way"),
        "the server's isError reaches the model: {refused}"
    );
    // The model saw all three results.
    let second = mock.requests()[1]["body"].to_string();
    assert!(
        second.contains("no way") && second.contains("srv__add"),
        "{second}"
    );
}

#[test]
fn mcp_mounted_tools_need_the_mcp_capability() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let dir = Scripts::new(&[]);
    let mount = mount_arg(server.path());
    let refused = kiln(
        &[
            "call",
            "srv__add",
            r#"{"a": 1, "b": 2}"#,
            "--scripts",
            ".",
            "--mcp",
            &mount,
        ],
        dir.path(),
    );
    assert!(!refused.status.success());
    assert!(
        stdout(&refused).contains("requires capabilities [mcp:srv]"),
        "{}",
        stdout(&refused)
    );
    let ok = kiln(
        &[
            "call",
            "srv__add",
            r#"{"a": 1, "b": 2}"#,
            "--scripts",
            ".",
            "--mcp",
            &mount,
            "--caps",
            "mcp:srv",
        ],
        dir.path(),
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("\"result\": \"3\""), "{}", stdout(&ok));
}

#[test]
fn mcp_a_mounted_servers_list_changed_reloads_the_registry() {
    // An outer `kiln mcp` mounts an inner one; a script saved in the inner one's folder
    // reaches the outer one's client as list_changed, and the new tool is listed.
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let dir = Scripts::new(&[]);
    let mount = mount_arg(server.path());
    let mut mcp = StdioMcp::start(
        dir.path(),
        &[
            "--no-stdlib",
            "--scripts",
            ".",
            "--caps",
            "mcp:srv",
            "--mcp",
            &mount,
        ],
    );
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = mcp.rpc(1, "tools/list", json!({}));
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(names(&listed), ["srv__add", "srv__refuse"]);
    std::fs::write(
        server.path().join("more.rhai"),
        r#"tool("added").description("New").handler(|args| "new");"#,
    )
    .expect("write script");
    let note = mcp.next();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let after = mcp.rpc(2, "tools/list", json!({}));
    assert_eq!(names(&after), ["srv__added", "srv__add", "srv__refuse"]);
}

#[test]
fn mcp_a_server_mounted_by_url_gets_its_bearer_token() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let http = crate::mcp::McpHttp::start(
        server.path(),
        &["--scripts", ".", "--token-env", "KILN_MCP_TEST_TOKEN"],
        &[("KILN_MCP_TEST_TOKEN", "mount-token")],
    );
    let dir = Scripts::new(&[]);
    let call = |mount: &str, token: &str| {
        Command::new(kiln_bin())
            .args(["call", "srv__add", r#"{"a": 4, "b": 5}"#, "--scripts", "."])
            .args(["--caps", "mcp:srv", "--mcp", mount])
            .env("SRV_TOKEN", token)
            .current_dir(dir.path())
            .output()
            .expect("run kiln call")
    };
    let with_token = format!("srv={} bearer_env=SRV_TOKEN", http.url);
    let ok = call(&with_token, "mount-token");
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("\"result\": \"9\""), "{}", stdout(&ok));
    let refused = call(&with_token, "wrong-token");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused)
            .contains("MCP server \"srv\": it refused the bearer token in SRV_TOKEN (HTTP 401)"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn mcp_a_mounted_server_that_dies_gives_a_clear_error_then_is_restarted() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let dir = Scripts::new(&[]);
    let d = dir.path().display();
    // The wrapper refuses to start while `down` exists, so the outage lasts until we lift it.
    let wrapper = format!(
        "#!/bin/sh\nif [ -e {d}/down ]; then exit 1; fi\necho $$ >> {d}/pids\nexec {} mcp --no-stdlib --scripts {}\n",
        kiln_bin().display(),
        server.path().display()
    );
    std::fs::write(dir.path().join("server.sh"), wrapper).expect("wrapper");
    let mount = format!("srv=sh {d}/server.sh");
    let mut mcp = StdioMcp::start(
        dir.path(),
        &[
            "--no-stdlib",
            "--scripts",
            ".",
            "--caps",
            "mcp:srv",
            "--mcp",
            &mount,
        ],
    );
    let add = json!({"name": "srv__add", "arguments": {"a": 1, "b": 2}});
    let text = |v: &Value| {
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(text(&mcp.rpc(1, "tools/call", add.clone())), "3");

    std::fs::write(dir.path().join("down"), "").expect("down");
    let pids = std::fs::read_to_string(dir.path().join("pids")).expect("pids");
    signal(pids.trim().parse().expect("pid"), "KILL");
    mcp.wait_line("MCP server srv stopped");
    let during = mcp.rpc(2, "tools/call", add.clone());
    assert_eq!(during["result"]["isError"], true, "{during}");
    assert!(
        text(&during).contains("MCP server \"srv\" is not running"),
        "{during}"
    );

    std::fs::remove_file(dir.path().join("down")).expect("up");
    mcp.wait_line("restarted MCP server srv");
    assert_eq!(text(&mcp.rpc(3, "tools/call", add)), "3");
}

#[test]
fn mcp_a_server_that_cannot_start_is_a_clear_error() {
    let dir = Scripts::new(&[]);
    let out = kiln(
        &[
            "tools",
            "--scripts",
            ".",
            "--mcp",
            "gone=/nonexistent/mcp-server --flag",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("MCP server \"gone\": cannot start `/nonexistent/mcp-server`"),
        "{}",
        stderr(&out)
    );
    let bad = kiln(&["tools", "--mcp", "no-equals-sign"], dir.path());
    assert!(
        stderr(&bad).contains("bad MCP server spec \"no-equals-sign\""),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn mcp_a_started_server_does_not_inherit_the_provider_keys() {
    let server = Scripts::new(&[(
        "env.rhai",
        r#"tool("key").description("Reads a key").requires(["env"]).handler(|args| `${env("ANTHROPIC_API_KEY")}|${env("OTHER_SETTING")}`);"#,
    )]);
    let dir = Scripts::new(&[]);
    let mount = format!(
        "srv={} mcp --no-stdlib --caps env:ANTHROPIC_API_KEY,env:OTHER_SETTING --scripts {}",
        kiln_bin().display(),
        server.path().display()
    );
    let out = Command::new(kiln_bin())
        .args([
            "call",
            "srv__key",
            "{}",
            "--scripts",
            ".",
            "--caps",
            "mcp:srv",
        ])
        .args(["--mcp", &mount])
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("OTHER_SETTING", "passed-on")
        .current_dir(dir.path())
        .output()
        .expect("run kiln call");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("passed-on"), "{}", stdout(&out));
    assert!(!stdout(&out).contains(TEST_KEY), "{}", stdout(&out));
}

/// A script declaring `srv` as `kiln mcp` serving `dir`'s tools (stdio).
fn declared_server(dir: &std::path::Path) -> String {
    format!(
        "mcp_server(\"srv\").command({:?}, [\"mcp\", \"--no-stdlib\", \"--scripts\", {:?}]);\n",
        kiln_bin().display().to_string(),
        dir.display().to_string()
    )
}

#[test]
fn mcp_a_server_declared_in_a_script_runs_in_an_agent_listing_server_star() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let agent = format!(
        "{}agent(\"calc\").provider(\"anthropic\").model(\"mock-model\")\n    .tools([\"srv__*\"]).capabilities([\"mcp:srv\"]);\n",
        declared_server(server.path())
    );
    let dir = Scripts::new(&[("agent.rhai", &agent)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [
            {"name": "srv__add", "args": {"a": 2, "b": 3}},
            {"name": "srv__refuse", "args": {}}
        ]},
        {"text": "Done."}
    ]}));
    let calls = ask_calc(dir.path(), &mock, &[]);
    assert_eq!(calls[0]["outcome"]["result"], "5", "{}", calls[0]);
    assert!(
        calls[1]["outcome"].to_string().contains("no way"),
        "{}",
        calls[1]
    );
    // `srv__*` offered the model every tool of the server.
    let first = mock.requests()[0]["body"].to_string();
    assert!(
        first.contains("srv__add") && first.contains("srv__refuse"),
        "{first}"
    );

    let tools = kiln(&["tools", "--scripts", "."], dir.path());
    assert!(tools.status.success(), "{}", stderr(&tools));
    let listing = stdout(&tools);
    assert!(
        listing.contains("(MCP server srv) Adds two numbers"),
        "{listing}"
    );
    let row = listing
        .lines()
        .find(|l| l.starts_with("srv "))
        .unwrap_or_else(|| panic!("a server row in {listing}"));
    // `kiln tools` only reads: it started nothing, and lists what `kiln ask` recorded.
    assert!(
        row.contains("agent.rhai:1:1") && row.ends_with("not started (2 tools as last recorded)"),
        "{row}"
    );
    assert!(
        stderr(&tools).contains("mcp_server(\"srv\") declared at ./agent.rhai:1")
            && stderr(&tools).contains("was not started: `kiln tools` only reads the project"),
        "{}",
        stderr(&tools)
    );
}

#[test]
fn mcp_server_declarations_are_checked_at_load() {
    let dir = Scripts::new(&[(
        "servers.rhai",
        r#"mcp_server("a__b").command("x");
mcp_server("none");
mcp_server("both").command("x").url("http://127.0.0.1:1/mcp");
mcp_server("far").url("http://example.com/mcp");
mcp_server("meta").url("http://169.254.169.254/mcp");
mcp_server("tok").command("x").bearer_env("T");
mcp_server("ok").url("https://example.com/mcp").env(["A"]);
"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], dir.path());
    assert!(!out.status.success());
    let err = stderr(&out);
    for expected in [
        "servers.rhai:1:1: mcp_server \"a__b\": invalid server name",
        "servers.rhai:2:1: mcp_server \"none\": needs .command(program, [args]) or .url(",
        "servers.rhai:3:33: mcp_server \"both\": a server has one .command(...) or one .url(...)",
        "servers.rhai:4:1: mcp_server \"far\": URL \"http://example.com/mcp\": plain http only to this machine",
        "servers.rhai:5:1: mcp_server \"meta\": URL \"http://169.254.169.254/mcp\": a link-local address",
        "servers.rhai:6:32: mcp_server \"tok\": .bearer_env(...) goes with .url(...)",
        "servers.rhai:7:49: mcp_server \"ok\": .env(...) goes with .command(...)",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
}

#[test]
fn mcp_two_servers_of_one_name_and_a_failing_server_are_reported() {
    let dir = Scripts::new(&[
        (
            "a.rhai",
            "mcp_server(\"gone\").command(\"/nonexistent/mcp-server\");\n",
        ),
        (
            "b.rhai",
            "\n  mcp_server(\"gone\").command(\"/nonexistent/other\");\n",
        ),
    ]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], dir.path());
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("b.rhai:2:3: duplicate MCP server \"gone\": already declared at ./a.rhai:1:1"),
        "{err}"
    );
    let listing = stdout(&out);
    let row = listing
        .lines()
        .find(|l| l.starts_with("gone "))
        .unwrap_or_else(|| panic!("a server row in {listing}"));
    // `kiln check` only reads the project: it starts no server, so none fails to start.
    assert!(row.ends_with("not started"), "{row}");
    assert!(!err.contains("cannot start"), "{err}");
    assert!(
        err.contains("its tools are not listed: it has not been started here yet"),
        "{err}"
    );
}

#[test]
fn mcp_a_script_edit_starts_and_stops_a_declared_server() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let dir = Scripts::new(&[]);
    let mut mcp = StdioMcp::start(
        dir.path(),
        &["--no-stdlib", "--scripts", ".", "--caps", "mcp:srv"],
    );
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert!(names(&mcp.rpc(1, "tools/list", json!({}))).is_empty());

    std::fs::write(dir.path().join("srv.rhai"), declared_server(server.path())).expect("write");
    let line = mcp.wait_line("started MCP server srv");
    assert!(line.contains("running (2 tools)"), "{line}");
    let listed = mcp.rpc(2, "tools/list", json!({}));
    assert_eq!(names(&listed), ["srv__add", "srv__refuse"]);
    // The server's own title and hints are passed on (the inner add needs nothing: read-only),
    // not replaced by what `mcp:srv` alone would suggest.
    let add_def = &listed["result"]["tools"][0];
    assert_eq!(add_def["title"], "Add", "{add_def}");
    assert_eq!(add_def["annotations"]["readOnlyHint"], true, "{add_def}");
    assert_eq!(add_def["annotations"]["openWorldHint"], false, "{add_def}");
    let add = json!({"name": "srv__add", "arguments": {"a": 1, "b": 2}});
    assert_eq!(
        mcp.rpc(3, "tools/call", add)["result"]["content"][0]["text"],
        "3"
    );

    let changed = declared_server(server.path()).replace(");\n", ").rate_limit(100, 1);\n");
    std::fs::write(dir.path().join("srv.rhai"), changed).expect("change");
    let line = mcp.wait_line("restarted MCP server srv (its declaration changed)");
    assert!(line.contains("running (2 tools)"), "{line}");
    assert_eq!(
        names(&mcp.rpc(4, "tools/list", json!({}))),
        ["srv__add", "srv__refuse"]
    );

    std::fs::write(dir.path().join("srv.rhai"), "// no servers\n").expect("rewrite");
    mcp.wait_line("stopped MCP server srv (no longer declared)");
    assert!(names(&mcp.rpc(5, "tools/list", json!({}))).is_empty());
}

#[test]
fn mcp_a_cancelled_call_cancels_the_mounted_servers_call() {
    // The inner server logs (-v) each failed call: its slow handler must be stopped by the
    // cancellation kiln forwards, not left to run out its 10 s.
    let server = Scripts::new(&[(
        "slow.rhai",
        r#"tool("slow").description("Takes 10 s").handler(|args| { print("slow started"); for i in 0..500 { sleep(0.02); } "done" });"#,
    )]);
    let declared = format!(
        "mcp_server(\"srv\").command({:?}, [\"mcp\", \"-v\", \"--no-stdlib\", \"--scripts\", {:?}]);\n",
        kiln_bin().display().to_string(),
        server.path().display().to_string()
    );
    let dir = Scripts::new(&[("srv.rhai", &declared)]);
    let mut mcp = StdioMcp::start(
        dir.path(),
        &["--no-stdlib", "--scripts", ".", "--caps", "mcp:srv"],
    );
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "srv__slow", "arguments": {}}});
    mcp.send(&call);
    // Cancelled once the inner server is running the handler (it logs its print at -v).
    mcp.wait_line("slow started");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user changed their mind"}});
    mcp.send(&cancel);
    let failed = mcp.wait_line("MCP call failed");
    // The inner server's own handler (slow.rhai) was stopped, not the outer proxy only.
    assert!(
        failed.contains("slow.rhai") && failed.contains("\"cancelled\""),
        "{failed}"
    );
}

#[test]
fn mcp_a_declared_servers_rate_limit_applies_to_its_tools() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let decl = declared_server(server.path()).replace(");\n", ").rate_limit(1, 60);\n");
    let agent = format!(
        "{decl}agent(\"calc\").provider(\"anthropic\").model(\"mock-model\")\n    .tools([\"srv__add\"]).capabilities([\"mcp:srv\"]);\n"
    );
    let dir = Scripts::new(&[("agent.rhai", &agent)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "srv__add", "args": {"a": 2, "b": 3}}]},
        {"tool_calls": [{"name": "srv__add", "args": {"a": 4, "b": 5}}]},
        {"text": "Done."}
    ]}));
    let calls = ask_calc(dir.path(), &mock, &[]);
    assert_eq!(calls[0]["outcome"]["result"], "5", "{}", calls[0]);
    let limited = calls[1]["outcome"].to_string();
    assert!(limited.contains("rate_limited"), "{limited}");
}

#[test]
fn mcp_a_declared_server_starts_in_the_workspace_and_gets_only_the_keys_it_names() {
    // The inner server's scripts folder is relative: it is found only from the workspace.
    let workspace = Scripts::new(&[]);
    std::fs::create_dir(workspace.path().join("inner")).expect("mkdir");
    std::fs::write(
        workspace.path().join("inner/env.rhai"),
        r#"tool("key").description("Reads the keys").requires(["env"]).handler(|args| `${env("OPENAI_API_KEY")}|${env("ANTHROPIC_API_KEY")}`);"#,
    )
    .expect("inner script");
    let serve = |name: &str, extra: &str| {
        format!(
            "mcp_server({name:?}).command({:?}, [\"mcp\", \"--no-stdlib\", \"--caps\", \"env:OPENAI_API_KEY,env:ANTHROPIC_API_KEY\", \"--scripts\", \"inner\"]){extra};\n",
            kiln_bin().display().to_string()
        )
    };
    let decls = format!(
        "{}{}",
        serve("named", ".env([\"OPENAI_API_KEY\"])"),
        serve("plain", "")
    );
    let dir = Scripts::new(&[("servers.rhai", &decls)]);
    let call = |tool: &str| {
        Command::new(kiln_bin())
            .args([
                "call",
                tool,
                "{}",
                "--scripts",
                ".",
                "--caps",
                "mcp:named,mcp:plain",
            ])
            .arg("--workspace")
            .arg(workspace.path())
            .env("OPENAI_API_KEY", "named-on-purpose")
            .env("ANTHROPIC_API_KEY", TEST_KEY)
            .current_dir(dir.path())
            .output()
            .expect("run kiln call")
    };
    let named = call("named__key");
    assert!(named.status.success(), "{}", stderr(&named));
    assert!(
        stdout(&named).contains("\"named-on-purpose|\""),
        "{}",
        stdout(&named)
    );
    let plain = call("plain__key");
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(stdout(&plain).contains("\"|\""), "{}", stdout(&plain));
    assert!(!stdout(&named).contains(TEST_KEY) && !stdout(&plain).contains(TEST_KEY));
}

#[test]
fn mcp_a_declared_servers_tool_colliding_with_a_script_tool_is_a_load_error() {
    let server = Scripts::new(&[("tools.rhai", SERVER_TOOLS)]);
    let dir = Scripts::new(&[
        (
            "a_tool.rhai",
            "tool(\"srv__add\").description(\"Mine\").handler(|args| 1);\n",
        ),
        ("srv.rhai", &declared_server(server.path())),
    ]);
    let duplicate =
        "srv.rhai:1:1: duplicate tool \"srv__add\": already defined at ./a_tool.rhai:1:1";
    // A command that runs tools starts the server and finds the collision ...
    let out = kiln(
        &["call", "--no-stdlib", "--scripts", ".", "srv__add", "{}"],
        dir.path(),
    );
    assert!(stderr(&out).contains(duplicate), "{}", stderr(&out));
    // ... and `kiln check`, which starts nothing, finds it in what that start recorded.
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], dir.path());
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(duplicate), "{err}");
}
