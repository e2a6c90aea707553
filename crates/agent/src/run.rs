//! The tool-calling loop: ask the model, run the tools it asks for (validated, guarded,
//! concurrently and in call order), send the results back, until it answers or a limit hits.

use super::event::{Event, Observer};
use super::journal::{self, StepJournal, StepValue};
use super::options::RunOptions;
use super::record::Pending;
use super::report::RecordError;
use super::report::{RunError, RunErrorKind, RunReport, ToolCallRecord};
use super::round::{Executed, RoundContext, execute_round};
use crate::RunHost;
use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, Tool, ToolFailure};
use kiln_providers::{
    Message, ModelRequest, ModelResponse, Prepared, Provider, TextSink, ToolCall, ToolDef,
    ToolResult,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::RwLock;
use tracing::Instrument;

/// Default output token limit per model request.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
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
    pub(super) async fn started(&mut self) -> Result<(), RecordError> {
        self.defer(Pending::Started).await
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
        if let Some(r) = &self.recorder {
            r.model_reply(&self.report.run_id, round, reply.usage, &reply.stop, took);
        }
        self.report.usage += reply.usage;
        Ok(reply)
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

/// The tool-calling loop.
pub(super) async fn drive(
    setup: &Setup<'_>,
    run: &mut Run,
    ctx: &mut CallContext,
) -> Result<(), RunErrorKind> {
    let Setup {
        host,
        journal,
        provider,
        agent,
        opts,
        deadline,
        max_rounds,
        ..
    } = setup;
    let (agent, deadline, max_rounds) = (agent.as_ref(), *deadline, *max_rounds);
    let sink: TextSink = {
        let observer = opts.observer.clone();
        Arc::new(move |t: &str| {
            if let Some(o) = &observer {
                o(&Event::Text(t.to_string()));
            }
        })
    };
    let mut contract = super::contract::RunContract::new(agent, opts.budget.as_ref());
    let mut invalid_counts: HashMap<String, u32> = HashMap::new();
    let exclusive = Arc::new(RwLock::new(()));
    // The transcript only grows: what the last request carried is unchanged in the next.
    let mut sent = 0;
    loop {
        contract.check(&run.report, 0)?;
        let offered = pin_turn(*host, agent, ctx);
        let request = provider.prepare(&model_request(setup, run, &offered, sent));
        sent = run.report.messages.len();
        run.report.rounds += 1;
        let round = run.report.rounds;
        let reply = run
            .ask_model(*journal, provider, request, &sink, opts, deadline)
            .await?;
        run.report.stop_reason = Some(reply.stop.clone());
        run.report.cost_usd = contract.spend(&run.report).cost_usd;
        let calls = reply.tool_calls.clone();
        run.report.messages.push(Message::Assistant {
            content: reply.text.clone(),
            tool_calls: calls.clone(),
        });
        if calls.is_empty() {
            run.report.answer = reply.text;
            let verdict = contract.answered(&mut run.report);
            if let Ok(super::contract::Verdict::Repair { replace, message }) = &verdict {
                if let Some(r) = replace {
                    run.forget_from(r.start, r.end).await?;
                    sent = sent.min(r.start);
                }
                let content = message.clone();
                run.report.messages.push(Message::User { content });
            }
            run.commit(&ctx.run.state).await?;
            match verdict? {
                super::contract::Verdict::Done => return Ok(()),
                super::contract::Verdict::Repair { .. } => continue,
            }
        }
        if round > max_rounds {
            return Err(RunErrorKind::ToolLoop(max_rounds));
        }
        contract.check(&run.report, calls.len() as u64)?;
        // A program's own calls count too: it may make only what the budget has left.
        ctx.run.calls_left = contract.calls_left(&run.report).map(|n| {
            Arc::new(std::sync::atomic::AtomicU64::new(
                n.saturating_sub(calls.len() as u64),
            ))
        });
        // No tool runs on top of a step that is not committed (the model request's step
        // committed the one before; this is for a recorder that had nothing to overlap with).
        run.durable().await?;
        if run.observer.is_some() {
            for call in &calls {
                run.emit(|| Event::ToolStarted {
                    round,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.to_value(),
                });
            }
        }
        let round_ctx = RoundContext {
            journal: *journal,
            round,
            offered: &offered,
            ctx,
            exclusive: &exclusive,
            max_parallel: agent.max_parallel,
        };
        let executed = execute_round(&calls, &round_ctx).await?;
        let mut round_end = RoundEnd {
            offered: &offered,
            invalid_counts: &mut invalid_counts,
            deadline,
            stop: None,
        };
        let results: Vec<ToolResult> = calls
            .iter()
            .zip(executed)
            .map(|(call, executed)| round_end.record(run, round, call, executed))
            .collect();
        let handed = handoff(agent, &calls, &results);
        run.report.messages.push(Message::Tool { results });
        run.commit(&ctx.run.state).await?;
        if let Some(kind) = round_end.stop {
            return Err(kind);
        }
        if let Some(next) = handed {
            // The start goes on as the other agent, with this transcript and state.
            run.handoff = Some(next);
            return Ok(());
        }
        if opts.cancel.is_cancelled() {
            return Err(RunErrorKind::Cancelled);
        }
    }
}

/// The next model request: the transcript so far and the tools offered this turn.
fn model_request<'r>(
    setup: &Setup<'_>,
    run: &'r Run,
    offered: &[Arc<Tool>],
    unchanged_prefix: usize,
) -> ModelRequest<'r> {
    let (agent, opts) = (setup.agent.as_ref(), setup.opts);
    // The request borrows the transcript; only its rendered bytes go into the step.
    ModelRequest {
        model: setup.model.clone(),
        system: opts.overrides.system(agent),
        messages: run.report.messages.as_slice().into(),
        tools: offered
            .iter()
            .map(|t| ToolDef {
                name: t.name.clone(),
                description: t.description.clone(),
                schema: t.schema.clone(),
            })
            .collect(),
        temperature: opts.overrides.temperature.or(agent.temperature),
        max_tokens: opts
            .overrides
            .max_tokens
            .or(agent.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS),
        stream: opts.stream,
        unchanged_prefix,
        output: agent.contract.output.as_ref().map(|o| o.schema.clone()),
    }
}

/// The end of a round: each call recorded, and the first reason the run must stop.
struct RoundEnd<'a> {
    offered: &'a [Arc<Tool>],
    invalid_counts: &'a mut HashMap<String, u32>,
    deadline: Option<Instant>,
    stop: Option<RunErrorKind>,
}

impl RoundEnd<'_> {
    /// Records one executed call in the report and answers it for the model.
    fn record(
        &mut self,
        run: &mut Run,
        round: u32,
        call: &ToolCall,
        executed: Executed,
    ) -> ToolResult {
        let Executed {
            outcome,
            version,
            nested,
            ..
        } = executed;
        let record = ToolCallRecord::new(
            round,
            &call.id,
            &call.name,
            call.args.to_value(),
            &outcome,
            version,
        )
        .with_nested(nested);
        run.emit(|| Event::ToolFinished(record.clone()));
        run.report.tool_calls.push(record);
        if let Err(f) = &outcome.result
            && self.stop.is_none()
        {
            self.stop = self.stops_run(&call.name, f);
        }
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: outcome.model_text(),
            is_error: !outcome.is_ok(),
        }
    }

    /// Whether a failed call ends the run: a refusal, a cancel, the run's deadline, or
    /// invalid arguments past the tool's budget.
    fn stops_run(&mut self, tool: &str, f: &ToolFailure) -> Option<RunErrorKind> {
        match f.kind {
            FailureKind::Capability => Some(RunErrorKind::Capability(f.message.clone())),
            FailureKind::Cancelled => Some(RunErrorKind::Cancelled),
            FailureKind::Deadline if self.deadline.is_some_and(|d| Instant::now() >= d) => {
                Some(RunErrorKind::Deadline)
            }
            FailureKind::InvalidArguments => {
                let n = self.invalid_counts.entry(tool.to_string()).or_default();
                *n += 1;
                let budget = self
                    .offered
                    .iter()
                    .find(|t| t.name == tool)
                    .map_or(0, |t| t.retries)
                    + INVALID_ARGS_GRACE
                    + 1;
                (*n > budget).then(|| RunErrorKind::InvalidArguments {
                    tool: tool.to_string(),
                    count: *n,
                })
            }
            _ => None,
        }
    }
}

/// The agent a round's successful handoff call hands the conversation to, if any.
fn handoff(
    agent: &kiln_registry::agent_spec::AgentSpec,
    calls: &[ToolCall],
    results: &[ToolResult],
) -> Option<String> {
    calls.iter().zip(results).find_map(|(call, result)| {
        let target = call.name.strip_prefix("handoff_to_")?;
        (!result.is_error && agent.handoffs.iter().any(|h| h == target)).then(|| target.to_string())
    })
}

/// Pins this turn's registry snapshot in `ctx` and returns the agent's tools offered from it:
/// the schemas the model sees are the code that runs.
pub(super) fn pin_turn(
    host: &dyn RunHost,
    agent: &kiln_registry::agent_spec::AgentSpec,
    ctx: &mut CallContext,
) -> Vec<Arc<kiln_core::tool::Tool>> {
    let snapshot = host.registry();
    ctx.run.registry = Some(snapshot.clone());
    let mut available = snapshot.available(Some(&agent.tools), ctx);
    // Other agents it lists (`agent:NAME`) as tools that run them.
    available.extend(
        agent
            .tools
            .iter()
            .filter_map(|t| kiln_registry::agent_tool::named_agent(t))
            .filter_map(|name| snapshot.agent(name))
            .filter_map(|other| kiln_registry::agent_tool::agent_tool(&other)),
    );
    // The agents it may hand the conversation to.
    available.extend(
        agent
            .handoffs
            .iter()
            .filter_map(|name| snapshot.agent(name))
            .filter_map(|other| kiln_registry::agent_tool::handoff_tool(&other)),
    );
    match (&agent.code_mode, &agent.script) {
        (Some(mode), Some(script)) => {
            // The program calls the tools; those kept out stay ordinary tool calls.
            let (kept, functions): (Vec<_>, Vec<_>) = available
                .into_iter()
                .partition(|t| mode.except.contains(&t.name));
            let mut offered = script.code_tools(&functions, mode);
            offered.extend(kept);
            offered
        }
        _ => available,
    }
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
