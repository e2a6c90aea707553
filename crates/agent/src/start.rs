//! Starting a run: the agent's provider, the call context (grants, deadline, cancellation),
//! then the tool-calling loop or, in json_planner mode, the planner loop.

use super::connect;
use super::journal::{Local, StepJournal};
use super::options::RunOptions;
use super::report::{RunError, RunErrorKind, RunReport};
use super::run::Run;
use crate::RunHost;
use kiln_providers::Message;
use std::sync::Arc;
use tracing::Instrument;

/// Runs agent `agent_name` on `prompt`, every step in this process.
pub fn run<'a>(
    host: &'a dyn RunHost,
    agent_name: &'a str,
    prompt: &'a str,
    opts: RunOptions,
) -> impl Future<Output = Result<RunReport, RunError>> + 'a {
    run_journaled(host, &Local, agent_name, prompt, opts)
}

/// Runs agent `agent_name` on `prompt` with each model request and tool call a step of
/// `journal` (the tool-calling loop; json_planner agents run their steps in place).
///
/// Not an `async fn`: a waiting run's future holds the options once, boxed. Each `async fn`
/// layer holding them by value kept its own copy (and rustc keeps an argument apart from the
/// local it is moved into), about 1.5 KB a layer for every run as long as it waits.
pub fn run_journaled<'a>(
    host: &'a dyn RunHost,
    journal: &'a dyn StepJournal,
    agent_name: &'a str,
    prompt: &'a str,
    opts: RunOptions,
) -> impl Future<Output = Result<RunReport, RunError>> + 'a {
    let span = super::spans::run_span(agent_name, &opts);
    run_in_span(
        host,
        journal,
        agent_name,
        prompt,
        Box::new(opts),
        span.clone(),
    )
    .instrument(span)
}

async fn run_in_span(
    host: &dyn RunHost,
    journal: &dyn StepJournal,
    agent_name: &str,
    prompt: &str,
    opts: Box<RunOptions>,
    span: tracing::Span,
) -> Result<RunReport, RunError> {
    let mut messages = opts.history.clone();
    // A conversation that ends with tool results (the caller's answers to the calls it was
    // handed) goes on from them when there is no new prompt.
    // Those answers are this run's first messages in the run log.
    let answered = prompt.is_empty() && matches!(messages.last(), Some(Message::Tool { .. }));
    if !answered {
        messages.push(Message::User {
            content: prompt.to_string(),
            attachments: opts.attachments.clone(),
        });
    }
    let recorded = opts.history.len() - usize::from(answered);
    let mut run = Run::new(agent_name, messages, &opts, recorded);
    if let Some(id) = &opts.run_id {
        run.report.run_id = id.clone();
    }
    run.report.trace_id = kiln_otel::context::trace_id_of(&span);
    super::spans::record_setup(&span, &run.report);
    let mut result = match run.started().await {
        Ok(()) => setup_and_drive(host, journal, &mut run, &opts).await,
        Err(e) => Err(e.into()),
    };
    // The last step commits here (and a start no model request followed).
    if let Err(e) = run.durable().await {
        // The run's own error, if any, is the one to report; this one is logged with it.
        tracing::error!("{e}");
        if result.is_ok() {
            result = Err(e.into());
        }
    }
    if let Err(kind) = &result {
        run.report.error = Some(kind.to_string());
        run.report.cancelled = matches!(kind, RunErrorKind::Cancelled);
    }
    if let Err(e) = run.ended().await {
        // The run's own error, if any, is the one to report; this one is logged with it.
        tracing::error!("{e}");
        if result.is_ok() {
            let kind: RunErrorKind = e.into();
            // The end owed to the log says the run succeeded; the caller is told it failed.
            // The end as the caller sees it is owed behind it, so the log agrees once both land.
            run.report.error = Some(kind.to_string());
            let _ = run.ended().await;
            result = Err(kind);
        }
    }
    super::spans::record_end(&span, &run.report, result.as_ref().err());
    match result {
        Ok(()) => Ok(run.report),
        Err(kind) => Err(run.fail(kind)),
    }
}

async fn setup_and_drive(
    host: &dyn RunHost,
    journal: &dyn StepJournal,
    run: &mut Run,
    opts: &RunOptions,
) -> Result<(), RunErrorKind> {
    let agent = host.agent(&run.report.agent).map_err(|e| {
        RunErrorKind::Provider(kiln_providers::ProviderError::Planner(e.to_string()))
    })?;
    let (provider, model) = connect::connect(&agent, &opts.overrides, &host.provider_defaults())?;
    let provider = Arc::new(provider);
    run.report.provider = provider.name().to_string();
    run.report.model = model.clone();
    provider.accepts_all(&run.report.messages)?;

    // What the door and the request allow only narrows what the agent was granted.
    let grants =
        kiln_core::capability::Grants::effective(&[Some(&agent.grants), opts.grants.as_ref()]);
    let mut ctx = host.context(grants);
    ctx.who.run_id = run.report.run_id.clone();
    ctx.who.caller = kiln_core::context::Caller::Agent(agent.name.clone());
    ctx.apply(opts.scope());
    ctx.approval.approver = opts.approver.clone();
    ctx.run.events = opts.tool_events.clone();
    ctx.who.depth = opts.depth;
    ctx.run.restored = opts.state.is_some() && !opts.history.is_empty();
    let deadline = ctx.run.deadline;
    let setup = super::run::Setup {
        host,
        journal,
        max_rounds: opts.max_iterations.unwrap_or(agent.max_iterations),
        provider,
        agent,
        model,
        opts,
        deadline,
    };
    if setup.agent.mode == kiln_registry::agent_spec::AgentMode::JsonPlanner {
        return super::planner::drive(&setup, run, ctx).await;
    }
    super::tool_loop::drive(&setup, run, &mut ctx).await?;
    let mut setup = setup;
    while let Some(next) = run.handoff.take() {
        if run.report.handoffs.len() >= MAX_HANDOFFS {
            return Err(RunErrorKind::ToolLoop(MAX_HANDOFFS as u32));
        }
        // The other agent takes over: its provider, model, tools and grants; the transcript,
        // the state, the deadline and the step names go on.
        let agent = host.agent(&next).map_err(|e| {
            RunErrorKind::Provider(kiln_providers::ProviderError::Planner(e.to_string()))
        })?;
        let (provider, model) =
            connect::connect(&agent, &opts.overrides, &host.provider_defaults())?;
        run.report.agent = agent.name.clone();
        run.report.provider = provider.name().to_string();
        run.report.model = model.clone();
        provider.accepts_all(&run.report.messages)?;
        run.report.handoffs.push(agent.name.clone());
        ctx.granted.grants =
            kiln_core::capability::Grants::effective(&[Some(&agent.grants), opts.grants.as_ref()]);
        ctx.who.caller = kiln_core::context::Caller::Agent(agent.name.clone());
        setup.max_rounds = opts.max_iterations.unwrap_or(agent.max_iterations);
        setup.provider = Arc::new(provider);
        setup.model = model;
        setup.agent = agent;
        super::tool_loop::drive(&setup, run, &mut ctx).await?;
    }
    Ok(())
}

/// How many times one run may hand the conversation on.
const MAX_HANDOFFS: usize = 8;
