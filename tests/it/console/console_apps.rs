//! The web console as an MCP Apps host, in a real browser: Debian's Chromium driven by
//! Playwright (PyPI), with axe-core (npm) injected, runs tests/peers/console/apps_check.py
//! against a real `kiln serve --tokens` on 127.0.0.1. The project: kiln's own test pages
//! (tests/fixtures/apps: the order form and a hostile page that tries to get out of its
//! sandbox), tools showing them, a page-only tool needing a grant, a tool no page may call,
//! and the official example MCP Apps server (npm `@modelcontextprotocol/server-basic-vanillajs`,
//! its `get-time` tool and page) mounted as `clock`, each of whose calls waits for a person.
//! Three actors: alice (who may use the clock and the ledger), bob (neither) and carol, who may
//! approve anyone's calls.

use crate::common::{repo, stderr, stdout};
use crate::doors::serve::Serve;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

const ALICE: &str = "alice-apps-token-5e0c8b1f93";
const BOB: &str = "bob-apps-token-a7d2946c0e";
const CAROL: &str = "carol-apps-token-41f9c3d8b7";

/// The example server's entry point, inside the npm folder of tests/peers/apps/package.json.
const EXAMPLE: &str = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js";

/// The screenshots the check takes (the first one is the documentation's picture).
const SHOTS: [&str; 2] = ["console-app-order.png", "console-app-clock.png"];

/// An environment variable the test needs, or a panic saying how to get it.
fn needed(var: &str, how: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("set {var}: {how}"),
    }
}

/// The scripts: place_order and its page-only order_status (needing `ledger`), pry and its
/// hostile page, wipe (no page: no page may call it) and the example server as `clock`.
fn script(node: &str, example: &Path) -> String {
    let tools = r#"tool("place_order").description("Places an order and shows it on the order form")
  .param("item", "string", "what to order")
  .param("qty", "integer", #{ desc: "how many", min: 1 })
  .output(#{ ordered: "integer", item: "string" })
  .ui("ui://orders/form", #{ file: "order_form.html", prefers_border: true })
  .handler(|a| #{ ordered: a.qty, item: a.item });
tool("order_status").description("The status of an order (the order form's refresh button)")
  .param("item", "string")
  .requires(["ledger"])
  .ui("ui://orders/form", #{ visibility: ["app"] })
  .handler(|a| #{ item: a.item, status: "packed" });
tool("pry").description("Shows a page that tries to get out of its sandbox")
  .ui("ui://pry/page", #{ file: "prying.html" })
  .handler(|a| "pried");
tool("wipe").description("Deletes everything (no page may call it)")
  .param("what", "string")
  .handler(|a| `wiped ${a.what}`);
"#;
    // Debug formatting quotes and escapes the paths as Rhai string literals.
    let clock = format!(
        "mcp_server(\"clock\").command({node:?}, [{:?}, \"--stdio\"]);\n",
        example.display().to_string()
    );
    format!("{tools}{clock}")
}

/// The scripts folder (with the two pages), the workspace and the tokens file in `root`.
fn project(root: &Path, node: &str, example: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (scripts, workspace) = (root.join("scripts"), root.join("workspace"));
    for dir in [&scripts, &workspace] {
        std::fs::create_dir_all(dir).expect("a folder");
    }
    for page in ["order_form.html", "prying.html"] {
        std::fs::copy(
            repo().join("tests/fixtures/apps").join(page),
            scripts.join(page),
        )
        .expect("copy a page");
    }
    std::fs::write(scripts.join("apps.rhai"), script(node, example)).expect("a script");
    let tokens = root.join("tokens.json");
    let list = json!([
        {"token": ALICE, "actor": "alice", "caps": ["mcp:clock", "ledger"]},
        {"token": BOB, "actor": "bob", "caps": []},
        {"token": CAROL, "actor": "carol", "caps": ["approve"]},
    ]);
    std::fs::write(&tokens, list.to_string()).expect("tokens");
    (scripts, workspace, tokens)
}

#[test]
#[ignore = "needs KILN_APPS_DEPS (npm, tests/peers/apps/package.json), axe-core (npm, target/axe), playwright (PyPI) and Debian's chromium; .ci/run installs them"]
fn console_apps_show_pages_safely_and_their_calls_go_through_kiln() {
    let deps = needed(
        "KILN_APPS_DEPS",
        "the npm folder of tests/peers/apps/package.json (e.g. target/apps, see .ci/run)",
    );
    let example = Path::new(&deps).join(EXAMPLE);
    assert!(
        example.is_file(),
        "{} is missing: npm install in KILN_APPS_DEPS (see .ci/run)",
        example.display()
    );
    // axe-core where console_browser.rs finds it (.ci/run's npm line), unless KILN_AXE says.
    let axe = std::env::var("KILN_AXE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/axe/node_modules/axe-core/axe.min.js"));
    assert!(
        axe.is_file(),
        "{} is missing: set KILN_AXE or run .ci/run's npm line (axe-core@4.10.3 into target/axe)",
        axe.display()
    );
    let chromium = std::env::var("KILN_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).is_file(),
        "{chromium} is missing: apt-get install chromium (or set KILN_CHROMIUM)"
    );
    // The example server wants Node 20 or newer; .ci/run's KILN_NODE is one.
    let node = std::env::var("KILN_NODE").unwrap_or_else(|_| "node".into());
    let root = tempfile::tempdir().expect("dir");
    let (scripts, workspace, tokens) = project(root.path(), &node, &example);
    // --caps is the server's ceiling; --needs-approval marks mcp:clock in it, so every clock
    // call (the form's and the page's) waits for a person in the inbox.
    let serve = Serve::start(
        &scripts,
        &root.path().join("k.db"),
        &[
            "--no-stdlib",
            "--workspace",
            &workspace.display().to_string(),
            "--tokens",
            &tokens.display().to_string(),
            "--caps",
            "mcp:clock,ledger",
            "--needs-approval",
            "mcp:clock",
        ],
        &[],
    );
    let shots = root.path().join("shots");
    let started = std::time::Instant::now();
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/console/apps_check.py"))
        .env("KILN_URL", &serve.url)
        // console_kit.py reads these; this suite starts no mock and writes no files.
        .env("KILN_MOCK_URL", "http://127.0.0.1:9")
        .env("KILN_SCRIPTS", &scripts)
        .env("KILN_WORKSPACE", &workspace)
        .env("KILN_ALICE", ALICE)
        .env("KILN_BOB", BOB)
        .env("KILN_CAROL", CAROL)
        .env("KILN_AXE", &axe)
        .env("KILN_SHOTS", &shots)
        .env("KILN_CHROMIUM", &chromium)
        .output()
        .expect("run python3");
    eprintln!("apps_check.py took {:.1?}", started.elapsed());
    assert!(
        out.status.success(),
        "the console apps suite failed:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    // "ok" is its last line: every step ran.
    assert!(stdout(&out).ends_with("\nok\n"), "{}", stdout(&out));
    for name in SHOTS {
        let shot = shots.join(name);
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
            "{name} was not taken"
        );
    }
    // KILN_UPDATE_SHOTS=1 refreshes the documentation's picture (docs/mcp.md shows it); CI
    // leaves the repository alone.
    if std::env::var("KILN_UPDATE_SHOTS").as_deref() == Ok("1") {
        std::fs::copy(
            shots.join(SHOTS[0]),
            repo().join("docs/images/console-app.png"),
        )
        .expect("copy the screenshot");
    }
    drop(serve);
}
