//! The MCP conformance suite (`@modelcontextprotocol/conformance`, the protocol's official
//! test runner) against `kiln mcp --http`: exactly the server scenarios each revision requires
//! (`--requirements 2025-11-25`, then `2026-07-28`), with the ones kiln does not offer listed
//! in a baseline the suite checks both ways (an unexpected failure fails, and so does a listed
//! scenario that starts passing); then every scenario of the tasks extension, each alone.
//!
//! The suite's scenarios call the tools, resources and prompts of its "everything server" by
//! name; kiln serves them from tests/fixtures/mcp-everything (Rhai scripts, and the arguments
//! in its ARGS file), so anyone can run the suite by hand against the same server.
//!
//! `#[ignore]`d: it needs Node 22 and the pinned suite, which `.ci/run` installs with npm into
//! `target/` and passes as `KILN_NODE` and `KILN_MCP_CONFORMANCE` (without them it fails
//! saying so).

use super::mcp::McpHttp;
use crate::common::*;

/// What kiln does not offer yet, per revision, with the reason; the suite checks the list
/// both ways (a listed scenario that starts passing fails the run too).
const NOT_OFFERED: &[(&str, &[(&str, &str)])] = &[
    ("2025-11-25", &[]),
    (
        "2026-07-28",
        &[(
            "server-stateless",
            // Every check passes; two SHOULDs warn (which the baseline counts): they call
            // test_trigger_tool_change and test_trigger_prompt_change, tools that change the
            // server's lists. kiln's lists change when scripts change on disk, and a tool may
            // not write scripts, so there is no such tool to offer.
            "no tool can change the tool or prompt list",
        )],
    ),
];

fn installed(var: &str) -> std::path::PathBuf {
    let path = std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "{var} is not set: .ci/run installs the conformance suite and Node 22 and sets it"
            )
        });
    assert!(path.exists(), "{var}={} does not exist", path.display());
    path
}

/// A copy of tests/fixtures/mcp-everything (kiln keeps its state next to the scripts), and
/// the arguments its ARGS file gives `kiln mcp --http`.
fn everything_server() -> (tempfile::TempDir, Vec<String>) {
    let fixture = repo().join("tests/fixtures/mcp-everything");
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(&fixture).expect("the fixture folder") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    let args = std::fs::read_to_string(fixture.join("ARGS")).expect("ARGS");
    (dir, args.split_whitespace().map(String::from).collect())
}

#[test]
#[ignore = "needs Node 22 and @modelcontextprotocol/conformance: run by .ci/run"]
fn mcp_conformance_suite_passes_every_scenario_each_revision_requires() {
    let node = installed("KILN_NODE");
    let suite = installed("KILN_MCP_CONFORMANCE");
    let (dir, args) = everything_server();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = McpHttp::start(dir.path(), &args, &[]);
    for (revision, not_offered) in NOT_OFFERED {
        let baseline = dir.path().join(format!("baseline-{revision}.yml"));
        let listed: String = not_offered
            .iter()
            .map(|(s, why)| format!("  - {s} # {why}\n"))
            .collect();
        let text = if listed.is_empty() {
            "server: []\n".to_string()
        } else {
            format!("server:\n{listed}")
        };
        std::fs::write(&baseline, text).expect("baseline");
        let results = tempfile::tempdir().expect("results dir");
        let out = std::process::Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &server.url, "--requirements", revision])
            .arg("--expected-failures")
            .arg(&baseline)
            .current_dir(results.path())
            .output()
            .expect("run the conformance suite");
        let report = format!("{}\n{}", stdout(&out), stderr(&out));
        assert!(
            out.status.success(),
            "conformance suite, {revision}:\n{report}"
        );
        println!("== {revision}\n{report}");
    }
    // The tasks extension (no revision requires it): every `tasks-*` server scenario the
    // suite lists, each run alone.
    let list = std::process::Command::new(&node)
        .arg(&suite)
        .arg("list")
        .output()
        .expect("list the suite's scenarios");
    let listing = stdout(&list);
    let server_part = listing.split("Client scenarios").next().unwrap_or("");
    let tasks: Vec<&str> = server_part
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("tasks-"))
        .collect();
    assert!(
        tasks.len() >= 10,
        "the suite lists the tasks scenarios:\n{listing}"
    );
    for scenario in tasks {
        let results = tempfile::tempdir().expect("results dir");
        let out = std::process::Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &server.url, "--scenario", scenario])
            .current_dir(results.path())
            .output()
            .expect("run a tasks scenario");
        let report = format!("{}\n{}", stdout(&out), stderr(&out));
        assert!(
            out.status.success() && !report.contains("FAILURE"),
            "conformance suite, {scenario}:\n{report}"
        );
        println!("== {scenario}\n{report}");
    }
}
