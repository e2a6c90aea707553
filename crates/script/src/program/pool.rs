//! The host's side of program workers: a bounded pool of worker processes kept warm, one
//! program per worker (a worker never runs a second program, so nothing of one program or
//! actor reaches another), and the loop that answers a program's calls and stops its worker
//! at the deadline, on cancellation, or when it breaks a wall.

use super::confine::WorkerLimits;
use super::eval::{
    CallTool, Evaluated, MAX_BRANCH_THREADS, MAX_PRINTS, Notes, ProgramSpec, truncate,
};
use super::wire::{self, FromWorker, MAX_LINE_BYTES, Protections, ReadError, ToWorker};
use kiln_core::tool::{FailureKind, ToolFailure};
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// How long a program's worker may go on past its deadline before it is killed (its own
/// watch stops the interpreter at the deadline and reports; this is for one that cannot).
const GRACE: Duration = Duration::from_millis(500);
/// How often the host looks at a program's cancellation and deadline while it waits.
const TICK: Duration = Duration::from_millis(20);
/// How long a new worker has to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a worker's stderr kept to say why it ended.
const STDERR_TAIL: usize = 4096;

/// How the pool starts workers and bounds them.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// The program to start (the `kiln` binary).
    pub command: PathBuf,
    /// Its arguments before the limits (`__program-worker`).
    pub args: Vec<String>,
    /// Programs running at once; more wait for a slot within their deadline.
    pub max_programs: usize,
    /// Each worker's limits.
    pub limits: WorkerLimits,
}

/// A pool of program workers.
pub struct ProgramPool {
    settings: PoolSettings,
    running: Mutex<usize>,
    freed: Condvar,
    warm: Mutex<Vec<Worker>>,
}

static POOL: OnceLock<Arc<ProgramPool>> = OnceLock::new();

/// Makes every code-mode program of this process run in workers of `settings` (once; later
/// calls return the pool installed first).
pub fn install(settings: PoolSettings) -> Arc<ProgramPool> {
    POOL.get_or_init(|| {
        Arc::new(ProgramPool {
            settings,
            running: Mutex::new(0),
            freed: Condvar::new(),
            warm: Mutex::new(Vec::new()),
        })
    })
    .clone()
}

/// The pool programs run in, if one was installed.
pub fn installed() -> Option<Arc<ProgramPool>> {
    POOL.get().cloned()
}

/// A program slot, given back when dropped.
struct Slot<'a>(&'a ProgramPool);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.running.lock() {
            *n = n.saturating_sub(1);
        }
        self.0.freed.notify_one();
    }
}

impl ProgramPool {
    /// The pool's settings.
    pub fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    /// Starts a worker now (a server's first program then waits for none) and says what
    /// the workers here enforce.
    pub fn warm_up(&self) -> Result<Protections, ToolFailure> {
        let worker = Worker::start(&self.settings)?;
        let protections = worker.protections.clone();
        if let Ok(mut warm) = self.warm.lock() {
            warm.push(worker);
        }
        Ok(protections)
    }

    /// Runs `spec` in a worker; each of its calls goes to `call` here, in the host.
    pub fn run(
        self: &Arc<Self>,
        spec: &ProgramSpec,
        cancel: Option<Arc<AtomicBool>>,
        call: CallTool,
        notes: Notes,
    ) -> Result<Evaluated, ToolFailure> {
        let _slot = self.slot(spec.deadline, cancel.as_deref())?;
        let worker = match self.take_warm() {
            Some(w) => w,
            None => Worker::start(&self.settings)?,
        };
        self.refill();
        worker.run(spec, cancel.as_deref(), call, notes)
    }

    /// Waits for a free slot until the deadline (or cancellation).
    fn slot(
        &self,
        deadline: Instant,
        cancel: Option<&AtomicBool>,
    ) -> Result<Slot<'_>, ToolFailure> {
        let max = self.settings.max_programs.max(1);
        let mut running = self
            .running
            .lock()
            .map_err(|_| unavailable("the pool is poisoned"))?;
        while *running >= max {
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(cancelled());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ToolFailure::visible(
                    FailureKind::Deadline,
                    format!(
                        "the program waited its whole deadline for one of the {max} program slots (--max-programs)"
                    ),
                ));
            }
            let wait = (deadline - now).min(TICK * 5);
            running = self
                .freed
                .wait_timeout(running, wait)
                .map_err(|_| unavailable("the pool is poisoned"))?
                .0;
        }
        *running += 1;
        Ok(Slot(self))
    }

    /// A warm worker still alive (one may have been killed while it waited).
    fn take_warm(&self) -> Option<Worker> {
        let mut warm = self.warm.lock().ok()?;
        while let Some(mut w) = warm.pop() {
            if matches!(w.child.try_wait(), Ok(None)) {
                return Some(w);
            }
        }
        None
    }

    /// Starts workers in the background until as many are warm as programs may run.
    fn refill(self: &Arc<Self>) {
        let pool = self.clone();
        std::thread::spawn(move || {
            let want = pool.settings.max_programs.max(1);
            while pool.warm.lock().map(|w| w.len() < want).unwrap_or(false) {
                match Worker::start(&pool.settings) {
                    Ok(w) => {
                        if let Ok(mut warm) = pool.warm.lock() {
                            warm.push(w);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e.message, "a program worker did not start");
                        return;
                    }
                }
            }
        });
    }
}

/// One worker process, ready for a program.
struct Worker {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    lines: mpsc::Receiver<Result<FromWorker, ReadError>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    protections: Protections,
    limits: WorkerLimits,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    /// Starts a worker with an empty environment (no keys, no tokens) in `/`, and waits
    /// for it to say it is ready.
    fn start(settings: &PoolSettings) -> Result<Worker, ToolFailure> {
        let mut child = Command::new(&settings.command)
            .args(&settings.args)
            .args(settings.limits.to_args())
            .env_clear()
            // mimalloc reserves a 1 GiB arena up front, past a worker's address-space cap:
            // it then maps memory as needed instead.
            .env("MIMALLOC_ARENA_RESERVE", "0")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| unavailable(&format!("{}: {e}", settings.command.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(unavailable("its pipes did not open"));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let line = wire::receive::<FromWorker>(&mut stdout, MAX_LINE_BYTES);
                let last = line.is_err();
                if tx.send(line).is_err() || last {
                    return;
                }
            }
        });
        let tail = Arc::new(Mutex::new(Vec::new()));
        let kept = tail.clone();
        std::thread::spawn(move || drain_tail(stderr, &kept));
        let mut worker = Worker {
            child,
            stdin: Arc::new(Mutex::new(stdin)),
            lines,
            stderr: tail,
            protections: Protections::default(),
            limits: settings.limits,
        };
        match worker.lines.recv_timeout(START_TIMEOUT) {
            Ok(Ok(FromWorker::Ready(p))) => {
                worker.protections = p;
                Ok(worker)
            }
            _ => Err(unavailable(&format!(
                "{} did not start as a program worker{}",
                settings.command.display(),
                worker.stderr_said()
            ))),
        }
    }

    /// Runs one program to its end, answering its calls; the worker is spent after it.
    fn run(
        mut self,
        spec: &ProgramSpec,
        cancel: Option<&AtomicBool>,
        call: CallTool,
        notes: Notes,
    ) -> Result<Evaluated, ToolFailure> {
        let left = spec.deadline.saturating_duration_since(Instant::now());
        let start = ToWorker::Run {
            code: spec.code.clone(),
            tools: spec.tools.clone(),
            max_parallel: spec.max_parallel,
            deadline_ms: left.as_millis().try_into().unwrap_or(u64::MAX),
        };
        self.tell(&start)
            .map_err(|e| unavailable(&format!("the worker did not take the program: {e}")))?;
        let in_flight = Arc::new(AtomicUsize::new(0));
        loop {
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(cancelled());
            }
            if Instant::now() >= spec.deadline + GRACE {
                return Err(ToolFailure::visible(
                    FailureKind::Deadline,
                    format!(
                        "the program ran past its deadline ({} ms) and its worker was stopped",
                        left.as_millis()
                    ),
                ));
            }
            let message = match self.lines.recv_timeout(TICK) {
                Ok(m) => m,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(ReadError::Closed),
            };
            match message {
                Ok(FromWorker::Call { id, tool, args }) => {
                    self.answer(id, tool, args, &in_flight, &call);
                }
                Ok(FromWorker::Note(note)) => {
                    // Bounded again here: a worker is code kiln does not trust.
                    kiln_core::context::call_events::note(notes.as_deref(), note);
                }
                Ok(FromWorker::Done { value, printed }) => {
                    let printed = printed
                        .iter()
                        .take(MAX_PRINTS)
                        .map(|l| truncate(l))
                        .collect();
                    return Ok(Evaluated { value, printed });
                }
                Ok(FromWorker::Failed(failure)) => return Err(failure),
                Ok(FromWorker::Ready(_)) => return Err(self.broke("said it was ready twice")),
                Err(ReadError::TooLong(n)) => {
                    return Err(ToolFailure::visible(
                        FailureKind::Limit,
                        format!("the program sent a value or arguments over {} MiB", n >> 20),
                    ));
                }
                Err(ReadError::NotAMessage(e)) => return Err(self.broke(&e.to_string())),
                Err(ReadError::Closed | ReadError::Io(_)) => return Err(self.ended()),
            }
        }
    }

    /// Runs one call on a thread of its own (a program's parallel calls run at once) and
    /// sends the answer back.
    fn answer(
        &self,
        id: u64,
        tool: String,
        args: serde_json::Value,
        in_flight: &Arc<AtomicUsize>,
        call: &CallTool,
    ) {
        if in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_BRANCH_THREADS {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            let refused = Err(format!(
                "{tool}(): more than {MAX_BRANCH_THREADS} calls at once"
            ));
            let _ = self.tell(&ToWorker::Reply {
                id,
                result: refused,
            });
            return;
        }
        let (stdin, in_flight, call) = (self.stdin.clone(), in_flight.clone(), call.clone());
        std::thread::spawn(move || {
            let result = call(&tool, args);
            in_flight.fetch_sub(1, Ordering::SeqCst);
            // A worker already stopped hears nothing; the call's own record stands.
            if let Ok(mut stdin) = stdin.lock() {
                let _ = wire::send(&mut *stdin, &ToWorker::Reply { id, result });
            }
        });
    }

    fn tell(&self, message: &ToWorker) -> std::io::Result<()> {
        let mut stdin = self
            .stdin
            .lock()
            .map_err(|_| std::io::Error::other("the worker's stdin is poisoned"))?;
        wire::send(&mut *stdin, message)
    }

    /// The worker said something no worker says: it is stopped.
    fn broke(&mut self, what: &str) -> ToolFailure {
        let _ = self.child.kill();
        ToolFailure::sanitized(FailureKind::Runtime, format!("program worker: {what}"))
    }

    /// The worker ended without saying how the program did: why, from its exit and stderr.
    fn ended(&mut self) -> ToolFailure {
        let status = wait_briefly(&mut self.child);
        let said = self.stderr_text();
        let mib = self.limits.memory >> 20;
        let message = if said.contains("overflowed its stack") {
            "the program overflowed its stack (a value nested or referring to itself too deep, or recursion); its worker was stopped".to_string()
        } else if said.contains("memory allocation") || said.contains("out of memory") {
            format!(
                "the program needed more than its memory cap of {mib} MiB; its worker was stopped"
            )
        } else {
            match status.and_then(|s| describe_signal(&s)) {
                Some(signal) => format!("the program's worker ended ({signal})"),
                None => format!(
                    "the program's worker ended without its value ({})",
                    status
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "still running".into())
                ),
            }
        };
        ToolFailure::visible(FailureKind::Limit, message)
    }

    fn stderr_text(&self) -> String {
        // The drain thread may still be reading the last bytes.
        std::thread::sleep(Duration::from_millis(20));
        self.stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default()
    }

    fn stderr_said(&self) -> String {
        let said = self.stderr_text();
        let said = said.trim();
        if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        }
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes the worker writes to stderr.
fn drain_tail(mut stderr: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            return;
        }
        if let Ok(mut t) = tail.lock() {
            t.extend_from_slice(&buf[..n]);
            let over = t.len().saturating_sub(STDERR_TAIL);
            t.drain(..over);
        }
    }
}

/// The exit status of a worker that closed its pipes, waiting at most a moment.
fn wait_briefly(child: &mut Child) -> Option<ExitStatus> {
    let until = Instant::now() + Duration::from_millis(500);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

#[cfg(unix)]
fn describe_signal(status: &ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal()?;
    Some(match signal {
        libc::SIGXCPU => "it used all of its CPU time".into(),
        libc::SIGKILL => "it was killed".into(),
        libc::SIGSEGV => "a memory fault".into(),
        libc::SIGABRT => "it aborted".into(),
        libc::SIGSYS => "a system call its filter refuses".into(),
        n => format!("signal {n}"),
    })
}

#[cfg(not(unix))]
fn describe_signal(_status: &ExitStatus) -> Option<String> {
    None
}

fn cancelled() -> ToolFailure {
    ToolFailure::visible(FailureKind::Cancelled, "the program was cancelled")
}

fn unavailable(why: &str) -> ToolFailure {
    ToolFailure::sanitized(
        FailureKind::Runtime,
        format!("a program worker could not start: {why}"),
    )
}
