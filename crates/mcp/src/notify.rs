//! A tool's progress and log messages as MCP notifications to the client that called it:
//! `notifications/progress` with the call's `progressToken` (when it sent one) and
//! `notifications/message` at or above the level it chose. The tool's thread only queues them;
//! one task per call sends them in order, and the call's answer waits for the queue to drain so
//! no notification comes after it.

#![allow(deprecated)] // MCP logging is deprecated by the 2026 revision but still served.

use crate::ask::questions::{self, Askable, Question};
use crate::ask::rounds::Rounds;
use crate::tasks::TaskSlot;
use kiln_core::context::call_events::{Answer, AskError, CallObserver, ClientAsk, LogLevel};
use rmcp::RoleServer;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Notifications queued for one call beyond what is sent (the rest are dropped).
const QUEUE: usize = 64;
/// How long a call's answer waits for its notifications to be sent.
const DRAIN: Duration = Duration::from_secs(5);

enum Note {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// The observer of one MCP tool call.
pub struct McpObserver {
    tx: Mutex<Option<mpsc::Sender<Note>>>,
    token: Option<ProgressToken>,
    level: Option<LogLevel>,
    tool: String,
    /// What the client can be asked, and why not where it cannot.
    askable: Askable,
    /// On a 2026-07-28 request: the answers its retry brought, and the questions to send.
    rounds: Option<Arc<Rounds>>,
    questions: mpsc::Sender<Question>,
    /// Once the call runs as a task, its questions go there.
    pub task: TaskSlot,
}

/// The sending side of one call: its observer, the task that sends, and the tool's questions
/// for the client's model (asked from the call's own task, so they travel with the call).
pub struct CallNotifier {
    pub observer: Arc<McpObserver>,
    task: JoinHandle<()>,
    questions: mpsc::Receiver<Question>,
}

impl CallNotifier {
    /// Starts sending for the call of `tool` that `cx` answers; `session` is the level the
    /// session set.
    pub fn start(
        tool: &str,
        cx: &RequestContext<RoleServer>,
        session: Option<LogLevel>,
        rounds: Option<Arc<Rounds>>,
    ) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (ask, questions) = mpsc::channel(1);
        let observer = Arc::new(McpObserver {
            tx: Mutex::new(Some(tx)),
            token: cx.meta.get_progress_token(),
            level: log_level(cx, session),
            tool: tool.to_string(),
            askable: Askable::of(cx),
            rounds,
            questions: ask,
            task: TaskSlot::default(),
        });
        let task = tokio::spawn(send_all(cx.peer.clone(), rx));
        CallNotifier {
            observer,
            task,
            questions,
        }
    }

    /// Runs `call`, asking the client's model whatever the tool asks meanwhile.
    pub async fn run<T>(
        &mut self,
        cx: &RequestContext<RoleServer>,
        call: impl Future<Output = T>,
    ) -> T {
        tokio::pin!(call);
        loop {
            tokio::select! {
                done = &mut call => return done,
                Some(question) = self.questions.recv() => {
                    let reply = question.answer.clone();
                    let answered = questions::answer(cx, &self.observer.askable, question).await;
                    let _ = reply.try_send(answered);
                }
            }
        }
    }

    /// Stops taking notifications and waits (bounded) until the queued ones are sent.
    pub async fn finish(self) {
        if let Ok(mut tx) = self.observer.tx.lock() {
            tx.take();
        }
        if tokio::time::timeout(DRAIN, self.task).await.is_err() {
            tracing::warn!("a tool's notifications were not all sent before its answer");
        }
    }
}

async fn send_all(peer: Peer<RoleServer>, mut rx: mpsc::Receiver<Note>) {
    while let Some(note) = rx.recv().await {
        let sent = match note {
            Note::Progress(p) => peer.notify_progress(p).await,
            Note::Log(m) => peer.notify_logging_message(m).await,
        };
        if let Err(e) = sent {
            tracing::debug!("a notification to the MCP client was not sent: {e}");
            return;
        }
    }
}

/// The least severe level the client wants for this call: the request's own
/// (`io.modelcontextprotocol/logLevel`), else on a 2025 session the one it set with
/// `logging/setLevel`, else `warning`. A 2026 request without one gets none (the spec says so).
fn log_level(cx: &RequestContext<RoleServer>, session: Option<LogLevel>) -> Option<LogLevel> {
    if let Some(level) = cx.meta.log_level() {
        return Some(from_mcp(level));
    }
    let stateless = cx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    (!stateless).then(|| session.unwrap_or(LogLevel::Warning))
}

/// MCP's level as kiln's.
pub fn from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

impl McpObserver {
    fn queue(&self, note: Note) {
        let Ok(tx) = self.tx.lock() else { return };
        if let Some(tx) = tx.as_ref()
            && tx.try_send(note).is_err()
        {
            tracing::debug!("the MCP client is slow: a tool's notification was dropped");
        }
    }
}

impl CallObserver for McpObserver {
    fn ask(
        &self,
        asks: &[(String, ClientAsk)],
        lenient: bool,
        timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        if let Some(task) = self.task.link() {
            return task.ask(asks, lenient, timeout);
        }
        if let Some(rounds) = &self.rounds {
            return rounds.answer(asks, lenient);
        }
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        // One question at a time (the tool waits for each answer), so a full queue means an
        // earlier question outlived its wait.
        let question = Question {
            asks: asks.to_vec(),
            wait: timeout,
            answer,
        };
        self.questions.try_send(question).map_err(|_| {
            AskError::Refused("the client is still answering an earlier question".into())
        })?;
        // The asking side has its own timeouts; this one only guards against a lost answer.
        let whole = timeout * asks.len().max(1) as u32 + Duration::from_secs(1);
        answered.recv_timeout(whole).map_err(|_| {
            AskError::Refused(format!(
                "the client did not answer within {} s",
                whole.as_secs()
            ))
        })?
    }

    fn background(&self) -> bool {
        self.task.background()
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.token else { return };
        let mut p = ProgressNotificationParam::new(token.clone(), progress);
        p.total = total;
        p.message = message;
        self.queue(Note::Progress(p));
    }

    fn log(&self, level: LogLevel, message: String) {
        if self.level.is_some_and(|min| level >= min) {
            let m = LoggingMessageNotificationParam::new(to_mcp(level), message.into())
                .with_logger(self.tool.clone());
            self.queue(Note::Log(m));
        }
    }

    /// An event goes out as a log message at `info`, its data `{"event": NAME, "value": ...}`
    /// from logger `TOOL` (MCP has no custom notification a client is bound to read).
    fn emit(&self, name: &str, value: serde_json::Value) {
        if self.level.is_some_and(|min| LogLevel::Info >= min) {
            let data = serde_json::json!({"event": name, "value": value});
            let m = LoggingMessageNotificationParam::new(to_mcp(LogLevel::Info), data)
                .with_logger(self.tool.clone());
            self.queue(Note::Log(m));
        }
    }
}
