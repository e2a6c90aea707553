//! `kiln.toml`'s keys beyond `[serve]`, each observed through the real binary: mounts (and a
//! kiln mounted by its own project not mounting itself again), `[network]`, `workspace`, the
//! switches a flag turns back (`--stdlib`, `--code-mode=false`, `kiln mcp --stdio`), and the
//! settings that would otherwise be ignored without a word.

use crate::commands::project::project;
use crate::common::*;
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// The first column of `kiln tools`' table (tool names, then the MCP servers' table).
fn tool_names(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = Command::new(kiln_bin());
    cmd.args(args)
        .arg("tools")
        .current_dir(dir)
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kiln tools");
    assert!(out.status.success(), "{}", stderr(&out));
    (stdout(&out).lines().skip(1))
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn stdlib_false_is_turned_back_by_stdlib_and_kiln_net_proxy_takes_one() {
    let dir = project("scripts = [\"tools\"]\nstdlib = false\n");
    assert_eq!(tool_names(dir.path(), &[], &[]), ["lookup"]);
    let all = tool_names(dir.path(), &["--stdlib"], &[]);
    assert!(all.contains(&"current_time".to_string()), "{all:?}");
    // KILN_NET_PROXY reads as a switch (1/0, yes/no, true/false), not only true/false.
    for value in ["1", "yes", "0"] {
        let names = tool_names(dir.path(), &[], &[("KILN_NET_PROXY", value)]);
        assert_eq!(names, ["lookup"], "KILN_NET_PROXY={value}");
    }
    let out = kiln(&["--stdlib", "--no-stdlib", "tools"], dir.path());
    assert_eq!(out.status.code(), Some(2), "the two switches conflict");
}

/// One MCP exchange over `kiln mcp`'s stdio: initialize, then `tools/list`; the tool names.
fn mcp_tools_over_stdio(dir: &Path, args: &[&str]) -> Vec<String> {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let msgs = [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let seen = mcp_stdio(dir, args, &msgs);
    let list = seen.iter().find(|m| m["id"] == 2).expect("the tool list");
    (list["result"]["tools"].as_array().expect("tools").iter())
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn kiln_mcp_stdio_and_code_mode_false_turn_back_what_mcp_turns_on() {
    let toml = "scripts = [\"tools\"]\nstdlib = false\n\n[mcp]\nhttp = \"127.0.0.1:0\"\ncode_mode = true\n";
    let dir = project(toml);
    // The file says HTTP; --stdio speaks stdio all the same, in code mode as the file says.
    let names = mcp_tools_over_stdio(dir.path(), &["--stdio"]);
    assert!(names.contains(&"run_code".to_string()), "{names:?}");
    assert!(!names.contains(&"lookup".to_string()), "{names:?}");
    let names = mcp_tools_over_stdio(dir.path(), &["--stdio", "--code-mode=false"]);
    assert_eq!(names, ["lookup"]);
}

#[test]
fn the_files_mounts_mount_and_a_kiln_it_starts_does_not_mount_them_again() {
    // The project mounts itself: `kiln mcp` run from the same folder reads the same file.
    let toml = format!(
        "scripts = [\"tools\"]\nstdlib = false\n\n[mounts]\nitself = \"{} mcp\"\n",
        kiln_bin().display()
    );
    let dir = project(&toml);
    let out = kiln(
        &[
            "call",
            "itself__lookup",
            "{\"sku\": \"SKU-1\"}",
            "--caps",
            "mcp:itself",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("SKU-1"), "{}", stdout(&out));
    // What the mounted kiln sees: the marker its parent sets leaves the file's mounts out.
    let out = kiln(&["tools"], dir.path());
    assert!(stdout(&out).contains("itself"), "{}", stdout(&out));
    let names = tool_names(dir.path(), &[], &[("KILN_MOUNTED_AS", "itself")]);
    assert_eq!(names, ["lookup"]);
    let out = Command::new(kiln_bin())
        .arg("tools")
        .current_dir(dir.path())
        .env("KILN_MOUNTED_AS", "itself")
        .output()
        .expect("run kiln");
    assert!(!stdout(&out).contains("MCP SERVER"), "{}", stdout(&out));
}

fn answer(_: &str) -> Canned {
    (200, vec![], b"hello from the resolved host".to_vec())
}

#[test]
fn network_resolve_and_workspace_come_from_the_file_and_a_flag_replaces_them() {
    let server = TestServer::start(answer);
    let port = server.addr.rsplit(':').next().expect("a port");
    let dir = project(
        "scripts = [\"tools\"]\nstdlib = false\nworkspace = \"ws\"\n\n[network]\nresolve = [\"api.local:127.0.0.1\"]\n",
    );
    std::fs::create_dir(dir.path().join("ws")).expect("mkdir ws");
    std::fs::write(
        dir.path().join("tools/fetch.rhai"),
        format!(
            r#"tool("fetch").requires("net:api.local").handler(|a| http_get("http://api.local:{port}/").body);
tool("put").requires("fs.write").handler(|a| {{ write_file("note.txt", "kept"); "ok" }});"#
        ),
    )
    .expect("write fetch");
    let out = kiln(
        &["call", "fetch", "{}", "--caps", "net:api.local"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("hello from the resolved host"),
        "{}",
        stdout(&out)
    );
    // A --resolve list replaces the file's: api.local is no longer pinned to the test server.
    let out = kiln(
        &[
            "call",
            "fetch",
            "{}",
            "--caps",
            "net:api.local",
            "--resolve",
            "other.local:127.0.0.1",
        ],
        dir.path(),
    );
    assert!(!stdout(&out).contains("hello"), "{}", stdout(&out));
    // File host functions are rooted at the file's workspace.
    let out = kiln(&["call", "put", "{}", "--caps", "fs.write"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = std::fs::read_to_string(dir.path().join("ws/note.txt")).expect("written in ws/");
    assert_eq!(kept, "kept");
}

#[test]
fn settings_that_would_do_nothing_are_refused_naming_the_file() {
    let dir = project("[serve]\nauth_audience = \"https://kiln.example\"\n");
    let out = kiln(&["serve", "--bind", "127.0.0.1:0"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("kiln.toml: [serve] auth_audience needs auth_issuer"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        dir.path().join("kiln.toml"),
        "[mcp]\nauth_issuer = \"https://issuer.example\"\n",
    )
    .expect("write");
    let out = kiln(&["mcp"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[mcp] auth_issuer takes effect over HTTP only"),
        "{}",
        stderr(&out)
    );
    std::fs::write(dir.path().join("kiln.toml"), "scripts = [\"missing\"]\n").expect("write");
    let out = kiln(&["tools"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("missing (named by `scripts` in "), "{said}");
    assert!(said.contains("does not exist"), "{said}");
    std::fs::write(
        dir.path().join("kiln.toml"),
        "[grants]\ncaps = [\"fs read\"]\n",
    )
    .expect("write");
    let out = kiln(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("kiln.toml:2:8: grants.caps: "),
        "{}",
        stderr(&out)
    );
}
