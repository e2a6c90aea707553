//! The real binary: check, tools, schema, call, agents.

use crate::common::*;
use serde_json::Value;

fn catalog() -> String {
    repo().join("examples/catalog").display().to_string()
}

#[test]
fn check_reports_errors_with_location_and_exits_1() {
    let s = Scripts::new(&[
        (
            "bad.rhai",
            "tool(\"a\")\n  .param(\"x\", \"nope\")\n  .handler(|a| 1);",
        ),
        ("good.rhai", "tool(\"g\").handler(|a| 1);"),
    ]);
    let out = kiln(&["check", "--scripts", "."], s.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "error: ./bad.rhai:2:4: tool \"a\": param \"x\": unknown param type \"nope\""
        ),
        "{}",
        stderr(&out)
    );
    let ok = kiln(&["check", "--scripts", &catalog()], &repo());
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stdout(&ok).starts_with("ok: 9 tools, 1 agents"),
        "{}",
        stdout(&ok)
    );
    let missing = kiln(&["check", "--scripts", "/nonexistent/dir"], &repo());
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("scripts folder /nonexistent/dir does not exist"));
}

#[test]
fn tools_prints_a_table_or_json_filtered_by_caps() {
    let table = kiln(&["tools", "--scripts", &catalog()], &repo());
    let t = stdout(&table);
    assert!(
        t.starts_with("TOOL") && t.contains("database_lookup") && t.contains("database_read"),
        "{t}"
    );
    let json = kiln(&["tools", "--json", "--scripts", &catalog()], &repo());
    let v: Value = serde_json::from_str(&stdout(&json)).expect("json");
    assert!(v.as_array().is_some_and(|a| {
        a.iter()
            .any(|d| d["name"] == "database_lookup" && d["parameters"].is_object())
    }));
    let filtered = kiln(
        &[
            "tools",
            "--format",
            "anthropic",
            "--caps",
            "",
            "--scripts",
            &catalog(),
        ],
        &repo(),
    );
    let v: Value = serde_json::from_str(&stdout(&filtered)).expect("json");
    let names: Vec<&str> = v
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"database_lookup")
            && !names.contains(&"storage")
            && names.contains(&"calculator"),
        "{names:?}"
    );
    assert!(v[0]["input_schema"].is_object());
    let bad = kiln(&["tools", "--format", "xml"], &repo());
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown schema format \"xml\""));
}

#[test]
fn schema_prints_one_definition() {
    let out = kiln(
        &[
            "schema",
            "database_lookup",
            "--format",
            "openai",
            "--scripts",
            &catalog(),
        ],
        &repo(),
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["type"], "function");
    assert_eq!(
        v["function"]["parameters"]["required"],
        serde_json::json!(["sku"])
    );
    let missing = kiln(&["schema", "nope", "--scripts", &catalog()], &repo());
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("unknown tool \"nope\"; loaded tools: calculator"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn call_prints_result_json_and_exit_code() {
    let ok = kiln(
        &[
            "call",
            "database_lookup",
            r#"{"sku":"SKU-2"}"#,
            "--caps",
            "database_read",
            "--scripts",
            &catalog(),
        ],
        &repo(),
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let v: Value = serde_json::from_str(&stdout(&ok)).expect("json");
    assert_eq!(v["success"], true);
    assert_eq!(v["result"]["stock"], 7);
    let denied = kiln(
        &[
            "call",
            "database_lookup",
            r#"{"sku":"SKU-2"}"#,
            "--scripts",
            &catalog(),
        ],
        &repo(),
    );
    assert_eq!(denied.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&denied)).expect("json");
    assert_eq!(v["error"]["kind"], "capability");
    let bad_json = kiln(&["call", "calculator", "{nope"], &repo());
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(
        stderr(&bad_json)
            .contains("arguments are not valid JSON: key must be a string at line 1 column 2"),
        "{}",
        stderr(&bad_json)
    );
    let ctx = Scripts::new(&[(
        "c.rhai",
        "tool(\"who\").handler(|a, ctx| `${ctx.actor_id}@${ctx.context.tenant}/${ctx.context.n + 1}`);",
    )]);
    let out = kiln(
        &[
            "call",
            "who",
            "--actor",
            "u1",
            "--context",
            "tenant=acme",
            "-c",
            "n=41",
            "--scripts",
            ".",
        ],
        ctx.path(),
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["result"], "u1@acme/42");
}

#[test]
fn help_explains_commands() {
    let out = kiln(&["--help"], &repo());
    let h = stdout(&out);
    for cmd in ["check", "tools", "schema", "call", "agents"] {
        assert!(h.contains(cmd), "{h}");
    }
    let out = kiln(&["call", "--help"], &repo());
    assert!(stdout(&out).contains("--caps"));
}

#[test]
fn readme_first_command_runs_the_offline_demo_agent() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run"))
        .expect("first command");
    assert!(
        first.contains("ask demo") && first.contains("--scripts examples/demo"),
        "{first}"
    );
    let out = kiln(
        &[
            "ask",
            "demo",
            "What is 17% of 240, in upper case words?",
            "--scripts",
            "examples/demo",
        ],
        &repo(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Let me work that out.\nIt is 40.8; in upper case words: FORTY POINT EIGHT\n"
    );
    let err = stderr(&out);
    for tool in ["calculator", "spell_number", "string_manipulation"] {
        assert!(err.contains(&format!("→ {tool}(")), "{err}");
    }
}

/// The first fenced rhai block after `marker` in a Markdown file of the repository (its info
/// string, `rhai test ...`, skipped).
fn doc_block_after(file: &str, marker: &str) -> String {
    let text = std::fs::read_to_string(repo().join(file)).expect(file);
    let rest = &text[text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in {file}"))..];
    let fence = rest.find("```rhai").expect("a rhai block");
    let start = fence + rest[fence..].find('\n').expect("the fence's line") + 1;
    let len = rest[start..].find("```").expect("the block's end");
    rest[start..start + len].to_string()
}

#[test]
fn readme_example_tool_agent_and_tests_run_as_written() {
    // The README's first tool and agent, and the testing chapter's test file for them, exactly
    // as printed: `kiln test` passes them (the capability refusal, the product, the scripted
    // agent run).
    let tools = doc_block_after("README.md", "## A tool and an agent");
    let tests = doc_block_after("docs/testing.md", "## Testing your tools and agents");
    assert!(tools.contains("tool(\"database_lookup\")"), "{tools}");
    assert!(
        tests.contains("test(\"lookup returns the product\""),
        "{tests}"
    );
    let s = Scripts::new(&[("catalog.rhai", &tools), ("catalog.test.rhai", &tests)]);
    let out = kiln(&["test", "--scripts", "."], s.path());
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("3 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn mock_rejects_a_bad_scenario_with_its_location() {
    let s = Scripts::new(&[("bad.json", "{\"turns\": [{\"txt\": 1}]}")]);
    let out = kiln(&["mock", "bad.json"], s.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.json:1:") && stderr(&out).contains("unknown field `txt`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn definitions_describe_the_dsl_and_host_functions() {
    let s = Scripts::new(&[]);
    let out = kiln(&["definitions", "-o", "k.d.rhai"], s.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(s.path().join("k.d.rhai")).expect("written");
    for sig in [
        "fn tool(",
        "fn param(_: ToolBuilder, _: string, _: string, _: map) -> ToolBuilder;",
        "fn http_get(_: string, _: map)",
        "fn store_get(",
        "fn agent(",
    ] {
        assert!(text.contains(sig), "{sig} missing");
    }
    assert!(!text.contains("EvalAltResult"));
}
