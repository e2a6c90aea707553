//! What a running tool tells its caller before it returns: progress (`progress(done, total)`),
//! named events (`emit(name, value)`) and log messages (`log(level, msg)`). The door that
//! started the call may observe them (MCP sends them to its client, `kiln serve` to the run's
//! streams); kiln bounds what reaches an observer, so a script cannot flood a client: messages
//! are cut to [`MAX_MESSAGE_CHARS`], an event's value may hold [`MAX_EMIT_BYTES`] of JSON, at
//! most [`BURST`] pass at once and [`PER_SECOND`] a second after that, and progress that does
//! not increase is dropped (MCP requires it to increase). Progress and events past the rate
//! are coalesced, not lost: the latest of each name waits and is passed on with the next one
//! admitted, or when the call ends. Nothing here blocks the tool.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest message passed to an observer (longer ones are cut, with a note).
pub const MAX_MESSAGE_CHARS: usize = 2000;
/// Notifications a call may send at once.
pub const BURST: f64 = 32.0;
/// Notifications a call may send a second, beyond the burst.
pub const PER_SECOND: f64 = 16.0;

/// Most bytes of JSON one `emit(name, value)` may carry.
pub const MAX_EMIT_BYTES: usize = 16 * 1024;
/// Longest name of an emitted event.
pub const MAX_EMIT_NAME: usize = 64;
/// Names whose latest value may wait at once while a call sends too fast (the rest drop).
const MAX_PENDING_NAMES: usize = 16;

/// What a running tool told its caller: progress or a named event. Doors show it live; the run
/// log keeps it with the call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolNote {
    /// `progress(done, total, message)`.
    Progress {
        /// How much is done.
        done: f64,
        /// Out of how much, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What is happening now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// `emit(name, value)`.
    Emit {
        /// The event's name.
        name: String,
        /// Its value.
        value: serde_json::Value,
    },
}

/// Questions a call may put to its caller's model (`sample(...)`).
pub const MAX_SAMPLES: u32 = 8;

/// A question a tool puts to its caller's model (`sample(prompt, #{ system, max_tokens })`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleRequest {
    /// The user message.
    pub prompt: String,
    /// A system prompt the tool asks for (the client may ignore it).
    pub system: Option<String>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
}

impl SampleRequest {
    /// A question with no system prompt, answered in at most `max_tokens`.
    pub fn new(prompt: impl Into<String>, max_tokens: u32) -> Self {
        SampleRequest {
            prompt: prompt.into(),
            system: None,
            max_tokens,
        }
    }
}

/// A form a tool asks the person behind the caller to fill (MCP elicitation).
#[derive(Debug, Clone)]
pub struct FormRequest {
    /// What the form is for, shown to the person.
    pub message: String,
    /// The fields, as the restricted JSON Schema MCP forms use (an object of primitive
    /// properties, with defaults and enums).
    pub schema: serde_json::Value,
}

/// What a tool may ask its caller for while it runs.
#[derive(Debug, Clone)]
pub enum ClientAsk {
    /// A form for the person behind the caller (MCP elicitation).
    Form(FormRequest),
    /// A question for the caller's model (MCP sampling).
    Sample(SampleRequest),
    /// The caller's roots (MCP `roots/list`).
    Roots,
}

impl ClientAsk {
    /// The MCP client capability it needs.
    pub fn capability(&self) -> &'static str {
        match self {
            ClientAsk::Form(_) => "elicitation",
            ClientAsk::Sample(_) => "sampling",
            ClientAsk::Roots => "roots",
        }
    }
}

/// One answer: as JSON (a form's `{"action", "content"}`, the model's text, the list of roots),
/// or why this caller cannot answer this kind of question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The answer.
    Value(serde_json::Value),
    /// The caller does not offer this kind (a client without sampling, say).
    Unsupported(String),
}

/// Why a tool's questions got no answers.
#[derive(Debug, Clone, PartialEq)]
pub enum AskError {
    /// Nobody could be asked, or the asking failed.
    Refused(String),
    /// The caller answers in a retried request (an MCP 2026-07-28 input-required result):
    /// the call stops here and runs again with the answers.
    InputRequired,
    /// The caller did not declare the capability a question it must answer needs (such as
    /// `sampling`): the call stops and the door answers with an error naming it.
    MissingCapability(&'static str),
}

/// How severe a log message is (syslog's levels, as MCP names them), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level named `name` (MCP's names; `warn` is taken for `warning`).
    pub fn parse(name: &str) -> Option<LogLevel> {
        if name == "warn" {
            return Some(LogLevel::Warning);
        }
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// MCP's name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// Receives a running call's progress and log messages: implemented by the door that started
/// the call and given in `CallOptions::observer`. Called on the tool's thread, so it
/// must not block (queue the message and return).
pub trait CallObserver: Send + Sync {
    /// `progress` of `total` (when known) done, with what is happening now.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
    /// A log message of the tool.
    fn log(&self, level: LogLevel, message: String);
    /// A named event of the tool (`emit(name, value)`); by default not passed on.
    fn emit(&self, _name: &str, _value: serde_json::Value) {}
    /// Asks the caller each question (keyed: a retried request answers by key) and waits up to
    /// `timeout` for the answers, in order. With `lenient`, a kind the caller does not offer is
    /// answered [`Answer::Unsupported`]; without, the call cannot go on without it. Blocking (the tool waits). By default the caller
    /// cannot be asked anything.
    fn ask(
        &self,
        _asks: &[(String, ClientAsk)],
        _lenient: bool,
        _timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        Err(AskError::Refused("the caller cannot be asked".into()))
    }
    /// What the caller lends a tool, as ACP names its requests: its files
    /// (`fs/read_text_file`, `fs/write_text_file`: an editor's unsaved buffers) and its
    /// terminal (`terminal/run`). `None` where it lends none (the tool uses the disk, runs
    /// nothing). Blocking; by default no caller lends anything.
    fn lend(&self, _request: &str, _params: Value) -> Option<Result<Value, String>> {
        None
    }
    /// The handler asks to go on in the background (`background()`): a caller that can poll
    /// a task gets one now and the call goes on in it; true when it did. By default no
    /// caller can, and the call simply goes on.
    fn background(&self) -> bool {
        false
    }
}

/// A call's observer behind kiln's bounds (shared by the call's nested `call_tool` calls).
pub struct CallEvents {
    observer: Arc<dyn CallObserver>,
    bounds: Mutex<Bounds>,
}

struct Bounds {
    tokens: f64,
    refilled: Instant,
    last_progress: Option<f64>,
    dropped: u64,
    samples: u32,
    /// Progress past the rate, passed on later (the latest only).
    pending_progress: Option<(f64, Option<f64>, Option<String>)>,
    /// Events past the rate, the latest of each name, in the order the names came.
    pending_emits: Vec<(String, serde_json::Value)>,
}

impl CallEvents {
    /// Events of one call, delivered to `observer` within the bounds.
    pub fn new(observer: Arc<dyn CallObserver>) -> Self {
        CallEvents {
            observer,
            bounds: Mutex::new(Bounds {
                tokens: BURST,
                refilled: Instant::now(),
                last_progress: None,
                dropped: 0,
                samples: 0,
                pending_progress: None,
                pending_emits: Vec::new(),
            }),
        }
    }

    /// Passes progress on, unless it does not increase; past the rate it waits (the latest).
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Ok(mut b) = self.bounds.lock() else {
            return;
        };
        if b.last_progress.is_some_and(|last| done <= last) {
            return;
        }
        b.last_progress = Some(done);
        if !b.take() {
            b.pending_progress = Some((done, total, message.map(cut)));
            return;
        }
        let waiting = b.drain_pending();
        drop(b);
        self.deliver(waiting);
        self.observer.progress(done, total, message.map(cut));
    }

    /// Passes a named event on; past the rate its value waits, replacing an older one of
    /// the same name.
    fn emit(&self, name: &str, value: serde_json::Value) {
        let Ok(mut b) = self.bounds.lock() else {
            return;
        };
        if !b.take() {
            let pending = &mut b.pending_emits;
            match pending.iter().position(|(n, _)| n == name) {
                Some(at) => pending[at].1 = value,
                None if pending.len() < MAX_PENDING_NAMES => {
                    pending.push((name.to_string(), value))
                }
                None => {}
            }
            return;
        }
        let waiting = b.drain_pending();
        drop(b);
        self.deliver(waiting);
        self.observer.emit(name, value);
    }

    /// Passes on what waited (called outside the lock).
    fn deliver(&self, waiting: Pending) {
        let (progress, emits) = waiting;
        if let Some((done, total, message)) = progress {
            self.observer.progress(done, total, message);
        }
        for (name, value) in emits {
            self.observer.emit(&name, value);
        }
    }

    /// Passes on what waited past the rate: the call is over (or wants it seen now).
    pub fn flush(&self) {
        let waiting = match self.bounds.lock() {
            Ok(mut b) => b.drain_pending(),
            Err(_) => return,
        };
        self.deliver(waiting);
    }

    /// Asks the caller, at most [`MAX_SAMPLES`] questions a call; a question without a key
    /// gets `kiln_N`, N counting the call's questions (the same on a retried request, which
    /// runs the handler again from the top).
    pub fn ask(
        &self,
        asks: Vec<(Option<String>, ClientAsk)>,
        lenient: bool,
        timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        let first = self.bounds.lock().map(|mut b| {
            let first = b.samples;
            b.samples += asks.len() as u32;
            first
        });
        let Ok(first) = first else {
            return Err(AskError::Refused(
                "the call's bounds are unavailable".into(),
            ));
        };
        if first + asks.len() as u32 > MAX_SAMPLES {
            return Err(AskError::Refused(format!(
                "a call may ask its caller at most {MAX_SAMPLES} questions"
            )));
        }
        let keyed: Vec<(String, ClientAsk)> = asks
            .into_iter()
            .enumerate()
            .map(|(i, (key, ask))| {
                let key = key.unwrap_or_else(|| format!("kiln_{}", first + i as u32 + 1));
                (key, ask)
            })
            .collect();
        self.observer.ask(&keyed, lenient, timeout)
    }

    /// What the caller lends the tool (see [`CallObserver::lend`]).
    pub fn lend(&self, request: &str, params: Value) -> Option<Result<Value, String>> {
        self.observer.lend(request, params)
    }

    /// Asks the caller to take the rest of the call as a task; true when it did.
    pub fn background(&self) -> bool {
        self.observer.background()
    }

    fn log(&self, level: LogLevel, message: &str) {
        let admitted = self.bounds.lock().is_ok_and(|mut b| {
            let admitted = b.take();
            if !admitted {
                b.dropped_log();
            }
            admitted
        });
        if admitted {
            self.observer.log(level, cut(message));
        }
    }
}

impl Drop for CallEvents {
    fn drop(&mut self) {
        // The call is over: the latest of what waited is not lost.
        self.flush();
    }
}

/// Progress and events that waited past the rate.
type Pending = (
    Option<(f64, Option<f64>, Option<String>)>,
    Vec<(String, serde_json::Value)>,
);

impl Bounds {
    fn drain_pending(&mut self) -> Pending {
        (
            self.pending_progress.take(),
            std::mem::take(&mut self.pending_emits),
        )
    }

    /// Takes one notification's token: a bucket of [`BURST`] refilled at [`PER_SECOND`].
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.refilled).as_secs_f64() * PER_SECOND;
        self.tokens = (self.tokens + refill).min(BURST);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return true;
        }
        false
    }

    /// Counts a log message dropped past the rate, saying so now and then.
    fn dropped_log(&mut self) {
        self.dropped += 1;
        if self.dropped.is_power_of_two() {
            tracing::warn!(
                dropped = self.dropped,
                "a tool logs faster than {PER_SECOND} messages a second: some are not passed on"
            );
        }
    }
}

/// `message` cut to [`MAX_MESSAGE_CHARS`].
fn cut(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message.to_string(),
        Some((at, _)) => format!(
            "{}… ({} more bytes not shown)",
            &message[..at],
            message.len() - at
        ),
    }
}

/// Reports progress of the call `ctx` runs: to its observer (bounded), and to tracing at debug.
/// `Err` says what is wrong with the numbers.
pub fn progress(
    events: Option<&CallEvents>,
    done: f64,
    total: Option<f64>,
    message: Option<&str>,
) -> Result<(), String> {
    if !done.is_finite() || done < 0.0 {
        return Err(format!("progress: done must be a number ≥ 0, not {done}"));
    }
    if let Some(t) = total
        && (!t.is_finite() || t <= 0.0)
    {
        return Err(format!("progress: total must be a number > 0, not {t}"));
    }
    tracing::debug!(target: "kiln::script", done, total, message, "progress");
    if let Some(events) = events {
        events.progress(done, total, message);
    }
    Ok(())
}

/// Sends a tool's named event (`emit(name, value)`) to the call's observer (bounded,
/// coalesced). `Err` says what is wrong with the name or why the value is too big.
pub fn emit(
    events: Option<&CallEvents>,
    name: &str,
    value: serde_json::Value,
) -> Result<(), String> {
    check_emit_name(name)?;
    // Measured even when nobody listens, so a tool fails the same way at every door; a value
    // that is small however it renders is not written out to be measured.
    if !surely_within(&value, MAX_EMIT_BYTES) {
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        if size > MAX_EMIT_BYTES {
            return Err(format!(
                "emit(\"{name}\"): the value is {size} bytes of JSON, over the {MAX_EMIT_BYTES} allowed (send less, or a reference to it)"
            ));
        }
    }
    if let Some(events) = events {
        events.emit(name, value);
    }
    Ok(())
}

/// Whether `value` renders to at most `limit` bytes of JSON however it is written: each string
/// counted as if every character were escaped (`\uXXXX`), each number at its longest. A walk
/// that stops as soon as the budget is spent (false: measure it).
fn surely_within(value: &serde_json::Value, limit: usize) -> bool {
    fn walk(v: &serde_json::Value, budget: &mut usize) -> bool {
        use serde_json::Value;
        let cost = match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 24,
            Value::String(s) => s.len() * 6 + 2,
            Value::Array(items) => 2 + items.len(),
            Value::Object(m) => 2 + m.keys().map(|k| k.len() * 6 + 4).sum::<usize>(),
        };
        if cost > *budget {
            return false;
        }
        *budget -= cost;
        match v {
            Value::Array(items) => items.iter().all(|i| walk(i, budget)),
            Value::Object(m) => m.values().all(|i| walk(i, budget)),
            _ => true,
        }
    }
    let mut budget = limit;
    walk(value, &mut budget)
}

/// An event's name: 1 to [`MAX_EMIT_NAME`] letters, digits, `_`, `-`, `.` or `:` (front ends
/// use it in part and event names, such as the AI SDK's `data-NAME`).
pub fn check_emit_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= MAX_EMIT_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "emit(): the name \"{}\" must be 1 to {MAX_EMIT_NAME} letters, digits, _, -, . or :",
            cut(name).chars().take(80).collect::<String>()
        ))
    }
}

/// Passes on a note that came from elsewhere (a program's worker, a nested run): progress or
/// an event, within this call's bounds. An event whose name is not plain or whose value is
/// too big is dropped (the one who made it was told).
pub fn note(events: Option<&CallEvents>, note: ToolNote) {
    let Some(events) = events else {
        return;
    };
    match note {
        ToolNote::Progress {
            done,
            total,
            message,
        } if done.is_finite() => events.progress(done, total, message.as_deref()),
        ToolNote::Emit { name, value } => {
            let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
            if check_emit_name(&name).is_ok() && size <= MAX_EMIT_BYTES {
                events.emit(&name, value)
            }
        }
        _ => {}
    }
}

/// Logs a tool's message: to tracing (stderr) always, and to the call's observer (bounded).
pub fn log(events: Option<&CallEvents>, level: LogLevel, message: &str) {
    match level {
        LogLevel::Debug => tracing::debug!(target: "kiln::script", "{message}"),
        LogLevel::Info | LogLevel::Notice => tracing::info!(target: "kiln::script", "{message}"),
        LogLevel::Warning => tracing::warn!(target: "kiln::script", "{message}"),
        _ => tracing::error!(target: "kiln::script", "{message}"),
    }
    if let Some(events) = events {
        events.log(level, message);
    }
}
