//! The program worker: a process that holds a Rhai engine and nothing else. It puts up its
//! walls (`confine`), says it is ready, reads one program, runs it (each tool call a message
//! to the host, answered on its stdin), says how it ended, and exits. It reaches no host
//! function, file, socket, secret or database: what it can do is what the host answers.

use super::confine::{self, WorkerLimits};
use super::eval::{self, CallTool, ProgramSpec};
use super::wire::{self, FromWorker, MAX_LINE_BYTES, ToWorker};
use kiln_core::context::call_events::{CallEvents, CallObserver, LogLevel, ToolNote};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufReader, Stdout, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The first argument that makes the `kiln` binary a program worker.
pub const WORKER_ARG: &str = "__program-worker";

type Waiting = Arc<Mutex<HashMap<u64, mpsc::Sender<Result<Value, String>>>>>;

/// Runs a worker on this process's stdin and stdout, with the limits in `args` (what
/// follows [`WORKER_ARG`]); returns the exit code. A host that goes away (its end of stdin
/// closes) ends the worker at once.
pub fn serve(args: &[String]) -> i32 {
    let limits = WorkerLimits::from_args(args);
    let protections = confine::apply(&limits);
    let out = Arc::new(Mutex::new(std::io::stdout()));
    if say(&out, &FromWorker::Ready(protections)).is_err() {
        return 1;
    }
    let mut input = BufReader::new(std::io::stdin());
    let Ok(ToWorker::Run {
        code,
        tools,
        max_parallel,
        deadline_ms,
    }) = wire::receive::<ToWorker>(&mut input, MAX_LINE_BYTES)
    else {
        // The host closed the pool, or said something else first: nothing to run.
        return 0;
    };
    let waiting: Waiting = Arc::default();
    let replies = waiting.clone();
    std::thread::spawn(move || {
        while let Ok(ToWorker::Reply { id, result }) =
            wire::receive::<ToWorker>(&mut input, MAX_LINE_BYTES)
        {
            let to = replies.lock().ok().and_then(|mut w| w.remove(&id));
            if let Some(to) = to {
                let _ = to.send(result);
            }
        }
        // The host is gone: no call will be answered and no value read.
        std::process::exit(0);
    });
    let spec = ProgramSpec {
        code,
        tools,
        max_parallel,
        deadline: Instant::now() + Duration::from_millis(deadline_ms),
    };
    // Bounded here, so a tight loop sends the host a few lines, not one per call.
    let notes = Arc::new(CallEvents::new(Arc::new(NotesToHost(out.clone()))));
    let calls = calls_to_host(out.clone(), waiting);
    let ended = eval::evaluate(&spec, calls, Some(notes.clone()), None);
    // What waited past the rate goes before the program's end.
    notes.flush();
    let ended = match ended {
        Ok(done) => FromWorker::Done {
            value: done.value,
            printed: done.printed,
        },
        Err(failure) => FromWorker::Failed(failure),
    };
    // Exit without unwinding what the program built: the process ends, and with it all.
    let code = if say(&out, &ended).is_ok() { 0 } else { 1 };
    std::process::exit(code)
}

/// Each call a message to the host, its answer waited for on the reply thread.
fn calls_to_host(out: Arc<Mutex<Stdout>>, waiting: Waiting) -> CallTool {
    let next = Arc::new(AtomicU64::new(1));
    Arc::new(move |tool: &str, args: Value| {
        let id = next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        waiting
            .lock()
            .map_err(|_| "the program's calls are stuck".to_string())?
            .insert(id, tx);
        let call = FromWorker::Call {
            id,
            tool: tool.to_string(),
            args,
        };
        say(&out, &call).map_err(|e| format!("{tool}(): the host did not hear the call: {e}"))?;
        rx.recv()
            .map_err(|_| format!("{tool}(): the host went away"))?
    })
}

/// A program's progress and events, each a line to the host (no answer awaited).
struct NotesToHost(Arc<Mutex<Stdout>>);

impl CallObserver for NotesToHost {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        let note = ToolNote::Progress {
            done,
            total,
            message,
        };
        let _ = say(&self.0, &FromWorker::Note(note));
    }
    fn log(&self, _level: LogLevel, _message: String) {}
    fn emit(&self, name: &str, value: Value) {
        let note = ToolNote::Emit {
            name: name.to_string(),
            value,
        };
        let _ = say(&self.0, &FromWorker::Note(note));
    }
}

fn say(out: &Mutex<Stdout>, message: &FromWorker) -> std::io::Result<()> {
    let mut out = out
        .lock()
        .map_err(|_| std::io::Error::other("stdout poisoned"))?;
    wire::send(&mut *out, message)?;
    out.flush()
}
