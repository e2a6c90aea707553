//! What the host and a program worker say to each other: one JSON object a line, on the
//! worker's stdin (host to worker) and stdout (worker to host). Every line the host reads is
//! bounded in size: the worker runs code kiln does not trust.

use kiln_core::tool::ToolFailure;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{self, BufRead, Read, Write};

/// Most bytes of one line the host reads from a worker (a program's value, a call's
/// arguments); a longer line ends the program with a `limit` error.
pub const MAX_LINE_BYTES: u64 = 32 * 1024 * 1024;

/// What the worker says it can enforce, once, when it is ready for a program.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protections {
    /// Address space, CPU time and open files are limited (setrlimit).
    pub rlimits: bool,
    /// The seccomp filter is on: no open, connect, execve or fork.
    pub seccomp: bool,
}

impl Protections {
    /// The protections in words, for the line a server prints at startup.
    pub fn describe(&self) -> String {
        let mut on = Vec::new();
        let mut off = Vec::new();
        let mut put = |active: bool, what: &'static str| {
            if active {
                on.push(what)
            } else {
                off.push(what)
            }
        };
        put(self.rlimits, "memory, CPU and file limits");
        put(self.seccomp, "seccomp (no open, connect, exec or fork)");
        let mut text = format!(
            "on: {}",
            if on.is_empty() {
                "none".into()
            } else {
                on.join(", ")
            }
        );
        if !off.is_empty() {
            text.push_str(&format!("; unavailable here: {}", off.join(", ")));
        }
        text
    }
}

/// Host to worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// The program to run (the first line a ready worker reads).
    Run {
        /// Its source.
        code: String,
        /// The tools it may call.
        tools: Vec<String>,
        /// `parallel` closures at once.
        max_parallel: usize,
        /// Milliseconds until its deadline, from when the worker reads this.
        deadline_ms: u64,
    },
    /// The answer to a call.
    Reply {
        /// The call's number.
        id: u64,
        /// The tool's value, or the error the program sees.
        result: Result<Value, String>,
    },
}

/// Worker to host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// Ready for a program, with what it enforces.
    Ready(Protections),
    /// The program calls a tool.
    Call {
        /// The call's number, unique in the program.
        id: u64,
        /// The tool's name.
        tool: String,
        /// Its arguments.
        args: Value,
    },
    /// The program reported progress or emitted an event (no answer).
    Note(kiln_core::context::call_events::ToolNote),
    /// The program ended with a value.
    Done {
        /// Its value.
        value: Value,
        /// The lines it printed.
        printed: Vec<String>,
    },
    /// The program failed (its own error, or a limit the interpreter caught).
    Failed(ToolFailure),
}

/// Writes one message as a line and flushes it.
pub fn send<T: Serialize>(out: &mut impl Write, message: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The other side closed the pipe.
    #[error("the pipe closed")]
    Closed,
    /// The line was longer than the bound.
    #[error("a message longer than {0} bytes")]
    TooLong(u64),
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The line was not the JSON expected.
    #[error("a message that is not kiln's: {0}")]
    NotAMessage(#[from] serde_json::Error),
}

/// Reads one message of at most `limit` bytes.
pub fn receive<T: for<'de> Deserialize<'de>>(
    input: &mut impl BufRead,
    limit: u64,
) -> Result<T, ReadError> {
    let mut line = Vec::new();
    let read = input
        .by_ref()
        .take(limit + 1)
        .read_until(b'\n', &mut line)?;
    if read == 0 {
        return Err(ReadError::Closed);
    }
    if line.last() != Some(&b'\n') {
        return Err(if read as u64 > limit {
            ReadError::TooLong(limit)
        } else {
            ReadError::Closed
        });
    }
    Ok(serde_json::from_slice(&line)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_goes_through_a_line_and_back() {
        let mut buf = Vec::new();
        let call = FromWorker::Call {
            id: 7,
            tool: "add".into(),
            args: json!({"a": 1}),
        };
        send(&mut buf, &call).unwrap();
        assert_eq!(buf.iter().filter(|b| **b == b'\n').count(), 1);
        let back: FromWorker = receive(&mut buf.as_slice(), MAX_LINE_BYTES).unwrap();
        assert!(matches!(back, FromWorker::Call { id: 7, ref tool, .. } if tool == "add"));
    }

    #[test]
    fn a_line_past_the_bound_is_refused_and_an_empty_pipe_is_closed() {
        let long = format!("\"{}\"\n", "x".repeat(100));
        let r: Result<Value, _> = receive(&mut long.as_bytes(), 50);
        assert!(matches!(r, Err(ReadError::TooLong(50))), "{r:?}");
        let r: Result<Value, _> = receive(&mut &b""[..], 50);
        assert!(matches!(r, Err(ReadError::Closed)));
        let r: Result<Value, _> = receive(&mut &b"{\"half"[..], 50);
        assert!(matches!(r, Err(ReadError::Closed)));
        let r: Result<FromWorker, _> = receive(&mut &b"[1]\n"[..], 50);
        assert!(matches!(r, Err(ReadError::NotAMessage(_))));
    }
}
