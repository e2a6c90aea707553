//! The connection: newline-delimited JSON-RPC 2.0 read from the client, each request handled
//! on a task of its own (a prompt streams while cancels and permission answers arrive), every
//! malformed message answered with an error, never a panic. stdout carries protocol messages
//! only; logs go to stderr.

use crate::error::{AcpError, RpcError, code};
use crate::methods;
use crate::prompt;
use crate::session::Session;
use crate::state::{Door, Options};
use crate::wire::Outbox;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

/// The longest line read (a prompt with images is large; past this the line is refused).
pub const MAX_LINE: usize = 64 << 20;

/// Serves `options.agent` of `host` to the client on stdin and stdout until stdin closes.
pub async fn serve_stdio(host: Arc<kiln_host::Host>, options: Options) -> Result<(), AcpError> {
    serve(host, options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `options.agent` of `host` over `input` and `output` until `input` ends and the
/// prompts still running have answered.
pub async fn serve<R, W>(
    host: Arc<kiln_host::Host>,
    options: Options,
    input: R,
    output: W,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    host.agent(&options.agent)
        .map_err(|e| AcpError::Agent(e.to_string()))?;
    let db = host.database().cloned().ok_or_else(|| {
        AcpError::Agent("kiln acp needs the database (sessions are kept there)".into())
    })?;
    let (outbox, writer) = Outbox::start(output);
    let door = Arc::new(Door {
        host,
        db,
        options,
        outbox: outbox.clone(),
        sessions: Default::default(),
        client: Mutex::new(Default::default()),
    });
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line).await? {
            Line::End => break,
            Line::TooLong => outbox.respond(
                Value::Null,
                Err(RpcError::new(
                    code::PARSE_ERROR,
                    format!("Parse error: a line longer than {MAX_LINE} bytes"),
                )),
            ),
            Line::Read => on_line(&door, &line),
        }
    }
    stop(&door).await;
    drop(door);
    drop(outbox);
    let _ = writer.await;
    Ok(())
}

/// What one read gave.
enum Line {
    /// A line (without its newline) is in the buffer.
    Read,
    /// A line past [`MAX_LINE`], skipped.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `buf`, holding at most [`MAX_LINE`] bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !too_long {
                Line::End
            } else if too_long {
                Line::TooLong
            } else {
                Line::Read
            });
        }
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long && buf.len() + part.len() <= MAX_LINE {
            buf.extend_from_slice(part);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// Handles one line: a request (on a task of its own), a notification, or an answer to one
/// of kiln's requests.
fn on_line(door: &Arc<Door>, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    if text.trim().is_empty() {
        return;
    }
    let msg: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            let err = RpcError::new(code::PARSE_ERROR, format!("Parse error: {e}"));
            return door.outbox.respond(Value::Null, Err(err));
        }
    };
    let invalid =
        |why: &str| RpcError::new(code::INVALID_REQUEST, format!("Invalid request: {why}"));
    let Some(obj) = msg.as_object() else {
        let why = if msg.is_array() {
            "batches are not part of ACP"
        } else {
            "expected a JSON-RPC object"
        };
        return door.outbox.respond(Value::Null, Err(invalid(why)));
    };
    let id = obj.get("id").cloned();
    let id_ok = matches!(
        &id,
        None | Some(Value::String(_) | Value::Number(_) | Value::Null)
    );
    if !id_ok {
        return door.outbox.respond(
            Value::Null,
            Err(invalid("id: expected a string, a number or null")),
        );
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return door.outbox.respond(
            id.unwrap_or(Value::Null),
            Err(invalid("jsonrpc: expected \"2.0\"")),
        );
    }
    let method = match obj.get("method") {
        None => return on_answer(door, obj),
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            return door.outbox.respond(
                id.unwrap_or(Value::Null),
                Err(invalid("method: expected a string")),
            );
        }
    };
    let params = obj.get("params").cloned();
    match id {
        // A prompt runs on a task of its own (its cancel and permission answers arrive
        // while it streams); the rest are answered in order, at once.
        Some(id) if method == "session/prompt" => {
            let door = door.clone();
            tokio::spawn(async move {
                let answer = prompt::prompt(&door, params.as_ref()).await;
                door.outbox.respond(id, answer);
            });
        }
        Some(id) => door
            .outbox
            .respond(id, request(door, &method, params.as_ref())),
        None => notification(door, &method, params.as_ref()),
    }
}

/// An answer to one of kiln's requests (`result` or `error`), handed to whoever waits.
fn on_answer(door: &Door, obj: &serde_json::Map<String, Value>) {
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let answer = match (obj.get("result"), obj.get("error")) {
        (Some(r), None) => Ok(r.clone()),
        (None, Some(e)) => Err(RpcError {
            code: e
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(code::INTERNAL_ERROR),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            data: e.get("data").cloned(),
        }),
        _ => {
            let why = "Invalid request: a message with neither method nor exactly one of result and error";
            return door
                .outbox
                .respond(id, Err(RpcError::new(code::INVALID_REQUEST, why)));
        }
    };
    if !door.outbox.answered(&id, answer) {
        tracing::debug!(%id, "acp: an answer to no request waiting");
    }
}

/// Handles request `method` (but `session/prompt`).
fn request(door: &Door, method: &str, params: Option<&Value>) -> Result<Value, RpcError> {
    match method {
        "initialize" => methods::initialize(door, params),
        "authenticate" => methods::authenticate(params),
        "session/new" => methods::new_session(door, params),
        "session/load" => methods::load_session(door, params),
        _ => Err(RpcError {
            code: code::METHOD_NOT_FOUND,
            message: format!("Method not found: \"{method}\""),
            data: Some(json!({"method": method})),
        }),
    }
}

/// Handles notification `method`: `session/cancel`; others (extensions, `$/cancel_request`)
/// are ignored, as JSON-RPC asks.
fn notification(door: &Door, method: &str, params: Option<&Value>) {
    if method != "session/cancel" {
        tracing::debug!(method, "acp: notification ignored");
        return;
    }
    let id = params
        .and_then(|p| p.get("sessionId"))
        .and_then(Value::as_str);
    match id.and_then(|id| door.sessions.get(id)) {
        Some(s) => s.cancel(),
        None => {
            tracing::warn!(session = ?id, "acp: session/cancel for no session of this connection")
        }
    }
}

/// stdin closed: the prompts still running finish (their answers written, their runs logged;
/// kiln's requests to the client end unanswered, so a question refuses its call), then the
/// connection ends. An editor that quits stops the process itself.
async fn stop(door: &Door) {
    door.outbox.close();
    let sessions: Vec<Arc<Session>> = door.sessions.all();
    while sessions.iter().any(|s| s.is_running()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
