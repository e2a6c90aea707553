//! The official Python MCP SDK (`mcp` 2.x) receives what kiln tools send besides a value:
//! content blocks, progress for its progress token, and log messages at the level it asked for
//! (`logging/setLevel` on 2025-11-25, per request on 2026-07-28, none unless asked on 2026), and
//! its model's answers to `sample(...)` (2025-11-25; refused on 2026-07-28).
//! Ignored by default (`pip install mcp==2.3.0`); `.ci/run` runs them with `-- --ignored`.

use crate::common::*;
use crate::mcp::McpHttp;
use crate::mcp::mcp_tool_output::TOOLS;
use serde_json::{Value, json};

/// Runs tests/peers/mcp/mcp_tool_output.py against `target`; what the SDK saw.
fn drive(scripts: &Scripts, target: &str, mode: &str, level: &str) -> Value {
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/mcp/mcp_tool_output.py"))
        .args([target, mode, level])
        .current_dir(scripts.path())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the SDK failed against kiln mcp ({mode}, {level}):\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
    assert_eq!(v["protocol"], mode);
    assert_eq!(v["mixed"], json!(["text", "image", "resource", "resource"]));
    assert_eq!(v["image_mime"], "image/png");
    assert_eq!(v["resource_uri"], "file:///data.bin");
    assert_eq!(v["steps"], "stepped");
    assert_eq!(
        v["progress"],
        json!([[1.0, 3.0, "first"], [2.0, 3.0, null], [3.0, 3.0, null]])
    );
    assert_eq!(v["chatty"], "logged");
    // A sampling request on 2025-11-25, an input-required round on 2026-07-28 (the SDK
    // answers it and retries): the same answer.
    assert_eq!(v["summarize"], "seen: a long story", "{mode}");
    v
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_output_peers_python_sdk_gets_content_progress_and_logs() {
    let scripts = Scripts::new(&[("out.rhai", TOOLS)]);
    let server = McpHttp::start(
        scripts.path(),
        &["--scripts", ".", "--caps", "sampling"],
        &[],
    );
    let stdio = json!([
        kiln_bin(),
        "mcp",
        "--no-stdlib",
        "--scripts",
        ".",
        "--caps",
        "sampling"
    ]);
    let stdio = stdio.to_string();
    let info_and_up = json!(["info=i", "warning=w", "error=e"]);
    for target in [server.url.as_str(), stdio.as_str()] {
        let legacy = drive(&scripts, target, "2025-11-25", "info");
        assert_eq!(legacy["logs"], info_and_up, "{target}");
        let modern = drive(&scripts, target, "2026-07-28", "info");
        assert_eq!(modern["logs"], info_and_up, "{target}");
        let unasked = drive(&scripts, target, "2026-07-28", "none");
        assert_eq!(
            unasked["logs"],
            json!([]),
            "a 2026 request that asks for none gets none"
        );
    }
}
