//! `kiln acp`: the Agent Client Protocol door over the real binary's stdio, driven from Rust
//! with JSON lines (`stdio`) and by the official `@agentclientprotocol/sdk` client (`sdk`,
//! #[ignore]d without KILN_ACP, the npm prefix it is installed in).

pub(crate) mod files;
pub(crate) mod sdk;
pub(crate) mod stdio;

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `add` adds; `clean_up` needs `store`, which `helper` holds only with a person's approval;
/// `slow` works (with progress) until cancelled; `edit_notes` reads and writes `notes.txt` (the
/// one file `helper`'s grants reach), `peek` tries `secret.txt`; `check` runs `cargo test` in
/// the client's terminal (`helper` grants `terminal:cargo`), `wipe` tries `rm`. `thinker` is on
/// the Responses wire, whose replies carry the model's reasoning.
pub(crate) fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "helper.rhai",
        &format!(
            r#"tool("add").description("Adds").param("a", "integer").param("b", "integer").handler(|a| a.a + a.b);
tool("clean_up").description("Cleans up").requires(["store"]).handler(|a| {{ store_set("k", "v", "1"); "cleaned" }});
tool("slow").description("Works a long time").handler(|a| {{
    for i in 0..600 {{ progress(i + 1, 600, "working"); sleep(0.05); }}
    "finished"
}});
tool("edit_notes").description("Edits the notes").requires(["fs.read", "fs.write"]).handler(|a| {{
    let text = read_file("notes.txt");
    write_file("notes.txt", text.to_upper());
    `edited: ${{text}}`
}});
tool("peek").description("Reads another file").requires(["fs.read"]).handler(|a| read_file("secret.txt"));
tool("check").description("Runs the tests").requires(["terminal"]).handler(|a| {{
    let r = run_in_terminal("cargo", ["test", "--quiet"]);
    `exit ${{r.exit_code}}: ${{r.output}}`
}});
tool("wipe").description("Wipes the disk").requires(["terminal"]).handler(|a| run_in_terminal("rm", ["-rf", "/"]));
agent("thinker").provider("openai-responses").model("m").base_url("{}/v1");
agent("helper").provider("openai").model("m").base_url("{}/v1").tools(["add", "clean_up", "slow", "edit_notes", "peek", "check", "wipe"]).capabilities(["fs.read:notes.txt", "fs.write:notes.txt", "terminal:cargo"]).needs_approval(["store"]);"#,
            mock.url, mock.url
        ),
    )])
}

/// The model's turns, picked by the conversation's first user message and its round: "add"
/// calls `add` then answers (and answers again when the session goes on), "clean" calls
/// `clean_up`, "slow" calls `slow`.
pub(crate) fn scenario() -> Value {
    json!({"by_round": true, "loop": true, "turns": [
        {"user": "add", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]},
        {"user": "add", "text": "The sum is 5."},
        {"user": "add", "text": "Still 5."},
        {"user": "clean", "tool_calls": [{"name": "clean_up", "args": {}}]},
        {"user": "clean", "text": "Done cleaning."},
        {"user": "slow", "tool_calls": [{"name": "slow", "args": {}}]},
        {"user": "slow", "text": "never"},
        {"user": "notes", "tool_calls": [{"name": "edit_notes", "args": {}}]},
        {"user": "notes", "text": "Edited."},
        {"user": "peek", "tool_calls": [{"name": "peek", "args": {}}]},
        {"user": "peek", "text": "Peeked."},
        {"user": "run the tests", "tool_calls": [{"name": "check", "args": {}}]},
        {"user": "run the tests", "text": "Tests ran."},
        {"user": "wipe", "tool_calls": [{"name": "wipe", "args": {}}]},
        {"user": "wipe", "text": "Not wiped."},
        {"user": "think", "reasoning": "Two and three make five.", "text": "Five."}
    ]})
}

/// A running `kiln acp helper` in `dir`, read line by line; killed on drop.
pub(crate) struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Acp {
    /// Starts `kiln acp helper` on `dir`'s scripts and database.
    pub(crate) fn start(dir: &std::path::Path) -> Acp {
        Acp::start_agent(dir, "helper")
    }

    /// Starts `kiln acp AGENT` on `dir`'s scripts and database.
    pub(crate) fn start_agent(dir: &std::path::Path, agent: &str) -> Acp {
        let mut child = Command::new(kiln_bin())
            .args(["--scripts", &dir.display().to_string()])
            .args(["--db", &dir.join("k.db").display().to_string()])
            .args(["acp", agent])
            .current_dir(dir)
            .env("OPENAI_API_KEY", "sk-test")
            .env_remove("KILN_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kiln acp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Acp {
            child,
            stdin,
            lines,
        }
    }

    /// Sends one line.
    pub(crate) fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("send");
        stdin.flush().expect("flush");
    }

    /// The next message (every line on stdout must be one JSON-RPC message).
    pub(crate) fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a message within 30 s");
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        v
    }

    /// Sends request `id` and reads up to its answer, answering permission requests with
    /// `option`; returns the messages before the answer, and the answer.
    pub(crate) fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        option: &str,
    ) -> (Vec<Value>, Value) {
        self.request_answering(id, method, params, |v| {
            (v["method"] == "session/request_permission")
                .then(|| json!({"outcome": {"outcome": "selected", "optionId": option}}))
        })
    }

    /// Sends request `id` and reads up to its answer, answering each request of kiln's with
    /// what `answer` returns for it (`None`: left unanswered); returns the messages before the
    /// answer, and the answer.
    pub(crate) fn request_answering(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        mut answer: impl FnMut(&Value) -> Option<Value>,
    ) -> (Vec<Value>, Value) {
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let mut seen = Vec::new();
        loop {
            let v = self.next();
            if v["id"] == json!(id) && v.get("method").is_none() {
                return (seen, v);
            }
            if v.get("id").is_some()
                && let Some(result) = answer(&v)
            {
                self.send_raw(
                    &json!({"jsonrpc": "2.0", "id": v["id"], "result": result}).to_string(),
                );
            }
            seen.push(v);
        }
    }

    /// `initialize` then `session/new`: the session's id.
    pub(crate) fn new_session(&mut self) -> String {
        self.new_session_offering(json!({}))
    }

    /// `initialize` with the client's capabilities `caps`, then `session/new` (request ids 1
    /// and 2): the session's id.
    pub(crate) fn new_session_offering(&mut self, caps: Value) -> String {
        let init = json!({"protocolVersion": 1, "clientCapabilities": caps});
        let (_, init) = self.request(1, "initialize", init, "");
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        self.another_session(2)
    }

    /// `session/new` as request `id`: the session's id.
    pub(crate) fn another_session(&mut self, id: u64) -> String {
        let (_, new) = self.request(
            id,
            "session/new",
            json!({"cwd": "/tmp", "mcpServers": []}),
            "",
        );
        new["result"]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// Closes stdin and waits for the process to exit: its exit status.
    pub(crate) fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait")
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `update`s of the `session/update` notifications among `msgs`.
pub(crate) fn updates(msgs: &[Value]) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// A prompt of one text block.
pub(crate) fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}
