//! What kiln answers itself before a message reaches rmcp: JSON-RPC's own errors, with the
//! codes the spec gives (-32700 for text that is not JSON, with `"id": null`; -32600 for a
//! message over the line limit or not a request; -32602 for a `tools/call` without a tool
//! name), where rmcp would stay silent, answer 415 or say -32601. Used by the stdio relay
//! here and by the HTTP endpoint.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest message line `kiln mcp` reads over stdio.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// `Ok` for a message to pass on, or the error reply to send instead.
pub fn precheck(text: &[u8]) -> Result<(), Value> {
    let msg: Value = serde_json::from_slice(text)
        .map_err(|e| error(Value::Null, -32700, format!("Parse error: {e}")))?;
    match &msg {
        Value::Object(m) => {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            if m.get("method").and_then(Value::as_str) == Some("tools/call") {
                let params = &msg["params"];
                let named = params["name"].is_string();
                let args_ok = params
                    .get("arguments")
                    .is_none_or(|a| a.is_object() || a.is_null());
                if !named || !args_ok {
                    return Err(error(
                        id,
                        -32602,
                        "Invalid params: tools/call needs params.name (a string) and params.arguments (an object) if given",
                    ));
                }
            }
            Ok(())
        }
        Value::Array(items) if !items.is_empty() => Ok(()),
        _ => Err(error(
            Value::Null,
            -32600,
            "Invalid Request: a message is a JSON object",
        )),
    }
}

/// Relays `input` to rmcp line by line, answering what [`precheck`] refuses (and lines over
/// [`MAX_LINE`]) itself; rmcp's replies and kiln's go out on `output` one whole line each.
/// Returns the two ends to hand to `serve((reader, writer))`.
pub fn relay(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(1 << 16);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(1 << 16);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    // Out: whole lines, from rmcp or from the checks.
    tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = out_rx.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let replies = out_tx.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        while matches!(lines.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            if replies.send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut to_rmcp = to_rmcp;
        loop {
            let line = match read_bounded_line(&mut input).await {
                Ok(Some(line)) => line,
                Ok(None) | Err(_) => break,
            };
            let reply = match line {
                Line::TooLong => Some(error(
                    Value::Null,
                    -32600,
                    format!("Invalid Request: the message is over {MAX_LINE} bytes"),
                )),
                Line::Text(text) if text.iter().all(u8::is_ascii_whitespace) => continue,
                Line::Text(text) => match precheck(&text) {
                    Ok(()) => {
                        if to_rmcp.write_all(&text).await.is_err()
                            || to_rmcp.write_all(b"\n").await.is_err()
                        {
                            break;
                        }
                        None
                    }
                    Err(reply) => Some(reply),
                },
            };
            if let Some(reply) = reply {
                let mut bytes = reply.to_string().into_bytes();
                bytes.push(b'\n');
                if out_tx.send(bytes).is_err() {
                    break;
                }
            }
        }
        // End of input: rmcp sees its stdin close and the session ends.
        let _ = to_rmcp.shutdown().await;
    });
    (rmcp_reads, rmcp_writes)
}

enum Line {
    Text(Vec<u8>),
    TooLong,
}

/// The next line without its newline, holding at most [`MAX_LINE`] bytes of it: the rest of
/// a longer line is skipped. `None` at the end of input.
async fn read_bounded_line(
    input: &mut (impl AsyncBufReadExt + Unpin),
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty() || too_long).then_some(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            }));
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() > MAX_LINE {
            too_long = true;
            line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(Some(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rpc_errors_have_their_codes() {
        let e = precheck(b"{bad").expect_err("not json");
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32700), Value::Null)
        );
        let e =
            precheck(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"nome":"x"}}"#)
                .expect_err("no name");
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32602), json!(3))
        );
        assert_eq!(
            precheck(b"5").expect_err("a number")["error"]["code"],
            -32600
        );
        assert!(
            precheck(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#)
                .is_ok()
        );
    }
}
