//! Issue 56, item 9: what a tool can reach, transitively. A pipeline's hints are the union of
//! its nodes' (an agent node's tools, another pipeline's nodes), and `run_code`'s the union of
//! the tools it calls, so a pipeline with a destructive node is not read-only.

use crate::common::*;
use crate::mcp::{handshake, stdio_session};
use serde_json::{Value, json};

const SCRIPTS: &str = r#"
tool("wipe").description("Deletes everything").annotations(#{ destructive: true, read_only: false })
    .handler(|a| "gone");
tool("look").description("Reads one thing").handler(|a| 1);
agent("cleaner").provider("script").tools(["wipe"]).planner(|m, t| #{ text: "done" });
pipeline("nightly").description("The nightly job").input("x", "string", "anything")
    .compute("seen", ["x"], "look", |v| #{})
    .compute("cleaned", ["seen"], "agent:cleaner")
    .result("cleaned");
pipeline("outer").description("Runs the nightly job").input("x", "string", "anything")
    .compute("n", ["x"], "pipeline:nightly")
    .result("n");
pipeline("reader").description("Only reads").input("x", "string", "anything")
    .compute("seen", ["x"], "look", |v| #{})
    .result("seen");
"#;

fn annotations(list: &Value, name: &str) -> Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .map(|t| t["annotations"].clone())
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

#[test]
fn a_pipeline_reaching_a_destructive_tool_is_not_read_only_nor_is_code_mode_over_it() {
    let scripts = Scripts::new(&[("jobs.rhai", SCRIPTS)]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let replies = stdio_session(scripts.path(), &[], &handshake(std::slice::from_ref(&list)));
    for pipeline in ["nightly", "outer"] {
        let hints = annotations(&replies[1], pipeline);
        assert_eq!(hints["readOnlyHint"], false, "{pipeline}: {hints}");
        assert_eq!(hints["destructiveHint"], true, "{pipeline}: {hints}");
        assert_eq!(hints["idempotentHint"], false, "{pipeline}: {hints}");
    }
    let reader = annotations(&replies[1], "reader");
    assert_eq!(reader["readOnlyHint"], true, "{reader}");
    assert_eq!(reader["destructiveHint"], false, "{reader}");

    let code = stdio_session(scripts.path(), &["--code-mode"], &handshake(&[list]));
    let run_code = annotations(&code[1], "run_code");
    assert_eq!(run_code["readOnlyHint"], false, "{run_code}");
    assert_eq!(run_code["destructiveHint"], true, "{run_code}");
}
