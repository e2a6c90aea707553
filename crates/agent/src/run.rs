//! A run in progress (`Run`): its report, its commits to the recorder in order, and its
//! model requests as journaled steps. The loop that drives it is `tool_loop.rs`.

use super::event::{Event, Observer};
use super::journal::{self, StepJournal, StepValue};
use super::record::Pending;
use super::report::RecordError;
use super::report::{RunError, RunErrorKind, RunReport};
use crate::RunHost;
use crate::options::RunOptions;
use kiln_providers::{AnsweredBy, Message, ModelResponse, Prepared, Provider, TextSink};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Default output token limit per model request.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
/// Default cap on one model request's bytes: the run's transcript as its wire renders it
/// (reasoning items a provider asks to have sent back included). A run whose next request
/// would be larger ends with a `limit` error instead of sending it.
pub const DEFAULT_MAX_TRANSCRIPT_BYTES: usize = 16 << 20;
/// Invalid-argument replies a tool tolerates beyond its `.retries(n)` before the run gives up.
pub const INVALID_ARGS_GRACE: u32 = 2;

/// A run in progress: its report so far and who watches it.
pub(super) struct Run {
    pub(super) report: RunReport,
    pub(super) observer: Option<Observer>,
    recorder: Option<Arc<dyn super::Recorder>>,
    /// Messages already handed to the recorder.
    committed: usize,
    /// Tool calls already handed to the recorder.
    committed_calls: usize,
    /// What the recorder has not committed yet (it commits during the next model request).
    pending: Option<Pending>,
    /// The agent the conversation was just handed to (`.handoffs`), for the start to go on with.
    pub(super) handoff: Option<String>,
}

impl Run {
    /// A run of `agent` from `messages` (the first `committed` already recorded).
    pub(super) fn new(
        agent: &str,
        messages: Vec<Message>,
        opts: &RunOptions,
        committed: usize,
    ) -> Self {
        let mut report = RunReport::new(agent, messages);
        report.actor = opts.actor_id.clone();
        report.parent = opts.parent.clone();
        report.eval_id = opts.eval_id.clone();
        Run {
            report,
            observer: opts.observer.clone(),
            recorder: opts.recorder.clone(),
            committed,
            committed_calls: 0,
            pending: None,
            handoff: None,
        }
    }

    /// Tells the recorder the run began (committed during the first model request).
    /// After a failed write (a full disk) the start is committed now instead, so a run that
    /// cannot be logged is refused, saying why, before anything runs.
    pub(super) async fn started(&mut self) -> Result<(), RecordError> {
        self.defer(Pending::Started).await?;
        if self.recorder.as_ref().is_some_and(|r| r.failing()) {
            self.durable().await?;
        }
        Ok(())
    }

    /// Tells the recorder the run ended (after [`Run::durable`]: every step before is
    /// committed).
    pub(super) async fn ended(&self) -> Result<(), RecordError> {
        match &self.recorder {
            Some(r) => r.commit_ended(&self.report).await,
            None => Ok(()),
        }
    }

    pub(super) fn fail(mut self, kind: RunErrorKind) -> RunError {
        self.report.error = Some(kind.to_string());
        RunError {
            kind,
            report: Box::new(self.report),
        }
    }

    /// Hands the messages and tool calls of a finished step to the recorder, which commits
    /// them during the next model request ([`Run::durable`] commits them now).
    pub(super) async fn commit(&mut self, state: &Arc<Mutex<Value>>) -> Result<(), RecordError> {
        if self.recorder.is_some() {
            let state = state.lock().map(|s| s.clone()).unwrap_or(Value::Null);
            self.defer(Pending::Step {
                messages: self.committed..self.report.messages.len(),
                calls: self.committed_calls..self.report.tool_calls.len(),
                state,
            })
            .await?;
        }
        self.committed = self.report.messages.len();
        self.committed_calls = self.report.tool_calls.len();
        Ok(())
    }

    /// Drops the messages `start..end` (a bad answer and its repair, replaced by the next),
    /// committing what is pending first: the run log keeps the transcript the model saw.
    pub(super) async fn forget_from(
        &mut self,
        start: usize,
        end: usize,
    ) -> Result<(), RecordError> {
        self.durable().await?;
        self.report.messages.drain(start..end);
        self.committed = self.committed.min(start);
        Ok(())
    }

    /// Makes `next` the pending commit, committing the one before it first (they land in order).
    async fn defer(&mut self, next: Pending) -> Result<(), RecordError> {
        self.durable().await?;
        if self.recorder.is_some() {
            self.pending = Some(next);
        }
        Ok(())
    }

    /// Commits what the recorder has not committed yet: before the run ends, and before any
    /// tool runs (so no side effect happens on top of a step that is not durable).
    pub(super) async fn durable(&mut self) -> Result<(), RecordError> {
        match (self.pending.take(), &self.recorder) {
            (Some(pending), Some(r)) => pending.commit(r.as_ref(), &self.report).await,
            _ => Ok(()),
        }
    }

    /// Sends one model request (rendered before: the step owns only its bytes) for round
    /// `report.rounds` as one journaled step, stopping on cancel or the deadline; the reply is
    /// announced, recorded and its usage counted.
    pub(super) async fn ask_model(
        &mut self,
        journal: &dyn StepJournal,
        provider: &Arc<Provider>,
        request: Prepared,
        sink: &TextSink,
        opts: &RunOptions,
        deadline: Option<Instant>,
    ) -> Result<ModelResponse, RunErrorKind> {
        let round = self.report.rounds;
        self.emit(|| Event::ModelRequest { round });
        let span = super::spans::chat_span(provider.name(), &self.report.model, round);
        let work = {
            let (provider, sink, cancel) = (provider.clone(), sink.clone(), opts.cancel.clone());
            let span = span.clone();
            Box::pin(
                async move {
                    let asked = Instant::now();
                    let reply = tokio::select! {
                        r = provider.send(request, &sink) => r.map_err(RunErrorKind::from),
                        _ = cancel.cancelled() => Err(RunErrorKind::Cancelled),
                        _ = sleep_until(deadline) => Err(RunErrorKind::Deadline),
                    };
                    let reply = match reply {
                        Ok(reply) => reply,
                        Err(e) => {
                            super::spans::fail(&tracing::Span::current(), &e);
                            return Err(e);
                        }
                    };
                    super::spans::record_reply(&tracing::Span::current(), &reply);
                    let took_ms = asked.elapsed().as_secs_f64() * 1000.0;
                    Ok(StepValue::Typed(Box::new(ModelStep { reply, took_ms })))
                }
                .instrument(span),
            )
        };
        let name = journal::model_step(round);
        // The pending commit runs once the request is out, while the model works; the step
        // ends only when both have. (Out means handed to an idle pooled connection: when the
        // connection is not back in the pool yet, the request waits for the commit, which
        // costs the overlap, never the order.)
        let (pending, recorder, report) = (self.pending.take(), &self.recorder, &self.report);
        let commit = async move {
            match (pending, recorder) {
                (Some(pending), Some(r)) => {
                    // Lets the request's connection task write it first.
                    tokio::task::yield_now().await;
                    pending.commit(r.as_ref(), report).await
                }
                _ => Ok(()),
            }
        };
        let (asked, committed) = tokio::join!(biased; journal.step(name.clone(), work), commit);
        // A step that could not be recorded ends the run: no tool runs after it.
        committed?;
        let ModelStep { reply, took_ms } = journal::decode(&name, asked?.value)?;
        let took = Duration::from_secs_f64(took_ms.max(0.0) / 1000.0);
        self.emit(|| Event::ModelReply { round });
        if self.observer.is_some()
            && let Some(text) = kiln_providers::thought::thought_of(&reply)
        {
            self.emit(|| Event::Thought { round, text });
        }
        // A fallback chain names the member that answered; else the run's own model did.
        let by = reply.answered_by.clone().unwrap_or_else(|| AnsweredBy {
            provider: self.report.provider.clone(),
            model: self.report.model.clone(),
        });
        if let Some(r) = &self.recorder {
            let (usage, stop) = (reply.usage, &reply.stop);
            r.model_reply(&self.report.run_id, round, usage, stop, &by, took);
        }
        self.report.answered_by.push(by);
        self.report.usage += reply.usage;
        Ok(reply)
    }

    /// A model request the loop made besides the round's own (a compaction's summary): its
    /// tokens count in the run's usage and, as a reply of `round`, in the run log.
    pub(super) fn side_request(
        &mut self,
        round: u32,
        usage: kiln_core::model::Usage,
        took: Duration,
        by: Option<AnsweredBy>,
    ) {
        let by = by.unwrap_or_else(|| AnsweredBy {
            provider: self.report.provider.clone(),
            model: self.report.model.clone(),
        });
        if let Some(r) = &self.recorder {
            let stop = kiln_core::model::StopReason::EndTurn;
            r.model_reply(&self.report.run_id, round, usage, &stop, &by, took);
        }
        self.report.usage += usage;
    }

    /// Tells the observer, if any; the event is only built for one.
    pub(super) fn emit(&self, ev: impl FnOnce() -> Event) {
        if let Some(o) = &self.observer {
            o(&ev());
        }
    }
}

/// What a run was set up with (start.rs), shared by the tool-calling loop and the planner.
pub(super) struct Setup<'a> {
    pub host: &'a dyn RunHost,
    pub journal: &'a dyn StepJournal,
    pub provider: Arc<Provider>,
    pub agent: Arc<kiln_registry::agent_spec::AgentSpec>,
    pub model: String,
    pub opts: &'a RunOptions,
    /// When the whole run must be done.
    pub deadline: Option<Instant>,
    /// Tool rounds before `ToolLoop`.
    pub max_rounds: u32,
}

/// Refuses `request` when it is over the run's cap on a transcript's bytes
/// (`--max-transcript-bytes`, default [`DEFAULT_MAX_TRANSCRIPT_BYTES`]).
pub(super) fn check_transcript(request: &Prepared, opts: &RunOptions) -> Result<(), RunErrorKind> {
    let cap = (opts.overrides.max_transcript_bytes).unwrap_or(DEFAULT_MAX_TRANSCRIPT_BYTES);
    let size = request.body_bytes();
    if size <= cap {
        return Ok(());
    }
    Err(RunErrorKind::Limit(format!(
        "the run's transcript is {size} bytes as its next model request, over the cap of {cap} bytes (--max-transcript-bytes)"
    )))
}

/// Sleeps until the deadline, or forever without one.
pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// A model request as its step remembers it: the reply and how long it took.
#[derive(serde::Serialize, serde::Deserialize)]
struct ModelStep {
    reply: ModelResponse,
    took_ms: f64,
}
