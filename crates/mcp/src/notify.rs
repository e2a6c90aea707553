//! A tool's progress and log messages as MCP notifications to the client that called it:
//! `notifications/progress` with the call's `progressToken` (when it sent one) and
//! `notifications/message` at or above the level it chose. The tool's thread only queues them;
//! one task per call sends them in order, and the call's answer waits for the queue to drain so
//! no notification comes after it.

#![allow(deprecated)] // MCP logging is deprecated by the 2026 revision but still served.

use kiln_core::call_events::{CallObserver, FormAnswer, FormRequest, LogLevel, SampleRequest};
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, SamplingMessage, ServerRequest,
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

/// A tool's question for the client (its model, or the person behind it), how long it may
/// wait, and where the answer goes.
enum Question {
    Sample(
        SampleRequest,
        Duration,
        std::sync::mpsc::SyncSender<Result<String, String>>,
    ),
    Form(
        FormRequest,
        Duration,
        std::sync::mpsc::SyncSender<Result<FormAnswer, String>>,
    ),
}

/// The observer of one MCP tool call.
pub struct McpObserver {
    tx: Mutex<Option<mpsc::Sender<Note>>>,
    token: Option<ProgressToken>,
    level: Option<LogLevel>,
    tool: String,
    /// Why the client's model cannot be asked, if it cannot.
    no_sampling: Option<String>,
    /// Why the client cannot show a form, if it cannot.
    no_forms: Option<String>,
    questions: mpsc::Sender<Question>,
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
    pub fn start(tool: &str, cx: &RequestContext<RoleServer>, session: Option<LogLevel>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (ask, questions) = mpsc::channel(1);
        let observer = Arc::new(McpObserver {
            tx: Mutex::new(Some(tx)),
            token: cx.meta.get_progress_token(),
            level: log_level(cx, session),
            tool: tool.to_string(),
            no_sampling: no_sampling(cx),
            no_forms: no_forms(cx),
            questions: ask,
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
                Some(question) = self.questions.recv() => match question {
                    Question::Sample(request, wait, answer) => {
                        let _ = answer.try_send(ask_model(cx, request, wait).await);
                    }
                    Question::Form(request, wait, answer) => {
                        let _ = answer.try_send(ask_form(cx, request, wait).await);
                    }
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

/// Why this call's tool cannot ask the client's model, if it cannot.
fn no_sampling(cx: &RequestContext<RoleServer>) -> Option<String> {
    if cx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    {
        return Some(
            "the client speaks the 2026-07-28 revision, where servers send no sampling requests"
                .into(),
        );
    }
    let supported = cx
        .client_capabilities()
        .is_some_and(|c| c.sampling.is_some());
    (!supported).then(|| "the MCP client does not support sampling".to_string())
}

/// Why this call's tool cannot show the client a form, if it cannot.
fn no_forms(cx: &RequestContext<RoleServer>) -> Option<String> {
    if cx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    {
        return Some(
            "the client speaks the 2026-07-28 revision, where a form comes back in a retried request (input_required), which kiln does not offer tools yet"
                .into(),
        );
    }
    let supported = cx
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    (!supported).then(|| "the MCP client does not support elicitation".to_string())
}

/// Shows the client a form (`elicitation/create`); what the person did with it.
async fn ask_form(
    cx: &RequestContext<RoleServer>,
    request: FormRequest,
    wait: Duration,
) -> Result<FormAnswer, String> {
    let requested_schema: ElicitationSchema = serde_json::from_value(request.schema)
        .map_err(|e| format!("the fields are not an MCP form (primitive fields only): {e}"))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: request.message,
        requested_schema,
    };
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, cx.peer.send_request(request)) => asked,
        () = cx.ct.cancelled() => return Err("the call was cancelled".into()),
    };
    let answer = match asked {
        Err(_) => {
            return Err(format!(
                "nobody answered the form within {} s",
                wait.as_secs()
            ));
        }
        Ok(Err(e)) => return Err(format!("the client did not answer: {e}")),
        Ok(Ok(ClientResult::ElicitResult(answer))) => answer,
        Ok(Ok(_)) => return Err("the client's answer was not an elicitation result".into()),
    };
    let action = match answer.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        _ => "cancel",
    };
    Ok(FormAnswer {
        action: action.to_string(),
        content: answer.content,
    })
}

/// Asks the client's model (`sampling/createMessage`); its text answer.
#[allow(deprecated)] // sampling is deprecated by the 2026 revision, still served to 2025 sessions
async fn ask_model(
    cx: &RequestContext<RoleServer>,
    request: SampleRequest,
    wait: Duration,
) -> Result<String, String> {
    let mut params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(request.prompt)],
        request.max_tokens,
    );
    params.system_prompt = request.system;
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, cx.peer.create_message(params)) => asked,
        () = cx.ct.cancelled() => return Err("the call was cancelled".into()),
    };
    let result = match asked {
        Err(_) => {
            return Err(format!(
                "the client's model did not answer within {} s",
                wait.as_secs()
            ));
        }
        Ok(Err(e)) => return Err(format!("the client did not answer: {e}")),
        Ok(Ok(result)) => result,
    };
    let text: Vec<String> = result
        .message
        .content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.clone()))
        .collect();
    if text.is_empty() {
        return Err("the client's model answered without text".into());
    }
    Ok(text.join("\n"))
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
    fn sample(&self, request: &SampleRequest, timeout: Duration) -> Result<String, String> {
        if let Some(why) = &self.no_sampling {
            return Err(why.clone());
        }
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        // One question at a time (the tool waits for each answer), so a full queue means an
        // earlier question outlived its wait.
        self.questions
            .try_send(Question::Sample(request.clone(), timeout, answer))
            .map_err(|_| "the client is still answering an earlier question".to_string())?;
        // The asking side has its own timeout; this one only guards against a lost answer.
        answered
            .recv_timeout(timeout + Duration::from_secs(1))
            .map_err(|_| {
                format!(
                    "the client's model did not answer within {} s",
                    timeout.as_secs()
                )
            })?
    }

    fn elicit(&self, request: &FormRequest, timeout: Duration) -> Result<FormAnswer, String> {
        if let Some(why) = &self.no_forms {
            return Err(why.clone());
        }
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        self.questions
            .try_send(Question::Form(request.clone(), timeout, answer))
            .map_err(|_| "the client is still answering an earlier question".to_string())?;
        answered
            .recv_timeout(timeout + Duration::from_secs(1))
            .map_err(|_| format!("nobody answered the form within {} s", timeout.as_secs()))?
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
}
