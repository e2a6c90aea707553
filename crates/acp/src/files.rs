//! The client's files lent to the agent's tools: when the client offered `fs.readTextFile`
//! (`fs.writeTextFile`), a tool's `read_file` (`write_file`) reads (writes) the file through
//! `fs/read_text_file` (`fs/write_text_file`), so it sees the editor's unsaved changes and the
//! editor sees its writes. The tool still needs its `fs.read`/`fs.write` grant, scoped as on
//! disk: kiln checks the path before it asks the client. Without the offer, the disk.

use crate::state::ClientCaps;
use crate::wire::Outbox;
use kiln_core::context::call_events::{CallObserver, LogLevel};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What one prompt's tools reach of the client.
pub struct ClientFiles {
    /// Where the requests go.
    pub outbox: Arc<Outbox>,
    /// The session the prompt runs in.
    pub session: String,
    /// What the client offered.
    pub caps: ClientCaps,
    /// The prompt's cancellation: a cancelled prompt stops waiting.
    pub cancel: CancellationToken,
}

impl ClientFiles {
    fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        let cancel = self.cancel.clone();
        self.outbox.request(method, params).wait(move || {
            cancel
                .is_cancelled()
                .then(|| "the prompt was cancelled".into())
        })
    }
}

impl CallObserver for ClientFiles {
    // Progress and events reach the client as tool call updates already (`updates`).
    fn progress(&self, _done: f64, _total: Option<f64>, _message: Option<String>) {}

    fn log(&self, _level: LogLevel, _message: String) {}

    fn file(&self, path: &Path, write: Option<&str>) -> Option<Result<String, String>> {
        let path = path.to_string_lossy();
        match write {
            None if self.caps.read_text_file => {
                let params = json!({"sessionId": self.session, "path": path});
                Some(self.ask("fs/read_text_file", params).and_then(|answer| {
                    answer
                        .get("content")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| "the client's answer has no content".to_string())
                }))
            }
            Some(text) if self.caps.write_text_file => {
                let params = json!({"sessionId": self.session, "path": path, "content": text});
                Some(
                    self.ask("fs/write_text_file", params)
                        .map(|_| String::new()),
                )
            }
            _ => None,
        }
    }
}
