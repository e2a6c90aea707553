//! The connection's sending side: newline-delimited JSON-RPC 2.0 messages to the client (one
//! writer task owns stdout, so lines never interleave), and the requests kiln sends the client
//! (`session/request_permission`, `fs/*`) waiting for their answers.

use crate::error::RpcError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc as sync_mpsc};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// An answer to one of kiln's requests: its result, or the client's error.
type Answer = Result<Value, RpcError>;

/// Where messages to the client go.
pub struct Outbox {
    /// To the writer task.
    tx: mpsc::UnboundedSender<Value>,
    /// kiln's requests waiting for an answer, by id.
    pending: Mutex<HashMap<u64, sync_mpsc::Sender<Answer>>>,
    /// The next request's id.
    next: AtomicU64,
    /// stdin closed: no answer will come.
    closed: AtomicBool,
}

impl Outbox {
    /// An outbox and the task writing its messages to `out`, one per line, until every
    /// sender is gone.
    pub fn start<W: AsyncWrite + Unpin + Send + 'static>(
        out: W,
    ) -> (Arc<Outbox>, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
        let writer = tokio::spawn(async move {
            let mut out = out;
            while let Some(msg) = rx.recv().await {
                let mut line = msg.to_string();
                line.push('\n');
                if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
                    tracing::warn!("acp: the client's end of stdout is closed");
                    return;
                }
            }
        });
        let outbox = Outbox {
            tx,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        };
        (Arc::new(outbox), writer)
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self
            .tx
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers request `id`.
    pub fn respond(&self, id: Value, answer: Answer) {
        let msg = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
        };
        let _ = self.tx.send(msg);
    }

    /// Sends request `method` to the client; its answer arrives on the returned [`Waiting`].
    pub fn request(self: &Arc<Self>, method: &str, params: Value) -> Waiting {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = sync_mpsc::channel();
        // Once the client is gone the sender is dropped here: the wait ends at once.
        if let (false, Ok(mut p)) = (self.closed.load(Ordering::Acquire), self.pending.lock()) {
            p.insert(id, tx);
        }
        let _ = self
            .tx
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        Waiting {
            id,
            rx,
            outbox: self.clone(),
        }
    }

    /// Hands the client's answer to the request waiting for it; false when none waits (an
    /// id kiln never sent, or one given up on).
    pub fn answered(&self, id: &Value, answer: Answer) -> bool {
        let Some(id) = id.as_u64() else { return false };
        let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        waiting.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// The client is gone: every request waiting for an answer ends without one.
    pub fn close(&self) {
        if let Ok(mut p) = self.pending.lock() {
            self.closed.store(true, Ordering::Release);
            p.clear();
        }
    }
}

/// One of kiln's requests, waiting for the client's answer.
pub struct Waiting {
    /// Its id.
    id: u64,
    /// Where the answer arrives.
    rx: sync_mpsc::Receiver<Answer>,
    /// To forget the request when the wait ends early.
    outbox: Arc<Outbox>,
}

impl Waiting {
    /// Blocks this thread until the answer arrives, or `ended` says why waiting is over
    /// (checked every 50 ms), or the client is gone.
    pub fn wait(self, ended: impl Fn() -> Option<String>) -> Result<Value, String> {
        loop {
            match self.rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => {
                    return Err(format!("the client answered with an error: {}", e.message));
                }
                Err(sync_mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the client is gone".into());
                }
                Err(sync_mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(why) = ended() {
                        return Err(why);
                    }
                }
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Ok(mut p) = self.outbox.pending.lock() {
            p.remove(&self.id);
        }
    }
}
