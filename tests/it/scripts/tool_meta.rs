//! `.returns(...)`, `.title(...)` and `.annotations(#{...})`: results checked against the
//! declared output schema, and all three served to MCP clients (`kiln mcp` on the wire).

use crate::common::*;
use serde_json::{Value, json};

pub const META_TOOLS: &str = r#"
tool("sum")
    .title("Sum of two numbers")
    .description("Adds")
    .param("a", "int")
    .param("b", "int")
    .returns(#{ sum: "integer", note: #{ type: "string", optional: true } })
    .handler(|args| #{ sum: args.a + args.b });

tool("liar")
    .description("Claims to return an integer sum")
    .returns(#{ sum: "integer" })
    .handler(|args| #{ sum: "many" });

tool("count")
    .description("A bare integer")
    .returns("integer")
    .handler(|args| 7);

tool("fetch")
    .description("Reaches the network")
    .requires("net")
    .handler(|args| "x");

tool("save")
    .description("Writes files")
    .requires("fs.write")
    .annotations(#{ idempotent: true })
    .handler(|args| "x");
"#;

#[test]
fn returns_checks_results_and_a_mismatch_names_the_path() {
    let (_s, host) = host_with(META_TOOLS);
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let ok = call(&host, "sum", json!({"a": 2, "b": 3}), &[]);
    assert_eq!(ok.result.expect("sum"), json!({"sum": 5}));
    let bad = call(&host, "liar", json!({}), &[]);
    let (kind, message) = failure(&bad);
    assert_eq!(kind, "invalid_output");
    assert!(
        message.starts_with("Tool failed (invalid_output)") && message.contains("/sum"),
        "{message}"
    );
    assert_eq!(
        call(&host, "count", json!({}), &[]).result.expect("count"),
        json!(7)
    );
}

#[test]
fn hints_default_from_capabilities_and_can_be_set() {
    let (_s, host) = host_with(META_TOOLS);
    let hints = |name: &str| host.tool(name).expect("tool").hints();
    let sum = hints("sum");
    assert!(sum.read_only && sum.idempotent && !sum.destructive && !sum.open_world);
    let fetch = hints("fetch");
    assert!(fetch.open_world && !fetch.read_only && !fetch.destructive);
    let save = hints("save");
    assert!(
        save.destructive && !save.read_only && save.idempotent,
        "{save:?}"
    );
}

#[test]
fn bad_meta_declarations_are_load_errors_at_the_call() {
    let s = Scripts::new(&[(
        "t.rhai",
        r#"tool("a").handler(|args| 1)
    .annotations(#{ read_only: true, sneaky: true });
tool("b").handler(|args| 1)
    .returns("integr");
tool("c").handler(|args| 1)
    .annotations(#{ destructive: "yes" });
tool("d").handler(|args| 1)
    .returns(#{ type: "string", pattern: "(" });
"#,
    )]);
    let host = s.host();
    let errors = s.errors(&host).join("\n");
    assert!(
        errors.contains("DIR/t.rhai:2:6: tool \"a\": annotations: unknown annotation \"sneaky\" (known: read_only, destructive, idempotent, open_world)"),
        "{errors}"
    );
    assert!(
        errors.contains("DIR/t.rhai:4:6: tool \"b\"") && errors.contains("integr"),
        "{errors}"
    );
    assert!(
        errors.contains("DIR/t.rhai:6:6: tool \"c\": annotations: annotation \"destructive\" must be true or false"),
        "{errors}"
    );
    assert!(
        errors.contains("DIR/t.rhai:8:6: tool \"d\"") && errors.contains("regex"),
        "{errors}"
    );
}

#[test]
fn mcp_serves_title_output_schema_annotations_and_structured_content() {
    let scripts = Scripts::new(&[("tools.rhai", META_TOOLS)]);
    let mut mcp = crate::mcp::StdioMcp::start(
        scripts.path(),
        &["--no-stdlib", "--scripts", ".", "--caps", "net,fs.write"],
    );
    let listed = mcp.rpc(1, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed}"))
            .clone()
    };
    let sum = find("sum");
    assert_eq!(sum["title"], "Sum of two numbers");
    assert_eq!(sum["outputSchema"]["properties"]["sum"]["type"], "integer");
    assert_eq!(sum["outputSchema"]["required"], json!(["sum"]));
    assert_eq!(
        sum["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    let save = find("save");
    assert_eq!(save["annotations"]["destructiveHint"], true);
    assert_eq!(save["annotations"]["idempotentHint"], true);
    assert_eq!(find("fetch")["annotations"]["openWorldHint"], true);
    // On the 2025-11-25 revision an output schema must be an object: a bare integer's is left out.
    assert!(
        find("count").get("outputSchema").is_none(),
        "{}",
        find("count")
    );

    let called = mcp.rpc(
        2,
        "tools/call",
        json!({"name": "sum", "arguments": {"a": 2, "b": 40}}),
    );
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"sum": 42}),
        "{called}"
    );
    assert_eq!(called["result"]["isError"], false);
    let lied = mcp.rpc(3, "tools/call", json!({"name": "liar", "arguments": {}}));
    assert_eq!(lied["result"]["isError"], true, "{lied}");
    let text = lied["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("invalid_output") && text.contains("/sum"),
        "{text}"
    );
}

#[test]
fn a_native_tools_output_schema_is_checked_too() {
    let host = kiln::Host::builder()
        .stdlib(false)
        .tool(
            kiln::NativeTool::new("half", |args: Value, _ctx: &kiln::CallContext| async move {
                Ok(json!(args["n"].as_i64().unwrap_or(0) as f64 / 2.0))
            })
            .param("n", "integer", json!({}))
            .title("Half")
            .output_schema(json!({"type": "integer"})),
        )
        .build()
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert_eq!(
        host.tool("half").expect("tool").meta.title.as_deref(),
        Some("Half")
    );
    let even = call(&host, "half", json!({"n": 4}), &[]);
    assert_eq!(
        even.result.expect("2.0 is an integer in JSON Schema"),
        json!(2.0)
    );
    let (kind, message) = failure(&call(&host, "half", json!({"n": 3}), &[]));
    assert_eq!(kind, "invalid_output");
    assert!(
        message.contains("/: 1.5 is not of type \"integer\""),
        "{message}"
    );
}

/// `tools/list` of `kiln mcp --code-mode` over `src` with `--caps caps`: each tool by name.
fn code_mode_listing(src: &str, caps: &str) -> (Scripts, Vec<Value>) {
    let scripts = Scripts::new(&[("tools.rhai", src)]);
    let mut mcp = crate::mcp::StdioMcp::start(
        scripts.path(),
        &[
            "--no-stdlib",
            "--scripts",
            ".",
            "--code-mode",
            "--caps",
            caps,
        ],
    );
    let listed = mcp.rpc(1, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().cloned();
    (scripts, tools.unwrap_or_else(|| panic!("{listed}")))
}

fn hints_of(tools: &[Value], name: &str) -> Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .map(|t| t["annotations"].clone())
        .unwrap_or_else(|| panic!("{name} in {tools:?}"))
}

#[test]
fn run_code_is_hinted_as_what_the_tools_it_reaches_may_do() {
    let writer = r#"tool("note").description("Writes a note").param("text", "string")
    .requires("fs.write").handler(|args| { write_file("note.txt", args.text); "saved" });
tool("look").description("Reads").handler(|args| "seen");
"#;
    let (_s, tools) = code_mode_listing(writer, "fs.write,net,store");
    // A program may write (and overwrite) files: no client may take it for a read.
    assert_eq!(
        hints_of(&tools, "run_code"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})
    );
    // search_tools only searches the list of functions: it is read-only, whatever they do.
    assert_eq!(
        hints_of(&tools, "search_tools"),
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    // One tool reaching the network makes the program's world open.
    let (_s, tools) = code_mode_listing(META_TOOLS, "net");
    assert_eq!(hints_of(&tools, "run_code")["openWorldHint"], true);
    assert_eq!(hints_of(&tools, "run_code")["readOnlyHint"], false);
    // Without the grant the writer is out of the program's reach, and so are its hints.
    let (_s, tools) = code_mode_listing(writer, "net");
    assert_eq!(
        hints_of(&tools, "run_code"),
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
}
