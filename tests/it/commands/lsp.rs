//! `kiln lsp` over stdio: a hand-rolled client here (in every test run), and pytest-lsp, a real
//! LSP client, in tests/peers/lsp (ignored by default: `pip install pytest-lsp==1.0.1`; `.ci/run`
//! installs it and runs it with `-- --ignored`).

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Lsp {
    fn start(root: &std::path::Path) -> Lsp {
        let mut child = Command::new(kiln_bin())
            .arg("lsp")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kiln lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Lsp {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut len = 0;
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("a header");
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                len = n.parse().expect("a length");
            }
        }
        let mut body = vec![0; len];
        self.stdout.read_exact(&mut body).expect("a body");
        serde_json::from_slice(&body).expect("JSON")
    }

    /// Reads messages until one matches.
    fn until(&mut self, what: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let msg = self.read();
            if what(&msg) {
                return msg;
            }
        }
        panic!("kiln lsp never sent the message waited for");
    }

    /// The `initialize` handshake for a workspace at `root`; returns the server's answer.
    fn initialize(&mut self, root: &std::path::Path) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": null, "rootUri": url(root), "capabilities": {}}}));
        let init = self.until(|m| m["id"] == 1);
        self.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        init
    }

    /// Opens `file` with `text` in the editor; returns its URI.
    fn open(&mut self, file: &std::path::Path, text: &str) -> String {
        let uri = url(file);
        self.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "rhai", "version": 1, "text": text}}}),
        );
        uri
    }

    /// The diagnostics published for `uri`.
    fn published(&mut self, uri: &str) -> Value {
        self.until(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        })
    }

    /// `shutdown` (as request `id`) and `exit`; the server exits with success.
    fn shut_down(mut self, id: u64) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "shutdown"}));
        self.until(|m| m["id"] == id);
        self.send(json!({"jsonrpc": "2.0", "method": "exit"}));
        let status = self.child.wait().expect("kiln lsp exits");
        assert!(status.success(), "{status}");
    }
}

#[test]
fn kiln_lsp_reports_what_kiln_check_reports_where_it_reports_it_and_shuts_down() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    std::fs::write(
        s.path().join("scripts/w.rhai"),
        "tool(\"w\")\n    .description(\"W\")\n    .parm(\"city\", \"string\")\n    .handler(|args| 1);\n",
    )
    .expect("a script");
    let check = kiln(&["check"], s.path());
    let told = stderr(&check);
    assert!(
        told.contains("w.rhai:3:6: tool(...): no method .parm(...)"),
        "{told}"
    );

    let mut lsp = Lsp::start(s.path());
    let init = lsp.initialize(s.path());
    assert_eq!(init["result"]["capabilities"]["hoverProvider"], true);
    let file = s.path().join("scripts/w.rhai");
    let text = std::fs::read_to_string(&file).expect("the script");
    let uri = lsp.open(&file, &text);
    let published = lsp.published(&uri);
    let d = &published["params"]["diagnostics"][0];
    assert_eq!(
        d["range"]["start"],
        json!({"line": 2, "character": 5}),
        "{published}"
    );
    assert_eq!(d["range"]["end"], json!({"line": 2, "character": 9}));
    assert_eq!(
        d["message"],
        "tool(...): no method .parm(...); did you mean .param(name, type[, options])?"
    );

    lsp.send(json!({"jsonrpc": "2.0", "id": 2, "method": "no/such", "params": {}}));
    let refused = lsp.until(|m| m["id"] == 2);
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    lsp.shut_down(3);
}

#[test]
fn hover_and_completion_describe_methods_the_old_hand_written_list_missed() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    let text = "mcp_server(\"m\").command(\"srv\").oauth();\npolicy(\"p\").";
    let file = s.path().join("scripts/m.rhai");
    std::fs::write(&file, text).expect("a script");
    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let uri = lsp.open(&file, text);
    let oauth = text.find("oauth").expect("oauth") + 1;
    lsp.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": oauth}}}),
    );
    let hover = lsp.until(|m| m["id"] == 2);
    let value = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        value.contains(".oauth([options])") && value.contains("`options` map (optional)"),
        "{hover}"
    );
    lsp.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 12}}}),
    );
    let items = lsp.until(|m| m["id"] == 3);
    let check = (items["result"].as_array().expect("a list").iter())
        .find(|i| i["label"] == "check")
        .unwrap_or_else(|| panic!("no .check: {items}"));
    assert_eq!(check["detail"], ".check(function)", "{check}");
    lsp.shut_down(4);
}

#[test]
fn kiln_lsp_warns_where_kiln_check_warns_about_a_deprecated_spelling() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    let text = "// returns\ntool(\"w\").returns(\"string\").handler(|args| \"w\");\n";
    std::fs::write(s.path().join("scripts/w.rhai"), text).expect("a script");
    let told = stderr(&kiln(&["check"], s.path()));
    assert!(
        told.contains("w.rhai:2:11: `.returns(...)` is deprecated"),
        "{told}"
    );

    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let uri = lsp.open(&s.path().join("scripts/w.rhai"), text);
    let published = lsp.published(&uri);
    let d = &published["params"]["diagnostics"][0];
    assert_eq!(
        d["range"]["start"],
        json!({"line": 1, "character": 10}),
        "{published}"
    );
    assert_eq!(d["range"]["end"], json!({"line": 1, "character": 17}));
    assert_eq!(d["severity"], 2);
    assert_eq!(d["tags"], json!([2]));
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("write `.output(...)`")),
        "{published}"
    );
    lsp.shut_down(3);
}

#[test]
fn a_kiln_toml_that_does_not_read_is_shown_on_the_file_and_the_server_goes_on() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    std::fs::write(
        s.path().join("kiln.toml"),
        "stdlib = false\n\n[serve]\nmax_rnus = 3\n",
    )
    .expect("kiln.toml");
    let text = "tool(\"w\").handler(|args| nope);\n";
    std::fs::write(s.path().join("scripts/w.rhai"), text).expect("a script");

    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let published = lsp.published(&url(&s.path().join("kiln.toml")));
    let d = &published["params"]["diagnostics"][0];
    assert_eq!(
        d["range"]["start"],
        json!({"line": 3, "character": 0}),
        "{published}"
    );
    assert_eq!(d["severity"], 1);
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("did you mean `max_runs`?")),
        "{published}"
    );
    // The scripts are still checked, from the default folder.
    let uri = lsp.open(&s.path().join("scripts/w.rhai"), text);
    let published = lsp.published(&uri);
    assert_eq!(
        published["params"]["diagnostics"][0]["severity"], 1,
        "{published}"
    );
    lsp.shut_down(3);
}

/// The labels of the completions offered at `line`:`character` of `uri` (request `id`).
fn completion_labels(
    lsp: &mut Lsp,
    id: u64,
    uri: &str,
    line: usize,
    character: usize,
) -> Vec<String> {
    lsp.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character}}}),
    );
    let items = lsp.until(|m| m["id"] == id);
    let list = match items["result"].get("items") {
        Some(list) => list.clone(),
        None => items["result"].clone(),
    };
    (list.as_array().cloned().unwrap_or_default().iter())
        .filter_map(|i| i["label"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn kiln_lsp_completes_and_hovers_the_evaluation_builders() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    let text =
        "let grade = judge(#{ rubric: \"polite\" });\nlet check = answer_\nevaluation(\"e\").";
    let file = s.path().join("scripts/e.rhai");
    std::fs::write(&file, text).expect("a script");
    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let uri = lsp.open(&file, text);

    let methods = completion_labels(&mut lsp, 2, &uri, 2, "evaluation(\"e\").".len());
    for m in [
        "agent",
        "cases",
        "add_case",
        "evaluator",
        "models",
        "repeat",
    ] {
        assert!(methods.iter().any(|l| l == m), "no .{m} in {methods:?}");
    }
    let functions = completion_labels(&mut lsp, 3, &uri, 1, "let check = answer_".len());
    for f in ["answer_contains", "answer_equals", "answer_matches"] {
        assert!(functions.iter().any(|l| l == f), "no {f} in {functions:?}");
    }

    let at = "let grade = ju".len();
    lsp.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": at}}}),
    );
    let hover = lsp.until(|m| m["id"] == 4);
    let value = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        value.contains("judge(settings)") && value.contains("A model grades the run"),
        "{hover}"
    );
    lsp.shut_down(5);
}

#[test]
fn kiln_lsp_completes_skill_folders_and_the_skills_load_skill_names() {
    let s = Scripts::new(&[]);
    let skill = |name: &str, says: &str| {
        let dir = s.path().join("scripts/skills").join(name);
        std::fs::create_dir_all(&dir).expect("a skill folder");
        let md = format!("---\nname: {name}\ndescription: {says}\n---\nSteps.\n");
        std::fs::write(dir.join("SKILL.md"), md).expect("SKILL.md");
    };
    skill("pdf-forms", "Fills PDF forms field by field");
    skill("ratios", "Reads financial ratios from statements");
    std::fs::create_dir_all(s.path().join("scripts/data")).expect("a folder without skills");
    let text = "agent(\"a\").skills([\"sk\"]);\nlet reply = #{ tool_calls: [#{ name: \"load_skill\", args: #{ name: \"\" } }] };\nagent(\"b\").skills([\"skills/\"]);\n";
    let file = s.path().join("scripts/a.rhai");
    std::fs::write(&file, text).expect("a script");
    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let uri = lsp.open(&file, text);

    let col = "agent(\"a\").skills([\"sk".len();
    lsp.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": col}}}),
    );
    let answer = lsp.until(|m| m["id"] == 2);
    let items = answer["result"].as_array().cloned().unwrap_or_default();
    let labels: Vec<&str> = items.iter().filter_map(|i| i["label"].as_str()).collect();
    assert_eq!(
        labels,
        ["skills", "skills/pdf-forms", "skills/ratios"],
        "{answer}"
    );
    assert_eq!(items[0]["detail"], "folder of 2 skills");
    let pdf = &items[1];
    assert_eq!(pdf["detail"], "skill");
    let doc = pdf["documentation"]["value"].as_str().unwrap_or_default();
    assert!(doc.contains("Fills PDF forms field by field"), "{pdf}");
    // The whole string typed so far is replaced: `sk` becomes the folder's path.
    let start = "agent(\"a\").skills([\"".len();
    assert_eq!(pdf["textEdit"]["newText"], "skills/pdf-forms");
    assert_eq!(
        pdf["textEdit"]["range"]["start"],
        json!({"line": 0, "character": start})
    );
    assert_eq!(
        pdf["textEdit"]["range"]["end"],
        json!({"line": 0, "character": col})
    );

    // The skills' names where a scripted model calls load_skill.
    let line = text.lines().nth(1).unwrap_or_default();
    let at = line.rfind("\"\"").unwrap_or_default() + 1;
    let names = completion_labels(&mut lsp, 3, &uri, 1, at);
    assert_eq!(names, ["pdf-forms", "ratios"], "{names:?}");

    // Hovering a folder shows the skills it gives.
    let at = "agent(\"b\").skills([\"ski".len();
    lsp.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 2, "character": at}}}),
    );
    let hover = lsp.until(|m| m["id"] == 4);
    let value = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        value.starts_with("**folder of 2 skills**")
            && value.contains("- **ratios**: Reads financial ratios from statements"),
        "{hover}"
    );
    lsp.shut_down(5);
}

#[test]
fn kiln_lsp_reports_an_evaluation_without_cases_at_its_line() {
    let s = Scripts::new(&[]);
    std::fs::create_dir(s.path().join("scripts")).expect("a scripts folder");
    let text = "agent(\"a\").provider(\"openai\").model(\"m\");\n\nevaluation(\"empty\")\n    .agent(\"a\")\n    .evaluator(answer_contains());\n";
    let file = s.path().join("scripts/e.rhai");
    std::fs::write(&file, text).expect("a script");
    let told = stderr(&kiln(&["check"], s.path()));
    assert!(told.contains("e.rhai:3:"), "{told}");

    let mut lsp = Lsp::start(s.path());
    lsp.initialize(s.path());
    let uri = lsp.open(&file, text);
    let published = lsp.published(&uri);
    let all = published["params"]["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(all.len(), 1, "{published}");
    let d = &all[0];
    assert_eq!(d["range"]["start"]["line"], 2, "{published}");
    assert_eq!(d["severity"], 1);
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("has no cases")),
        "{published}"
    );
    lsp.shut_down(2);
}

fn url(path: &std::path::Path) -> String {
    let path = path.canonicalize().expect("a real path");
    format!("file://{}", path.display())
}

#[test]
#[ignore = "needs pytest-lsp 1.0.1 (pip); .ci/run installs it"]
fn pytest_lsp_drives_kiln_lsp() {
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(repo().join("tests/peers/lsp"))
        .env("KILN_BIN", kiln_bin())
        .env("KILN_REPO", repo())
        .current_dir(repo())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "pytest-lsp against kiln lsp:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}
