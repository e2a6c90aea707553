//! Resources, resource templates and prompts declared in scripts: load errors at their place,
//! and reads through `kiln mcp` taking the capability guard, argument validation and the run
//! log as tool calls do (the wire shapes themselves are the conformance suite's and the SDK
//! tests', in mcp_conformance.rs and mcp_peers.rs).

use crate::common::*;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};

const NOTES: &str = r#"
resource("notes://readme").description("The readme").mime("text/markdown")
    .requires(["fs.read"])
    .handler(|args| read_file("README.md"));
resource_template("notes://{name}").description("A note by name")
    .complete("name", |prefix| ["todo", "today", "ideas"].filter(|n| n.starts_with(prefix)))
    .handler(|args| `note ${args.name}`);
prompt("summarize").description("Summarize a note")
    .arg("name", "the note")
    .arg("style", "how", #{ required: false })
    .handler(|args| `Summarize ${args.name}${if args.style == () { "" } else { " " + args.style }}`);
"#;

#[test]
fn mistakes_in_resources_and_prompts_name_the_file_line_and_column() {
    let s = Scripts::new(&[
        (
            "bad.rhai",
            r#"resource_template("notes://all").handler(|a| "x");
prompt("p").arg("a", "first").complete("b", |p| []).handler(|a| "x");
resource("x://no-handler").description("no handler");
prompt("twice").arg("a", "x").arg("a", "y").handler(|a| "x");
"#,
        ),
        ("one.rhai", r#"resource("dup://x").handler(|a| "1");"#),
        ("two.rhai", r#"resource("dup://x").handler(|a| "2");"#),
    ]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "bad.rhai:1:1: resource template \"notes://all\": URI template \"notes://all\" has no {parameter}: declare it with resource(uri)",
        "bad.rhai:2:31: prompt \"p\": .complete(\"b\", ...) names no argument of it (it has: a)",
        "bad.rhai:3:1: resource \"x://no-handler\" has no .handler(...)",
        "bad.rhai:4:31: prompt \"twice\": arg \"a\" is declared twice",
        "two.rhai:1:1: duplicate resource \"dup://x\": already defined at ./one.rhai:1:1",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

fn session(s: &Scripts, args: &[&str]) -> StdioMcp {
    let mut all = vec!["--no-stdlib", "--scripts", "."];
    all.extend_from_slice(args);
    StdioMcp::start(s.path(), &all)
}

#[test]
fn a_read_takes_the_guard_and_the_run_log_and_prompt_arguments_are_validated() {
    let s = Scripts::new(&[("notes.rhai", NOTES), ("README.md", "# hello")]);
    let mut refused = session(&s, &[]);
    let read = refused.rpc(2, "resources/read", json!({"uri": "notes://readme"}));
    let message = read["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("resource \"notes://readme\" requires capabilities [fs.read] but the server was granted only []"),
        "{read}"
    );
    drop(refused);

    let mut granted = session(&s, &["--caps", "fs.read"]);
    let read = granted.rpc(2, "resources/read", json!({"uri": "notes://readme"}));
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "notes://readme", "mimeType": "text/markdown", "text": "# hello"}]),
        "{read}"
    );
    let templated = granted.rpc(3, "resources/read", json!({"uri": "notes://todo"}));
    assert_eq!(templated["result"]["contents"][0]["text"], "note todo");
    let missing = granted.rpc(
        4,
        "prompts/get",
        json!({"name": "summarize", "arguments": {}}),
    );
    let said = missing["error"]["message"].as_str().unwrap_or("");
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        said.contains("Invalid arguments") && said.contains("\"name\""),
        "{missing}"
    );
    let got = granted.rpc(
        5,
        "prompts/get",
        json!({"name": "summarize", "arguments": {"name": "todo", "style": "briefly"}}),
    );
    assert_eq!(
        got["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Summarize todo briefly"}}]),
        "{got}"
    );
    let done = granted.rpc(
        6,
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "notes://{name}"},
               "argument": {"name": "name", "value": "to"}}),
    );
    assert_eq!(
        done["result"]["completion"]["values"],
        json!(["todo", "today"])
    );
    let listed = granted.rpc(7, "prompts/list", json!({}));
    assert_eq!(
        listed["result"]["prompts"][0]["arguments"],
        json!([
            {"name": "name", "description": "the note", "required": true},
            {"name": "style", "description": "how", "required": false}
        ])
    );
    drop(granted);

    // Each read is a logged call of its reader, the refused one with its reason.
    let out = kiln(
        &["logs", "--json", "--tool", "read_notes___readme"],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let outcomes: Vec<bool> = runs
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .flat_map(|r| r["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["is_error"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(outcomes.len(), 2, "{runs}");
    assert!(
        outcomes.contains(&true) && outcomes.contains(&false),
        "{runs}"
    );
}

/// The MCP chapter's example of resources, prompts and a form loads as written.
#[test]
fn the_readme_example_of_resources_prompts_and_forms_loads() {
    let doc = std::fs::read_to_string(repo().join("docs/mcp.md")).expect("docs/mcp.md");
    let section = doc
        .split("## Resources, prompts, completions and forms")
        .nth(1)
        .expect("docs/mcp.md has the section");
    let code = section
        .split("```rhai\n")
        .nth(1)
        .and_then(|c| c.split("```").next())
        .expect("a rhai block");
    let s = Scripts::new(&[("readme.rhai", code)]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("ok: 1 tools, 0 agents, 1 resource, 1 resource template, 1 prompt"),
        "{}",
        stdout(&out)
    );
}
