//! The web console (`/ui` of `kiln serve`) in a real browser: Debian's Chromium driven by
//! Playwright (PyPI), with axe-core (npm) injected, runs tests/peers/console/console_check.py
//! against a real `kiln serve --tokens` and `kiln mock` on 127.0.0.1. The project: an agent
//! whose mock scenario writes a file through a tool that needs an approved `fs.write` grant, a
//! tool with a nested object, an array of objects and an enum, and a tool a policy holds for
//! approval. Three actors: alice (who may write), bob, and carol, who may approve anyone's calls.

use crate::common::{Collector, Mock, repo, stderr, stdout};
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const ALICE: &str = "alice-console-token-7c1f0a9d2e";
const BOB: &str = "bob-console-token-3b8e6d4a51";
/// Where the timeline links a run's trace (a Phoenix that is never reached).
const TRACE_URL: &str = "http://127.0.0.1:6006/projects/kiln/traces/{trace_id}";
const CAROL: &str = "carol-console-token-9d2c47e0b6";

/// Each conversation is answered by its first user message, round by round.
fn scenario() -> Value {
    let save = |path: &str, text: &str| json!([{"name": "save_note", "args": {"path": path, "text": text}}]);
    json!({"by_round": true, "turns": [
        {"user": "write the note", "text": "Writing it down. ",
         "tool_calls": save("hello.txt", "hello from the console"),
         "usage": {"input_tokens": 120, "output_tokens": 18}},
        {"user": "write the note", "text": "Saved the note.",
         "usage": {"input_tokens": 160, "output_tokens": 6}},
        {"user": "write a secret", "tool_calls": save("secret.txt", "<img src=x onerror=alert(1)>")},
        {"user": "write a secret", "text": "The write was refused."},
        {"user": "order twice", "code": PROGRAM},
        {"user": "order twice", "text": "Ordered twice."},
        {"text": "Hello from the mock."}
    ]})
}

/// The program the code-mode agent's model sends: two calls, nested under it in the timeline.
const PROGRAM: &str = r#"let a = order(#{customer: #{name: "Ada"}, items: [#{sku: "A-1", qty: 1}]});
let b = order(#{customer: #{name: "Bo"}, items: [#{sku: "B-2", qty: 2}], shipping: "express"});
a.ordered + b.ordered"#;

const TOOLS: &str = r#"tool("save_note").description("Writes a note into the workspace")
  .param("path", "string", "a file name in the workspace").param("text", "string")
  .requires(["fs.write"])
  .handler(|a| { write_file(a.path, a.text); `wrote ${a.path}` });
tool("order").description("Places an order for a customer")
  .param("customer", "object", #{properties: #{name: #{type: "string"}, vip: #{type: "boolean", "default": false}}})
  .param("items", "array", #{desc: "what to ship", items: #{type: "object", properties: #{sku: #{type: "string"}, qty: #{type: "integer", min: 1}}}})
  .param("shipping", "string", #{"enum": ["standard", "express"], "default": "standard"})
  .param("note", "string", #{optional: true})
  .handler(|a| #{ordered: a.items.len(), customer: a.customer.name, shipping: a.shipping ?? "standard"});
tool("wipe").description("Deletes notes <b>for good</b>").param("what", "string").handler(|a| `wiped ${a.what}`);
policy("careful").applies_to(["wipe"]).check(|c, ctx| require_approval("wiping is permanent"));
"#;

const EXTRA: &str = r#"tool("extra").description("An extra tool the suite breaks and fixes")
  .param("a", "string")
  .handler(|a| a.a);
"#;

/// The scripts folder, the workspace and the tokens file in `root`.
fn project(root: &Path, mock: &Mock) -> (PathBuf, PathBuf, PathBuf) {
    let (scripts, workspace) = (root.join("scripts"), root.join("workspace"));
    for dir in [&scripts, &workspace] {
        std::fs::create_dir_all(dir).expect("a folder");
    }
    let agent = format!(
        r#"agent("writer").description("Writes notes when asked").provider("openai").model("m")
  .base_url("{url}/v1").tools(["save_note", "order", "wipe"]).needs_approval(["fs.write"])
  .price(3.0, 15.0);
agent("planner").description("Orders in code mode").provider("openai").model("m")
  .base_url("{url}/v1").tools(["order"]).code_mode();
"#,
        url = mock.url
    );
    for (name, text) in [
        ("tools.rhai", TOOLS),
        ("extra.rhai", EXTRA),
        ("agent.rhai", &agent),
    ] {
        std::fs::write(scripts.join(name), text).expect("a script");
    }
    let tokens = root.join("tokens.json");
    let list = json!([
        {"token": ALICE, "actor": "alice", "caps": ["store", "fs.write"]},
        {"token": BOB, "actor": "bob", "caps": ["store"]},
        {"token": CAROL, "actor": "carol", "caps": ["approve"]},
    ]);
    std::fs::write(&tokens, list.to_string()).expect("tokens");
    (scripts, workspace, tokens)
}

#[test]
#[ignore = "needs playwright (PyPI), axe-core (npm, in target/axe) and Debian's chromium; .ci/run installs them"]
fn the_console_works_for_a_person_in_a_real_browser_and_keeps_actors_apart() {
    let axe = repo().join("target/axe/node_modules/axe-core/axe.min.js");
    assert!(
        axe.is_file(),
        "{} is missing: run .ci/run's npm line",
        axe.display()
    );
    let mock = Mock::start(&scenario());
    // Traces go to a collector on 127.0.0.1, so runs have a trace id the timeline links to.
    let collector = Collector::start();
    let root = tempfile::tempdir().expect("dir");
    let (scripts, workspace, tokens) = project(root.path(), &mock);
    let serve = Serve::start(
        &scripts,
        &root.path().join("k.db"),
        &[
            "--no-stdlib",
            "--workspace",
            &workspace.display().to_string(),
            "--tokens",
            &tokens.display().to_string(),
            "--otlp",
            &collector.url,
            "--trace-url",
            TRACE_URL,
        ],
        &[],
    );
    let shots = root.path().join("shots");
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/console/console_check.py"))
        .env("KILN_URL", &serve.url)
        .env("KILN_MOCK_URL", &mock.url)
        .env("KILN_ALICE", ALICE)
        .env("KILN_BOB", BOB)
        .env("KILN_CAROL", CAROL)
        .env("KILN_SCRIPTS", &scripts)
        .env("KILN_WORKSPACE", &workspace)
        .env("KILN_AXE", &axe)
        .env("KILN_SHOTS", &shots)
        .env("KILN_TRACE_URL", TRACE_URL)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "the console suite failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).ends_with("0 problem(s)\n"), "{}", stdout(&out));
    // The suite got to its end (every step ran), and what it did happened on the server too:
    // the approved write is on disk,
    // the denied one is not.
    assert_eq!(
        std::fs::read_to_string(workspace.join("hello.txt"))
            .ok()
            .as_deref(),
        Some("hello from the console")
    );
    assert!(!workspace.join("secret.txt").exists());
    let names = [
        "console-runs.png",
        "console-timeline.png",
        "console-approvals.png",
        "console-tool-form.png",
    ];
    for name in names {
        let shot = shots.join(name);
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
            "{name} was not taken"
        );
        // KILN_CONSOLE_SHOTS=docs/images refreshes the documentation's pictures.
        if let Ok(to) = std::env::var("KILN_CONSOLE_SHOTS") {
            std::fs::copy(&shot, Path::new(&to).join(name)).expect("copy a screenshot");
        }
    }
    drop(serve);
}
