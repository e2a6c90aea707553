//! The tool-calling loop: ask the model, run the tools it asks for (validated, guarded,
//! concurrently and in call order), send the results back, until it answers or a limit hits.
//! Each round is one function of [`Rounds`]; [`Run`] keeps the commits in order.

pub(crate) mod compact;
mod defer;
mod offer;
mod skills;

pub(crate) use offer::pin_turn;

use super::event::Event;
use super::report::{RunErrorKind, ToolCallRecord};
use super::round::{Executed, RoundContext, execute_round};
use super::run::{DEFAULT_MAX_TOKENS, INVALID_ARGS_GRACE, Run, Setup};
use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, Tool, ToolFailure};
use kiln_providers::{
    Message, ModelRequest, ModelResponse, TextSink, ToolCall, ToolDef, ToolResult,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::RwLock;

/// The tool-calling loop, one round at a time until the model answers, a limit hits or the
/// conversation is handed to another agent.
///
/// The order it keeps, each rule kept where it is written:
/// - the budget is checked before every model request and again, for the calls asked, before
///   any of them runs ([`Rounds::ask`], [`Rounds::run_tools`]);
/// - no tool runs on top of a step that is not committed ([`Rounds::run_tools`]);
/// - a repaired answer drops the bad answer only after what is pending is committed
///   ([`Rounds::answered`]);
/// - a round's results are committed before the run stops, hands off or is cancelled
///   ([`Rounds::run_tools`]).
pub(super) async fn drive(
    setup: &Setup<'_>,
    run: &mut Run,
    ctx: &mut CallContext,
) -> Result<(), RunErrorKind> {
    let mut rounds = Rounds::new(setup);
    let driven = async {
        loop {
            let (offered, reply) = rounds.ask(run, ctx).await?;
            let (calls, theirs) = rounds.split_client_calls(reply.tool_calls);
            let steered = match &setup.opts.steering {
                // Only an answer waits for a message that came meanwhile (a durable run's are
                // gathered from its journal here).
                Some(s) if calls.is_empty() => {
                    setup.journal.gather_steering(s).await?;
                    s.waiting()
                }
                _ => false,
            };
            let next = if let Some(problem) = rounds.misread.take() {
                rounds.misread(run, ctx, problem).await?
            } else if !theirs.is_empty() {
                rounds.hand_back(run, ctx, &offered, calls, theirs).await?
            } else if calls.is_empty()
                && paused(&reply.stop)
                && run.report.rounds > setup.max_rounds
            {
                // A service that pauses again and again ends like a loop of tool calls.
                return Err(RunErrorKind::ToolLoop(setup.max_rounds));
            } else if calls.is_empty() && (steered || paused(&reply.stop)) {
                // A person spoke while the model answered: it hears them before the run ends.
                // Or the service paused a long turn of its own tools (Anthropic's
                // `pause_turn`): the reply goes back as it is, for the model to go on.
                Next::Again
            } else if calls.is_empty() {
                rounds.answered(run, ctx, reply.text).await?
            } else {
                rounds.run_tools(run, ctx, &offered, calls).await?
            };
            if let Next::Stop = next {
                return Ok(());
            }
        }
    };
    let ended = driven.await;
    // However the run ends (answered, failed, cancelled), nothing queued runs after it.
    if let Some(steering) = &setup.opts.steering {
        steering.close();
    }
    ended
}

/// Whether the service paused the model's turn for the client to send it back (Anthropic's
/// `pause_turn`, after its own tools ran long).
fn paused(stop: &kiln_core::model::StopReason) -> bool {
    matches!(stop, kiln_core::model::StopReason::Other(s) if s == "pause_turn")
}

/// Carries what a person added since the last request into this round's transcript, as a
/// journaled step (a replay reads the same messages back).
async fn deliver_steering(
    setup: &Setup<'_>,
    run: &mut Run,
    round: u32,
) -> Result<(), RunErrorKind> {
    let Some(steering) = &setup.opts.steering else {
        return Ok(());
    };
    setup.journal.gather_steering(steering).await?;
    let taken = steering.take();
    if taken.is_empty() {
        return Ok(());
    }
    let step = crate::steer::steer_step(round);
    let work: crate::journal::StepWork =
        Box::pin(async move { Ok(crate::journal::StepValue::Typed(Box::new(taken))) });
    let recalled = setup.journal.step(step.clone(), work).await?;
    let said = crate::journal::decode::<Vec<String>>(&step, recalled.value)?;
    for text in said {
        if let Some(observer) = &setup.opts.observer {
            observer(&Event::Steered {
                round,
                text: text.clone(),
            });
        }
        run.report.messages.push(Message::user(text));
    }
    Ok(())
}

/// Whether the loop goes on after a round.
enum Next {
    /// Another model request.
    Again,
    /// The run is over (answered, or handed to another agent).
    Stop,
}

/// The tool-calling loop's state across rounds.
struct Rounds<'s, 'a> {
    setup: &'s Setup<'a>,
    /// Where streamed text goes (the observer).
    sink: TextSink,
    contract: crate::report::contract::RunContract,
    /// Invalid-argument replies per tool, against its budget.
    invalid_counts: HashMap<String, u32>,
    /// Held for writing by an exclusive tool, for reading by the others.
    exclusive: Arc<RwLock<()>>,
    /// Messages the last request carried: unchanged in the next, since the transcript only
    /// grows (a repair may shrink it).
    sent: usize,
    /// What was wrong with a tool call the last reply wrote as text, for the model.
    misread: Option<String>,
    /// The provider's count of the last request's tokens, while it still describes the
    /// transcript (none after a compaction).
    counted: Option<u64>,
    /// The deferred tools this run's searches found.
    found: defer::Found,
}

impl<'s, 'a> Rounds<'s, 'a> {
    fn new(setup: &'s Setup<'a>) -> Self {
        let observer = setup.opts.observer.clone();
        let sink: TextSink = Arc::new(move |t: &str| {
            if let Some(o) = &observer {
                o(&Event::Text(t.to_string()));
            }
        });
        Rounds {
            setup,
            sink,
            contract: crate::report::contract::RunContract::new(
                &setup.agent,
                setup.opts.budget.as_ref(),
            ),
            invalid_counts: HashMap::new(),
            exclusive: Arc::new(RwLock::new(())),
            sent: 0,
            misread: None,
            counted: None,
            found: defer::Found::default(),
        }
    }

    /// Checks the budget, offers this turn's tools and asks the model; the reply is in the
    /// transcript when this returns.
    async fn ask(
        &mut self,
        run: &mut Run,
        ctx: &mut CallContext,
    ) -> Result<(Vec<Arc<Tool>>, ModelResponse), RunErrorKind> {
        let setup = self.setup;
        self.contract.check(&run.report, 0)?;
        deliver_steering(setup, run, run.report.rounds + 1).await?;
        let round = run.report.rounds + 1;
        let view = compact::view(setup, &run.report.messages, round, self.counted).await?;
        // Only an agent with skills looks through its transcript for the ones it loaded.
        let loaded = match setup.agent.skills.is_empty() {
            true => Vec::new(),
            false => skills::loaded(&run.report.messages),
        };
        let offered = pin_turn(setup.host, &setup.agent, ctx, Some(&loaded));
        let (deferred, native) = (
            &setup.agent.defer_loading,
            setup.provider.searches_tools() && !setup.agent.defer_with_kiln,
        );
        let offered = defer::offer(deferred, offered, &self.found, native);
        let mut asked = model_request(setup, run, &offered, self.sent);
        let viewed = view.is_some();
        let mut summary_request = None;
        if let Some(view) = view {
            // The request sends the compacted transcript; the run keeps the whole one.
            asked.messages = view.messages.into();
            asked.unchanged_prefix = 0;
            summary_request = view.asked.map(|(usage, took)| (usage, took, view.by));
        }
        // A compacted transcript may have lost the service's search that loaded a tool its
        // kept calls name: those go loaded.
        let called = if viewed {
            defer::called(&asked.messages)
        } else {
            Default::default()
        };
        defer::flag(deferred, &mut asked.tools, native, &called);
        // The caller's own tools are offered after the agent's.
        asked.tools.extend(setup.opts.client_tools.iter().cloned());
        let request = setup.provider.prepare(&asked);
        // Only the rendered bytes wait with the run for the reply.
        drop(asked);
        super::run::check_transcript(&request, setup.opts)?;
        // A compacted request shares no prefix with the run's transcript; its summary request
        // counts in the run's usage.
        self.sent = if viewed { 0 } else { run.report.messages.len() };
        if let Some((usage, took, by)) = summary_request {
            run.side_request(round, usage, took, by);
        }
        run.report.rounds += 1;
        let (journal, provider, opts) = (setup.journal, &setup.provider, setup.opts);
        let mut reply = run
            .ask_model(journal, provider, request, &self.sink, opts, setup.deadline)
            .await?;
        let text_calls = (opts.overrides.text_tool_calls).unwrap_or(setup.agent.text_tool_calls);
        let round = run.report.rounds;
        self.misread = super::text_calls::recover_calls(&mut reply, text_calls, &offered, round);
        self.counted = (reply.usage.input_tokens > 0).then_some(reply.usage.input_tokens);
        run.report.stop_reason = Some(reply.stop.clone());
        run.report.cost_usd = self.contract.spend(&run.report).cost_usd;
        run.report.messages.push(Message::Assistant {
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            replay: reply.replay.clone(),
        });
        Ok((offered, reply))
    }

    /// The model answered without tool calls: the contract accepts the answer, or asks for a
    /// repair (the bad answer dropped once what is pending is committed), or fails the run.
    async fn answered(
        &mut self,
        run: &mut Run,
        ctx: &CallContext,
        text: String,
    ) -> Result<Next, RunErrorKind> {
        use crate::report::contract::Verdict;
        run.report.answer = text;
        let verdict = self.contract.answered(&mut run.report);
        if let Ok(Verdict::Repair { replace, message }) = &verdict {
            if let Some(r) = replace {
                run.forget_from(r.start, r.end).await?;
                self.sent = self.sent.min(r.start);
            }
            let content = message.clone();
            run.report.messages.push(Message::user(content));
        }
        run.commit(&ctx.run.state).await?;
        Ok(match verdict? {
            Verdict::Done => Next::Stop,
            Verdict::Repair { .. } => Next::Again,
        })
    }

    /// The reply's calls split into the agent's own and the caller's (`client_tools`).
    fn split_client_calls(&self, calls: Vec<ToolCall>) -> (Vec<ToolCall>, Vec<ToolCall>) {
        let client = &self.setup.opts.client_tools;
        if client.is_empty() {
            return (calls, Vec::new());
        }
        calls
            .into_iter()
            .partition(|c| !client.iter().any(|t| t.name == c.name))
    }

    /// The model called the caller's own tools: the agent's calls of the same reply run (their
    /// results committed), then the run stops with the caller's calls pending, for the caller
    /// to run and continue with.
    async fn hand_back(
        &mut self,
        run: &mut Run,
        ctx: &mut CallContext,
        offered: &[Arc<Tool>],
        ours: Vec<ToolCall>,
        theirs: Vec<ToolCall>,
    ) -> Result<Next, RunErrorKind> {
        if !ours.is_empty() {
            self.run_tools(run, ctx, offered, ours).await?;
        } else {
            run.commit(&ctx.run.state).await?;
        }
        // Handed back to the caller, not to another agent.
        run.handoff = None;
        run.report.answer.clear();
        run.report.pending_calls = theirs;
        Ok(Next::Stop)
    }

    /// The reply wrote a tool call as text that could not be read: the model is told what
    /// was wrong and asked again (within the round limit), its reply never taken as the answer.
    async fn misread(
        &mut self,
        run: &mut Run,
        ctx: &CallContext,
        problem: String,
    ) -> Result<Next, RunErrorKind> {
        if run.report.rounds > self.setup.max_rounds {
            return Err(RunErrorKind::ToolLoop(self.setup.max_rounds));
        }
        run.report.messages.push(Message::user(problem));
        run.commit(&ctx.run.state).await?;
        Ok(Next::Again)
    }

    /// Runs the calls the model asked for and answers them: within the round limit and the
    /// budget, on top of a committed step; the results are committed before the run stops on
    /// a failed call, hands off or is cancelled.
    async fn run_tools(
        &mut self,
        run: &mut Run,
        ctx: &mut CallContext,
        offered: &[Arc<Tool>],
        calls: Vec<ToolCall>,
    ) -> Result<Next, RunErrorKind> {
        let setup = self.setup;
        let round = run.report.rounds;
        if round > setup.max_rounds {
            return Err(RunErrorKind::ToolLoop(setup.max_rounds));
        }
        self.contract.check(&run.report, calls.len() as u64)?;
        // A program's own calls count too: it may make only what the budget has left.
        ctx.run.calls_left = self.contract.calls_left(&run.report).map(|n| {
            Arc::new(std::sync::atomic::AtomicU64::new(
                n.saturating_sub(calls.len() as u64),
            ))
        });
        // The model request's step committed the one before; this is for a recorder that had
        // nothing to overlap with.
        run.durable().await?;
        announce(run, round, &calls);
        let round_ctx = RoundContext {
            journal: setup.journal,
            round,
            offered,
            ctx,
            exclusive: &self.exclusive,
            max_parallel: setup.agent.max_parallel,
            observer: run.observer.clone(),
        };
        let executed = execute_round(&calls, &round_ctx).await?;
        let mut round_end = RoundEnd {
            offered,
            invalid_counts: &mut self.invalid_counts,
            deadline: setup.deadline,
            stop: None,
        };
        let results: Vec<ToolResult> = calls
            .iter()
            .zip(executed)
            .map(|(call, executed)| round_end.record(run, round, call, executed))
            .collect();
        let handed = handoff(&setup.agent, &calls, &results);
        run.report.messages.push(Message::Tool { results });
        run.commit(&ctx.run.state).await?;
        if let Some(kind) = round_end.stop {
            return Err(kind);
        }
        if let Some(next) = handed {
            // The start goes on as the other agent, with this transcript and state.
            run.handoff = Some(next);
            return Ok(Next::Stop);
        }
        if setup.opts.cancel.is_cancelled() {
            return Err(RunErrorKind::Cancelled);
        }
        Ok(Next::Again)
    }
}

/// Tells the observer, if any, that the round's calls start.
fn announce(run: &Run, round: u32, calls: &[ToolCall]) {
    if run.observer.is_none() {
        return;
    }
    for call in calls {
        run.emit(|| Event::ToolStarted {
            round,
            id: call.id.clone(),
            name: call.name.clone(),
            args: call.args.shared(),
        });
    }
}

/// The next model request: the transcript so far and the tools offered this turn (the
/// overrides' tool choice on the run's first request only).
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
                deferred: false,
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
        // Only the first request forces a choice: after the tool ran, the model may answer.
        tool_choice: match run.report.rounds {
            0 => opts.overrides.tool_choice.clone().unwrap_or_default(),
            _ => kiln_core::model::ToolChoice::Auto,
        },
        parallel_tool_calls: opts.overrides.parallel_tool_calls,
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
            notes,
            ..
        } = executed;
        let record = ToolCallRecord::new(
            round,
            &call.id,
            &call.name,
            call.args.shared(),
            &outcome,
            version,
        )
        .with_nested(nested)
        .with_notes(notes);
        run.emit(|| Event::ToolFinished(Arc::new(record.clone())));
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
