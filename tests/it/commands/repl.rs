//! The REPL in a real pseudo-terminal (rexpect).

use crate::common::*;
use rexpect::session::PtySession;
use std::process::Command;

fn start(s: &Scripts, history: &std::path::Path) -> PtySession {
    let mut cmd = Command::new(kiln_bin());
    cmd.args(["repl", "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .env("KILN_HISTORY", history)
        .env("TERM", "xterm");
    let mut p = rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn repl");
    p.exp_string(":help for commands").expect("banner");
    ready(&mut p);
    p
}

/// Waits for the prompt and for the editor to take input again (type-ahead is discarded
/// when the terminal switches to raw mode).
pub fn ready(p: &mut PtySession) {
    ready_as(p, "kiln> ");
}

fn ready_as(p: &mut PtySession, prompt: &str) {
    p.exp_string(prompt).expect("prompt");
    std::thread::sleep(std::time::Duration::from_millis(150));
}

const TOOLS: &str = "tool(\"greet\").param(\"who\", \"string\").handler(|a| `hello ${a.who}`);\ntool(\"slow\").handler(|a| { sleep(30); \"late\" });\n";

#[test]
fn call_edit_see_the_notice_and_call_again() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let hist = s.path().join("history");
    let mut p = start(&s, &hist);
    p.send_line(r#":call greet {"who": "ann"}"#).expect("send");
    p.exp_string("\"result\": \"hello ann\"")
        .expect("v1 result");
    p.exp_string("ms)").expect("duration");
    std::fs::write(s.path().join("t.rhai"), TOOLS.replace("hello", "howdy")).expect("edit");
    p.exp_string("reloaded ./t.rhai: +0 ~2 -0 tools")
        .expect("reload notice");
    ready(&mut p);
    p.send_line(r#":call greet {"who": "ann"}"#).expect("send");
    p.exp_string("\"result\": \"howdy ann\"")
        .expect("new behaviour");
    std::fs::write(s.path().join("t.rhai"), "tool(\"greet\").handler(|a| ;").expect("break");
    p.exp_string("the last good version stays live")
        .expect("error notice");
    ready(&mut p);
    p.send_line(":errors").expect("send");
    p.exp_string("./t.rhai:1:").expect("error with location");
    ready(&mut p);
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("exits on Ctrl-D");
    assert!(
        std::fs::read_to_string(&hist)
            .expect("history saved")
            .contains(":call greet")
    );
}

#[test]
fn multi_line_rhai_and_variables_persist() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let mut p = start(&s, &s.path().join("h"));
    p.send_line("let double = |x| {").expect("send");
    p.send_line("  x * 2").expect("send");
    p.send_line("};").expect("send");
    ready(&mut p);
    p.send_line("let n = 20;").expect("send");
    ready(&mut p);
    p.send_line("double.call(n) + 2").expect("send");
    p.exp_string("42")
        .expect("multi-line closure and variables");
    ready(&mut p);
    p.send_line("let s = `open").expect("send");
    p.send_line("string`; s.len()").expect("send");
    p.exp_string("11").expect("unterminated string continues");
    ready(&mut p);
    p.send_line("call_tool(\"greet\", #{ who: \"bo\" })")
        .expect("send");
    p.exp_string("\"hello bo\"").expect("call_tool");
    ready(&mut p);
    p.send_line("undefined_fn()").expect("send");
    p.exp_string("error:")
        .expect("a script error does not exit");
    ready(&mut p);
    p.send_line("1 + 1").expect("send");
    p.exp_string("2").expect("still alive");
    ready(&mut p);
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");
}

#[test]
fn tab_completes_commands_tools_and_formats() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let mut p = start(&s, &s.path().join("h"));
    p.send(":sch\t").expect("tab");
    p.flush().expect("flush");
    p.exp_string(":schema").expect("command completed");
    p.send("gre\t").expect("tab");
    p.flush().expect("flush");
    p.exp_string("greet").expect("tool completed");
    p.send("anthr\t").expect("tab");
    p.flush().expect("flush");
    p.exp_string("anthropic").expect("format completed");
    p.send_line("").expect("enter");
    p.exp_string("\"input_schema\"")
        .expect("completed to :schema greet anthropic");
    ready(&mut p);
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");
}

#[test]
fn ctrl_c_cancels_a_slow_tool_and_returns_to_the_prompt() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let mut p = start(&s, &s.path().join("h"));
    p.send_line(":call slow {}").expect("send");
    std::thread::sleep(std::time::Duration::from_millis(500));
    p.send_control('c').expect("ctrl-c");
    p.exp_string("\"kind\": \"cancelled\"").expect("cancelled");
    p.exp_string("kiln> ").expect("prompt again");
    p.send_line(r#":call greet {"who": "cy"}"#).expect("send");
    p.exp_string("hello cy").expect("still serving");
    ready(&mut p);
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");
}

#[test]
fn sessions_continue_across_repl_restarts() {
    let s = Scripts::new(&[]);
    let demo = repo().join("examples/demo").display().to_string();
    let open = || {
        let mut cmd = Command::new(kiln_bin());
        cmd.args(["repl", "--scripts", &demo])
            .current_dir(s.path())
            .env("NO_COLOR", "1")
            .env("KILN_HISTORY", s.path().join("h"))
            .env("TERM", "xterm");
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn repl");
        p.exp_string(":help for commands").expect("banner");
        ready(&mut p);
        p
    };
    let mut p = open();
    p.send_line(":agent demo").expect("send");
    p.exp_string("chatting with demo").expect("agent");
    ready_as(&mut p, "kiln[demo]> ");
    p.send_line(":session talk").expect("send");
    p.exp_string("new session talk").expect("session");
    ready_as(&mut p, "kiln[demo]> ");
    p.send_line("What is 10% of 50?").expect("send");
    p.exp_string("FIVE").expect("answer");
    ready_as(&mut p, "kiln[demo]> ");
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");

    let mut p = open();
    p.send_line(":session talk").expect("send");
    p.exp_string("continuing session talk with demo (8 messages)")
        .expect("restored");
    ready_as(&mut p, "kiln[demo]> ");
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");
}

/// An offline agent whose only move is a lone call of a tool that sleeps for a minute.
const SLEEPY: &str = r#"
tool("nap").handler(|a| { print("nap started"); sleep(60); "rested" });
agent("sleepy")
    .provider("script")
    .tools(["nap"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" { return #{ tool_calls: [#{ name: "nap", args: #{} }] }; }
        #{ text: "done" }
    });
"#;

#[test]
fn ctrl_c_during_a_chat_turn_cancels_the_running_tool_promptly_and_logs_the_run_cancelled() {
    let s = Scripts::new(&[("t.rhai", SLEEPY)]);
    let mut cmd = Command::new(kiln_bin());
    // -v shows the script's print, which says the tool is running.
    cmd.args(["repl", "-v", "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .env("KILN_HISTORY", s.path().join("h"))
        .env_remove("KILN_LOG")
        .env("TERM", "xterm");
    let mut p = rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn repl");
    p.exp_string(":help for commands").expect("banner");
    ready(&mut p);
    p.send_line(":agent sleepy").expect("send");
    ready_as(&mut p, "kiln[sleepy]> ");
    p.send_line("take a nap").expect("send");
    p.exp_string("nap started").expect("the tool runs");
    let sent = std::time::Instant::now();
    p.send_control('c').expect("ctrl-c");
    p.exp_string("error: cancelled")
        .expect("the turn ends as cancelled");
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(10),
        "Ctrl-C waited {:?} for the tool",
        sent.elapsed()
    );
    ready_as(&mut p, "kiln[sleepy]> ");
    p.send_line(":quit").expect("quit");
    p.exp_eof().expect("exits");

    let logs = kiln(&["logs", "--json"], s.path());
    let runs: serde_json::Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let run = &runs[0];
    assert_eq!(run["agent"], "sleepy", "{runs:#}");
    assert_eq!(run["status"], "cancelled", "{runs:#}");
    assert!(run["ended_at"].is_number(), "{runs:#}");
    let calls = run["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 1, "{runs:#}");
    assert_eq!(calls[0]["name"], "nap");
    assert_eq!(
        calls[0]["outcome"]["error"]["kind"], "cancelled",
        "{runs:#}"
    );
}

#[test]
fn mcp_lists_the_servers_and_their_state() {
    let server = Scripts::new(&[(
        "tools.rhai",
        "tool(\"add\").param(\"a\", \"int\").param(\"b\", \"int\").handler(|args| args.a + args.b);\n",
    )]);
    let decl = format!(
        "mcp_server(\"srv\").command({:?}, [\"mcp\", \"--no-stdlib\", \"--scripts\", {:?}]);\nmcp_server(\"gone\").command(\"/nonexistent/mcp-server\");\n",
        kiln_bin().display().to_string(),
        server.path().display().to_string()
    );
    let s = Scripts::new(&[("servers.rhai", &decl)]);
    let hist = s.path().join("history");
    let mut p = start(&s, &hist);
    p.send_line(":mcp").expect("send");
    p.exp_string("srv  running (1 tools)")
        .expect("the running server");
    p.exp_string("(./servers.rhai:1:1)")
        .expect("where it is declared");
    p.exp_string("gone  failed: MCP server \"gone\": cannot start `/nonexistent/mcp-server`")
        .expect("the failed server with its reason");
    ready(&mut p);
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("exits on Ctrl-D");
}

#[test]
fn a_repl_call_goes_through_the_host_and_reaches_the_run_log() {
    let s = Scripts::new(&[("t.rhai", TOOLS)]);
    let mut p = start(&s, &s.path().join("history"));
    p.send_line(r#":call greet {"who": "bo"}"#).expect("send");
    p.exp_string("\"result\": \"hello bo\"").expect("result");
    ready(&mut p);
    // Invalid arguments are refused by the same validation a model's call meets.
    p.send_line(r#":call greet {"who": 5}"#).expect("send");
    p.exp_string("invalid_arguments").expect("validated");
    ready(&mut p);
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("exits");
    let out = kiln(&["logs", "--json", "--scripts", "."], s.path());
    let logs: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let text = logs.to_string();
    assert!(text.contains("call:greet"), "{text}");
    assert!(text.contains("hello bo"), "{text}");
}
