//! What the client lends over ACP: when it offers `fs.readTextFile`/`fs.writeTextFile`, a
//! tool's `read_file`/`write_file` go through `fs/read_text_file`/`fs/write_text_file` (the
//! editor's unsaved text, its buffer written); when it offers `terminal`, `run_in_terminal`
//! runs there. Still only where the agent's grants reach (a path or command outside them is
//! refused before the client is asked); without the offer, the disk, and no command.

use super::*;
use std::path::Path;

/// The `rawOutput`-free text of the last tool call update's content.
fn tool_result(msgs: &[Value]) -> String {
    updates(msgs)
        .iter()
        .rev()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["content"].is_array())
        .and_then(|u| {
            u["content"][0]["content"]["text"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// `initialize` offering the file system (or not), then `session/new`: the session's id.
fn session(acp: &mut Acp, offer: bool) -> String {
    acp.new_session_offering(json!({"fs": {"readTextFile": offer, "writeTextFile": offer}}))
}

/// A prompt (request 5, in a new session) whose tool reaches past its grant: refused, and the
/// client never asked `method`.
fn refused_before_the_client_is_asked(acp: &mut Acp, text: &str, method: &str) {
    let other = acp.another_session(4);
    let mut asked = 0;
    let (msgs, _) = acp.request_answering(5, "session/prompt", prompt(&other, text), |v| {
        asked += usize::from(v["method"] == method);
        None
    });
    assert_eq!(asked, 0, "kiln asked the client {method}");
    assert!(tool_result(&msgs).contains("refused"), "{msgs:#?}");
}

fn disk(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("the file")
}

#[test]
fn acp_tools_read_and_write_the_editors_files_within_their_grants() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    std::fs::write(dir.path().join("notes.txt"), "saved text").expect("notes");
    std::fs::write(dir.path().join("secret.txt"), "do not read").expect("secret");
    let mut acp = Acp::start(dir.path());
    let id = session(&mut acp, true);
    let mut asked = Vec::new();
    let (msgs, answer) =
        acp.request_answering(3, "session/prompt", prompt(&id, "notes please"), |v| {
            asked.push(v.clone());
            match v["method"].as_str() {
                Some("fs/read_text_file") => Some(json!({"content": "unsaved draft"})),
                Some("fs/write_text_file") => Some(Value::Null),
                _ => None,
            }
        });
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let methods: Vec<&str> = asked.iter().filter_map(|v| v["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["fs/read_text_file", "fs/write_text_file"],
        "{asked:#?}"
    );
    let notes = dir.path().canonicalize().expect("dir").join("notes.txt");
    for v in &asked {
        assert_eq!(v["params"]["sessionId"], json!(id), "{v}");
        assert_eq!(
            v["params"]["path"],
            json!(notes.display().to_string()),
            "an absolute path: {v}"
        );
    }
    assert_eq!(asked[1]["params"]["content"], "UNSAVED DRAFT");
    assert_eq!(tool_result(&msgs), "edited: unsaved draft", "{msgs:#?}");
    assert_eq!(
        disk(dir.path(), "notes.txt"),
        "saved text",
        "the editor's buffer was written, not the disk"
    );

    // Outside the grants: refused before the client is asked.
    refused_before_the_client_is_asked(&mut acp, "peek at it", "fs/read_text_file");
    assert!(acp.close().success());
}

#[test]
fn acp_without_the_clients_file_system_tools_use_the_disk() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    std::fs::write(dir.path().join("notes.txt"), "saved text").expect("notes");
    let mut acp = Acp::start(dir.path());
    let id = session(&mut acp, false);
    let (msgs, answer) =
        acp.request_answering(3, "session/prompt", prompt(&id, "notes please"), |v| {
            panic!("kiln asked the client {v} though it offered no file system")
        });
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(tool_result(&msgs), "edited: saved text", "{msgs:#?}");
    assert_eq!(disk(dir.path(), "notes.txt"), "SAVED TEXT");
    assert!(acp.close().success());
}

/// `initialize` offering a terminal (or not), then `session/new`.
fn terminal_session(acp: &mut Acp, offer: bool) -> String {
    acp.new_session_offering(json!({"terminal": offer}))
}

#[test]
fn acp_a_tool_runs_a_command_in_the_editors_terminal_within_its_grant() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    let id = terminal_session(&mut acp, true);
    let mut asked = Vec::new();
    let (msgs, answer) =
        acp.request_answering(3, "session/prompt", prompt(&id, "run the tests"), |v| {
            asked.push(v.clone());
            match v["method"].as_str() {
                Some("terminal/create") => Some(json!({"terminalId": "term-1"})),
                Some("terminal/wait_for_exit") => Some(json!({"exitCode": 0, "signal": null})),
                Some("terminal/output") => {
                    Some(json!({"output": "test result: ok", "truncated": false}))
                }
                Some("terminal/release") => Some(Value::Null),
                _ => None,
            }
        });
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let methods: Vec<&str> = asked.iter().filter_map(|v| v["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ],
        "{asked:#?}"
    );
    let created = &asked[0]["params"];
    assert_eq!(
        (&created["command"], &created["args"]),
        (&json!("cargo"), &json!(["test", "--quiet"]))
    );
    assert_eq!(created["sessionId"], json!(id));
    assert!(
        created["cwd"].as_str().is_some_and(|c| c.starts_with('/')),
        "{created}"
    );
    for v in &asked[1..] {
        assert_eq!(v["params"]["terminalId"], "term-1", "{v}");
    }
    assert_eq!(tool_result(&msgs), "exit 0: test result: ok", "{msgs:#?}");
    let ups = updates(&msgs);
    let kinds: Vec<&Value> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| &u["kind"])
        .collect();
    assert_eq!(kinds, [&json!("execute")], "{msgs:#?}");

    // A command the grant does not name is refused before the editor is asked.
    refused_before_the_client_is_asked(&mut acp, "wipe it all", "terminal/create");
    assert!(acp.close().success());
}

#[test]
fn acp_without_the_editors_terminal_no_command_runs() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    let id = terminal_session(&mut acp, false);
    let (msgs, answer) =
        acp.request_answering(3, "session/prompt", prompt(&id, "run the tests"), |v| {
            panic!("kiln asked the client {v} though it offered no terminal")
        });
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let said = tool_result(&msgs);
    assert!(
        said.contains("refused") && said.contains("lends its terminal"),
        "{msgs:#?}"
    );
    assert!(acp.close().success());
}
