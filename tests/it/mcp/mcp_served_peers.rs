//! The official Python MCP SDK against what `kiln mcp` serves besides plain tool calls: a
//! code-mode program's approvals asked of the client, resources, prompts, completions and forms
//! on both revisions, and a mounted Python server's resources and prompts served on.
//!
//! `#[ignore]`d: they need the SDK (`pip install mcp==2.3.0`), which `.ci/run` installs.

use crate::common::*;
use crate::mcp::StdioMcp;
use crate::mcp::mcp_peers::{ASKED, ask_args, call_through_client, require_sdk};
use serde_json::{Value, json};

/// In `kiln mcp --code-mode`, a program's call of an `--ask` tool asks the client then and
/// there, once per call: a yes runs it, a no is an error the program catches. A 2026-07-28
/// client, which answers only in a retried request, is refused saying how to grant it.
#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_served_peers_code_mode_asks_the_client_for_each_call_a_program_makes() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", ASKED)]);
    let mut argv = vec![
        kiln_bin().display().to_string(),
        "mcp".into(),
        "--no-stdlib".into(),
        "--code-mode".into(),
    ];
    argv.extend(ask_args().into_iter().map(String::from));
    let target = json!(argv).to_string();
    let program = r#"let a = remember(#{ text: "one" });
let b = "";
try { b = remember(#{ text: "two" }); } catch (e) { b = `caught: ${e}`; }
[a, b]"#;
    let args = json!({ "code": program }).to_string();
    let call = ["run_code", args.as_str()];
    let v = call_through_client(
        &target,
        scripts.path(),
        "2025-11-25",
        "accept,decline",
        &call,
    );
    assert_eq!(v["is_error"], false, "{v}");
    let asked = v["asked"].as_array().cloned().unwrap_or_default();
    assert_eq!(asked.len(), 2, "one question per call: {v}");
    assert!(
        asked[0]
            .as_str()
            .unwrap_or("")
            .contains("tool \"remember\" may use store:notes only when a person approves"),
        "{v}"
    );
    let result: Value = serde_json::from_str(v["text"].as_str().unwrap_or("")).expect("json");
    assert_eq!(result[0], "kept one", "{v}");
    let caught = result[1].as_str().unwrap_or("");
    assert!(
        caught.starts_with("caught: remember(): ") && caught.contains("it was not approved"),
        "{caught}"
    );

    let v = call_through_client(&target, scripts.path(), "2026-07-28", "accept", &call);
    assert_eq!(v["asked"], json!([]), "{v}");
    let text = v["text"].as_str().unwrap_or("");
    assert_eq!(
        v["is_error"], true,
        "the first call's refusal is not caught: {v}"
    );
    assert!(
        text.contains("remember(): Tool \"remember\" was not run: \"store\" needs approval")
            && text.contains("answers approvals only in a retried request")
            && text.contains("the server's operator may grant it without asking"),
        "{text}"
    );
}

/// Resources, a template, prompts, a completion and a form, read through the SDK on both
/// revisions from the conformance fixture; a script added mid-session announces its resource.
#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_served_peers_read_resources_prompts_completions_and_forms() {
    require_sdk();
    let fixture = repo().join("tests/fixtures/mcp-everything");
    for mode in ["2025-11-25", "2026-07-28"] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy(
            fixture.join("everything.rhai"),
            dir.path().join("everything.rhai"),
        )
        .expect("copy the fixture");
        let args = std::fs::read_to_string(fixture.join("ARGS")).expect("ARGS");
        let mut argv = vec![
            kiln_bin().display().to_string(),
            "mcp".into(),
            "--no-stdlib".into(),
        ];
        argv.extend(args.split_whitespace().map(String::from));
        let out = std::process::Command::new("python3")
            .arg(repo().join("tests/peers/mcp/mcp_served.py"))
            .arg(json!(argv).to_string())
            .arg(mode)
            .arg(dir.path())
            .current_dir(dir.path())
            .output()
            .expect("python3");
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
        assert_eq!(v["protocol"], mode, "{v}");
        assert_eq!(
            v["resources"],
            json!([
                "test://static-text",
                "test://static-binary",
                "test://watched-resource"
            ])
        );
        assert_eq!(v["templates"], json!(["test://template/{id}/data"]));
        assert_eq!(
            v["text"],
            json!(["This is the content of the static text resource."])
        );
        assert_eq!(
            v["from_template"],
            json!([r#"{"id":"7","templateTest":true,"data":"Data for ID: 7"}"#])
        );
        assert_eq!(v["blob"], json!({"mime": "image/png", "has_bytes": true}));
        assert!(
            v["missing"]
                .as_str()
                .unwrap_or("")
                .contains("no resource \"test://nowhere\""),
            "{v}"
        );
        assert_eq!(v["prompts"].as_array().map(Vec::len), Some(5), "{v}");
        assert_eq!(
            v["prompt"],
            json!(["Prompt with arguments: arg1='hello', arg2='world'"])
        );
        assert_eq!(v["completed"], json!(["paris", "park", "party"]));
        // Asked as a request on 2025-11-25, in an input-required round on 2026-07-28 (the
        // SDK answers it and retries the call): the same form and the same answer.
        let form = &v["form_result"];
        assert_eq!(form["is_error"], false, "{v}");
        let said = form["text"][0].as_str().unwrap_or("");
        assert!(
            said.starts_with("Elicitation completed: action=accept"),
            "{said}"
        );
        assert!(said.contains("\"name\": \"Ada\""), "{said}");
        assert_eq!(
            v["forms"][0]["schema"]["properties"]["name"]["default"],
            "John Doe"
        );
        assert_eq!(
            v["forms"][0]["schema"]["properties"]["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert!(
            v["notified"].as_str().unwrap_or("").starts_with("Resource"),
            "{v}"
        );
        assert_eq!(v["resources_after"][0], "notes://added", "{v}");
    }
}

/// A mounted server's resources and prompts are served on beside its tools, under its
/// capability: without `mcp:py` the read is refused, with it the Python server answers.
#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_served_peers_a_mounted_servers_resources_and_prompts_are_served_on() {
    require_sdk();
    let scripts = Scripts::new(&[("none.rhai", "")]);
    let server = format!(
        "py=python3 {}",
        repo().join("tests/peers/mcp/mcp_server.py").display()
    );
    let mut kiln = StdioMcp::start(
        scripts.path(),
        &[
            "--no-stdlib",
            "--scripts",
            ".",
            "--caps",
            "mcp:py",
            "--mcp",
            &server,
        ],
    );
    let listed = kiln.rpc(2, "resources/list", json!({}));
    assert_eq!(
        listed["result"]["resources"][0]["uri"], "py://greeting",
        "{listed}"
    );
    assert_eq!(
        listed["result"]["resources"][0]["name"], "py__greeting",
        "{listed}"
    );
    let read = kiln.rpc(3, "resources/read", json!({"uri": "py://greeting"}));
    assert_eq!(
        read["result"]["contents"][0]["text"], "hello from python",
        "{read}"
    );
    let templates = kiln.rpc(4, "resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"], "py://items/{item}",
        "{templates}"
    );
    let item = kiln.rpc(5, "resources/read", json!({"uri": "py://items/7"}));
    assert_eq!(item["result"]["contents"][0]["text"], "item 7", "{item}");
    let prompt = kiln.rpc(
        6,
        "prompts/get",
        json!({"name": "py__review", "arguments": {"code": "x = 1"}}),
    );
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "Please review: x = 1",
        "{prompt}"
    );
    // Completions go to the server that offers the prompt or template.
    let done = kiln.rpc(
        7,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "py__review"},
               "argument": {"name": "code", "value": "xs"}}),
    );
    assert_eq!(
        done["result"]["completion"]["values"],
        json!(["xs = []"]),
        "{done}"
    );
    let done = kiln.rpc(
        8,
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "py://items/{item}"},
               "argument": {"name": "item", "value": "7"}}),
    );
    assert_eq!(
        done["result"]["completion"]["values"],
        json!(["7", "70"]),
        "{done}"
    );
    // The server adds a resource and says only that its resource list changed: kiln lists
    // again and tells its own client.
    kiln.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let added = kiln.rpc(
        9,
        "tools/call",
        json!({"name": "py__add_note", "arguments": {"text": "fresh"}}),
    );
    assert_eq!(
        added["result"]["structuredContent"]["result"], "added",
        "{added}"
    );
    let mut heard = Vec::new();
    while !heard.contains(&json!("notifications/resources/list_changed")) {
        heard.push(kiln.next()["method"].clone());
    }
    let listed = kiln.rpc(10, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"py://note"), "{listed}");
    let read = kiln.rpc(11, "resources/read", json!({"uri": "py://note"}));
    assert_eq!(read["result"]["contents"][0]["text"], "fresh", "{read}");
    drop(kiln);

    let mut ungranted = StdioMcp::start(
        scripts.path(),
        &["--no-stdlib", "--scripts", ".", "--mcp", &server],
    );
    let refused = ungranted.rpc(2, "resources/read", json!({"uri": "py://greeting"}));
    let said = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        said.contains("resource \"py://greeting\" requires capabilities [mcp:py]"),
        "{refused}"
    );
}
