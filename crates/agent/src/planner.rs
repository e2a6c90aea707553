//! Planner mode (`.mode("json_planner")`): for models without native tool calling. Each step the
//! model sees the tools, the task and the prior steps, and answers with one JSON object
//! `{"tool": NAME, "args": {...}}`; the loop ends when a tool returns `status: "done"`.

use super::event::Event;
use super::report::RunErrorKind;
use super::run::Run;
use crate::text_calls::extract;
use kiln_core::context::CallContext;
use kiln_core::tool::{FailureKind, Tool, ToolFailure, ToolOutcome};
use kiln_providers::{Message, ModelRequest, TextSink};
use kiln_registry::agent_spec::AgentSpec;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// The instructions that open every planner prompt.
const INSTRUCTIONS: &str = "You plan one step at a time. Choose exactly one tool for the next step.\n\
Answer with ONE JSON object and nothing else: {\"tool\": \"<tool name>\", \"args\": {<arguments>}, \"thought\": \"<why>\"}.\n\
A tool result with \"status\": \"done\" finishes the task.";

/// The prompt for one step: tools with their schemas, the context, the task and prior steps.
pub fn prompt(
    tools: &[Arc<Tool>],
    context: &serde_json::Map<String, Value>,
    task: &str,
    steps: &[Value],
) -> String {
    let mut p = format!("{INSTRUCTIONS}\n\nTools:\n");
    for t in tools {
        p.push_str(&format!(
            "- {}: {}\n  args schema: {}\n",
            t.name, t.description, t.schema
        ));
    }
    if !context.is_empty() {
        p.push_str(&format!("\nContext: {}\n", Value::Object(context.clone())));
    }
    p.push_str(&format!("\nTask: {task}\n"));
    if steps.is_empty() {
        p.push_str("\nNo steps taken yet.\n");
    } else {
        p.push_str("\nPrior steps:\n");
        for (i, s) in steps.iter().enumerate() {
            p.push_str(&format!(
                "{}. action: {} result: {}\n",
                i + 1,
                s["action"],
                s["result"]
            ));
        }
    }
    p
}

fn error_result(message: impl Into<String>) -> Value {
    json!({"status": "error", "error": message.into()})
}

/// The planner loop: each step is committed through the run's recorder, like a round of the
/// tool-calling loop, while the next model request is out and before the next tool runs (or
/// before the step's error ends the run).
pub(super) async fn drive(
    setup: &super::run::Setup<'_>,
    run: &mut Run,
    mut ctx: CallContext,
) -> Result<(), RunErrorKind> {
    let (host, provider, opts, deadline) =
        (setup.host, &setup.provider, setup.opts, setup.deadline);
    let (agent, model) = (setup.agent.as_ref(), setup.model.as_str());
    let task = match run.report.messages.last() {
        Some(Message::User {
            content,
            attachments,
        }) => {
            if let Some(a) = attachments.first() {
                let why = "a planner's steps are text; its model never sees the files";
                let e = kiln_providers::attach::refuse(provider.name(), a, why);
                return Err(RunErrorKind::Provider(e));
            }
            content.clone()
        }
        _ => String::new(),
    };
    let sink: TextSink = Arc::new(|_: &str| {});
    for step in 1..=agent.max_steps {
        // A plan names its calls up front: every skill's tools are offered.
        let offered = super::tool_loop::pin_turn(host, agent, &mut ctx, None);
        let request = ModelRequest {
            model: model.to_string(),
            system: opts.overrides.system(agent),
            messages: vec![Message::user(prompt(
                &offered,
                &ctx.run.context,
                &task,
                &run.report.steps,
            ))]
            .into(),
            tools: Vec::new(),
            temperature: opts.overrides.temperature.or(agent.temperature),
            max_tokens: opts
                .overrides
                .max_tokens
                .or(agent.max_tokens)
                .unwrap_or(super::run::DEFAULT_MAX_TOKENS),
            stream: false,
            unchanged_prefix: 0,
            output: None,
            tool_choice: Default::default(),
            parallel_tool_calls: None,
        };
        run.report.rounds = step;
        let prepared = provider.prepare(&request);
        super::run::check_transcript(&prepared, opts)?;
        let reply = run
            // Plans run their tools in place, so their model requests are not journaled either.
            .ask_model(
                &super::journal::Local,
                provider,
                prepared,
                &sink,
                opts,
                deadline,
            )
            .await?;
        run.report.stop_reason = Some(reply.stop.clone());
        run.report.messages.push(Message::Assistant {
            replay: None,
            content: reply.text.clone(),
            tool_calls: Vec::new(),
        });
        let done = take_step(run, agent, &offered, &ctx, step, &reply.text).await;
        let committed = run.commit(&ctx.run.state).await;
        // The step's own error is the cause; a failed commit ends the run all the same.
        let done = done?;
        committed?;
        if done {
            return Ok(());
        }
    }
    Err(RunErrorKind::MaxSteps(agent.max_steps))
}

/// Runs the plan in the model's `text` as step `step`: records the call with the arguments
/// that ran (after the validator) and the step's `{thought, action, result}`. True when the
/// tool answered `status: "done"`.
async fn take_step(
    run: &mut Run,
    agent: &AgentSpec,
    offered: &[Arc<Tool>],
    ctx: &CallContext,
    step: u32,
    text: &str,
) -> Result<bool, RunErrorKind> {
    let plan = extract::one_object(text)?;
    let Some(name) = plan.get("tool").and_then(Value::as_str) else {
        return Err(RunErrorKind::InvalidPlan(format!(
            "the plan has no \"tool\" name: {plan}"
        )));
    };
    let Some(tool) = offered.iter().find(|t| t.name == name).cloned() else {
        let known: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        return Err(RunErrorKind::InvalidPlan(format!(
            "unknown tool \"{name}\" (available: {})",
            known.join(", ")
        )));
    };
    let planned = plan.get("args").cloned().unwrap_or_else(|| json!({}));
    let started = Instant::now();
    let refused = |message: String| {
        ToolOutcome::failed(
            ToolFailure::visible(FailureKind::InvalidArguments, message),
            started,
        )
    };
    let violations = tool.violations(&planned);
    let (args, outcome) = if !violations.is_empty() {
        let msg = format!("invalid arguments: {}", violations.join("; "));
        (planned, refused(msg))
    } else {
        match agent.validate(name, planned.clone()) {
            Err(e) => (planned, refused(format!("rejected by the validator: {e}"))),
            Ok(args) => {
                // No tool runs on top of a step that is not committed.
                run.durable().await?;
                run.emit(|| Event::ToolStarted {
                    round: step,
                    id: format!("step_{step}"),
                    name: name.to_string(),
                    args: args.clone().into(),
                });
                let outcome = tool.execute_async(args.clone(), ctx.clone()).await;
                (args, outcome)
            }
        }
    };
    let record = super::ToolCallRecord::new(
        step,
        &format!("step_{step}"),
        name,
        args.clone().into(),
        &outcome,
        tool.version().to_string(),
    );
    run.emit(|| Event::ToolFinished(std::sync::Arc::new(record.clone())));
    run.report.tool_calls.push(record);
    let result = match outcome.result {
        Ok(v) => v,
        Err(f) if f.kind == FailureKind::Capability => {
            return Err(RunErrorKind::Capability(f.message));
        }
        Err(f) if f.kind == FailureKind::Cancelled => return Err(RunErrorKind::Cancelled),
        Err(f) => error_result(f.message),
    };
    let done = result.get("status").and_then(Value::as_str) == Some("done");
    let thought = plan.get("thought").cloned().unwrap_or(Value::Null);
    if done {
        run.report.answer = result.to_string();
    }
    run.report.steps.push(
        json!({"thought": thought, "action": {"tool": name, "args": args}, "result": result}),
    );
    Ok(done)
}
