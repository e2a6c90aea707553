//! The MCP conformance suite (`@modelcontextprotocol/conformance`, the protocol's official
//! test runner) against `kiln mcp --http`: every server scenario of the suite (`--suite all`) runs, and
//! the ones needing what kiln does not offer are listed in a baseline the suite checks both ways
//! (an unexpected failure fails, and so does a listed scenario that starts passing).
//!
//! The suite's tool scenarios call tools of its "everything server" by name; kiln serves them
//! here as Rhai scripts (below), so what is tested is kiln's wire behaviour, not the tools.
//!
//! `#[ignore]`d: it needs Node 22 and the pinned suite, which `.ci/run` installs with npm into
//! `target/` and passes as `KILN_NODE` and `KILN_MCP_CONFORMANCE` (without them it fails
//! saying so).

use super::mcp::McpHttp;
use crate::common::*;

/// The everything server's tools that a tools-only server can offer, as kiln scripts.
const EVERYTHING_TOOLS: &str = r##"
tool("test_simple_text")
    .description("Returns simple text")
    .handler(|args| "This is a simple text response for testing.");

tool("test_error_handling")
    .description("Always fails")
    .handler(|args| throw "This tool intentionally returns an error for testing");

tool("json_schema_2020_12_tool")
    .description("Tool with JSON Schema 2020-12 features")
    .input_schema(#{
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": #{
            address: #{
                "type": "object",
                properties: #{ street: #{ "type": "string" }, city: #{ "type": "string" } }
            }
        },
        properties: #{
            name: #{ "type": "string" },
            address: #{ "$ref": "#/$defs/address" }
        },
        additionalProperties: false
    })
    .handler(|args| "ok");

// A 1x1 red pixel PNG, and a WAV file with no samples.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

tool("test_image_content")
    .description("Returns an image")
    .handler(|args| image(PNG, "image/png"));

tool("test_audio_content")
    .description("Returns audio")
    .handler(|args| audio(WAV, "audio/wav"));

tool("test_embedded_resource")
    .description("Returns an embedded resource")
    .handler(|args| resource("test://embedded-resource", "This is an embedded resource content.", "text/plain"));

tool("test_multiple_content_types")
    .description("Returns text, an image and a resource")
    .handler(|args| [
        "Multiple content types test:",
        image(PNG, "image/png"),
        resource("test://mixed-content-resource", `{"test":"data","value":123}`, "application/json"),
    ]);

tool("test_tool_with_logging")
    .description("Logs three messages while it runs")
    .handler(|args| {
        log("info", "Tool execution started");
        log("info", "Tool processing data");
        log("info", "Tool execution completed");
        "Logging test completed"
    });

tool("test_tool_with_progress")
    .description("Reports progress three times")
    .handler(|args| {
        progress(0, 100);
        progress(50, 100, "halfway");
        progress(100, 100);
        "Progress test completed"
    });

// Asks the client's model (granted "sampling").
tool("test_sampling")
    .description("Asks the client's model")
    .param("prompt", "string")
    .requires(["sampling"])
    .handler(|args| `LLM response: ${sample(args.prompt, #{ max_tokens: 100 })}`);

// Its capability is granted with --ask: kiln asks the client (elicitation/create) first.
tool("test_elicitation")
    .description("Writes a note after the person behind the client approves")
    .param("message", "string")
    .requires(["store:conformance"])
    .handler(|args| { store_set("conformance", "last", args.message); "User response: approved" });
"##;

/// Scenarios for what kiln does not offer: it asks the client's model (sampling) and asks the
/// client to approve `ask` grants, but shows no forms of a tool's own; it offers no
/// completions, resources or prompts; and no tool controls its own transport stream.
const NOT_OFFERED: &[&str] = &[
    "completion-complete",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    // Its checks pass, with a warning the baseline counts: the everything server's
    // `test_reconnection` tool closes its own SSE stream mid-call; a kiln tool cannot.
    "server-sse-polling",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
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

#[test]
#[ignore = "needs Node 22 and @modelcontextprotocol/conformance: run by .ci/run"]
fn mcp_conformance_suite_passes_every_scenario_kiln_offers() {
    let node = installed("KILN_NODE");
    let suite = installed("KILN_MCP_CONFORMANCE");
    let scripts = Scripts::new(&[("everything.rhai", EVERYTHING_TOOLS)]);
    let server = McpHttp::start(
        scripts.path(),
        &[
            "--scripts",
            ".",
            "--caps",
            "store:conformance,sampling",
            "--ask",
            "store",
        ],
        &[],
    );
    let baseline = scripts.path().join("baseline.yml");
    let listed: String = NOT_OFFERED.iter().map(|s| format!("  - {s}\n")).collect();
    std::fs::write(&baseline, format!("server:\n{listed}")).expect("baseline");
    let results = tempfile::tempdir().expect("results dir");
    let out = std::process::Command::new(node)
        .arg(suite)
        .args(["server", "--suite", "all", "--url", &server.url])
        .arg("--expected-failures")
        .arg(&baseline)
        .current_dir(results.path())
        .output()
        .expect("run the conformance suite");
    let report = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "conformance suite:\n{report}");
    println!("{report}");
}
