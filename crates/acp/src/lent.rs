//! What the client lends the agent's tools. Its files: when it offered `fs.readTextFile`
//! (`fs.writeTextFile`), a tool's `read_file` (`write_file`) reads (writes) the file through
//! `fs/read_text_file` (`fs/write_text_file`), so it sees the editor's unsaved changes and the
//! editor sees its writes. Its terminal: when it offered `terminal`, a tool's
//! `run_in_terminal(command, args)` runs there (`terminal/create`, then `wait_for_exit`,
//! `output`, `release`; killed when the prompt is cancelled), the person watching. The tool
//! still needs its grant (`fs.read`, `fs.write` scoped as on disk; `terminal:COMMAND`): kiln
//! checks it before it asks the client. Without the offer, the disk, and no command at all.

use crate::state::ClientCaps;
use crate::wire::Outbox;
use kiln_core::context::call_events::{CallObserver, LogLevel};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Most bytes of a command's output the client keeps for kiln.
const OUTPUT_LIMIT: u64 = 1 << 20;

/// What one prompt's tools reach of the client.
pub struct Lent {
    /// Where the requests go.
    pub outbox: Arc<Outbox>,
    /// The session the prompt runs in.
    pub session: String,
    /// What the client offered.
    pub caps: ClientCaps,
    /// The prompt's cancellation: a cancelled prompt stops waiting.
    pub cancel: CancellationToken,
}

impl Lent {
    fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        let cancel = self.cancel.clone();
        self.outbox.request(method, params).wait(move || {
            cancel
                .is_cancelled()
                .then(|| "the prompt was cancelled".into())
        })
    }

    /// `command` run in the client's terminal to its end: its output and exit status.
    fn run(&self, params: &Value) -> Result<Value, String> {
        let id = &self.session;
        let created = self.ask(
            "terminal/create",
            json!({"sessionId": id, "command": params["command"], "args": params["args"],
                "cwd": params["cwd"], "outputByteLimit": OUTPUT_LIMIT}),
        )?;
        let terminal = created["terminalId"]
            .as_str()
            .ok_or("the client's answer has no terminalId")?
            .to_string();
        let this = json!({"sessionId": id, "terminalId": terminal});
        let exited = self.ask("terminal/wait_for_exit", this.clone());
        let output = match &exited {
            Ok(_) => self.ask("terminal/output", this.clone()),
            Err(_) => {
                // Cancelled or gone: the command stops with the prompt (no answer awaited).
                drop(self.outbox.request("terminal/kill", this.clone()));
                Err(String::new())
            }
        };
        drop(self.outbox.request("terminal/release", this));
        let exited = exited?;
        let output = output?;
        Ok(json!({
            "output": output["output"],
            "truncated": output["truncated"],
            "exitCode": exited["exitCode"],
            "signal": exited["signal"],
        }))
    }
}

impl CallObserver for Lent {
    // Progress and events reach the client as tool call updates already (`updates`).
    fn progress(&self, _done: f64, _total: Option<f64>, _message: Option<String>) {}

    fn log(&self, _level: LogLevel, _message: String) {}

    fn lend(&self, request: &str, params: Value) -> Option<Result<Value, String>> {
        let id = &self.session;
        match request {
            "fs/read_text_file" if self.caps.read_text_file => {
                let asked = json!({"sessionId": id, "path": params["path"]});
                Some(self.ask(request, asked))
            }
            "fs/write_text_file" if self.caps.write_text_file => {
                let asked =
                    json!({"sessionId": id, "path": params["path"], "content": params["content"]});
                Some(self.ask(request, asked).map(|_| Value::Null))
            }
            "terminal/run" if self.caps.terminal => Some(self.run(&params)),
            _ => None,
        }
    }
}
