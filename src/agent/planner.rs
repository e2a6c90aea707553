//! Planner mode (`.mode("json_planner")`): for models without native tool calling. Each step the
//! model sees the tools, the task and the prior steps, and answers with one JSON object
//! `{"tool": NAME, "args": {...}}`; the loop ends when a tool returns `status: "done"`.

use super::extract;
use super::report::RunErrorKind;
use super::run::{Run, RunEvent, RunOptions};
use crate::Host;
use crate::context::CallContext;
use crate::provider::{Message, ModelRequest, Provider, TextSink};
use crate::tool::Tool;
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

/// The planner loop.
#[allow(clippy::too_many_arguments)]
pub(super) async fn drive(
    host: &Host,
    run: &mut Run,
    provider: &Provider,
    agent: &super::AgentSpec,
    model: &str,
    mut ctx: CallContext,
    opts: &RunOptions,
    deadline: Option<Instant>,
) -> Result<(), RunErrorKind> {
    let task = match run.report.messages.last() {
        Some(Message::User { content }) => content.clone(),
        _ => String::new(),
    };
    let sink: TextSink = Arc::new(|_: &str| {});
    for step in 1..=agent.max_steps {
        let offered = super::run::pin_turn(host, agent, &mut ctx);
        let request = ModelRequest {
            model: model.to_string(),
            system: opts.overrides.system(agent),
            messages: vec![Message::User {
                content: prompt(&offered, &ctx.context, &task, &run.report.steps),
            }],
            tools: Vec::new(),
            temperature: opts.overrides.temperature.or(agent.temperature),
            max_tokens: opts
                .overrides
                .max_tokens
                .or(agent.max_tokens)
                .unwrap_or(super::run::DEFAULT_MAX_TOKENS),
            stream: false,
        };
        run.report.rounds = step;
        let reply = run
            .ask_model(provider, &request, &sink, opts, deadline)
            .await?;
        run.report.messages.push(Message::Assistant {
            content: reply.text.clone(),
            tool_calls: Vec::new(),
        });
        let plan = extract::one_object(&reply.text)?;
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
        let args = plan.get("args").cloned().unwrap_or_else(|| json!({}));
        let violations = tool.violations(&args);
        let result = if !violations.is_empty() {
            error_result(format!("invalid arguments: {}", violations.join("; ")))
        } else {
            match agent.validate(name, args.clone()) {
                Err(e) => error_result(format!("rejected by the validator: {e}")),
                Ok(args) => {
                    run.emit(RunEvent::ToolStart {
                        round: step,
                        id: &format!("step_{step}"),
                        name,
                        args: &args,
                    });
                    let outcome = tool.execute_async(args, ctx.clone()).await;
                    let args = plan.get("args").cloned().unwrap_or_default();
                    let record = super::ToolCallRecord::new(
                        step,
                        &format!("step_{step}"),
                        name,
                        args,
                        &outcome,
                        tool.version().to_string(),
                    );
                    run.emit(RunEvent::ToolDone(&record));
                    run.report.tool_calls.push(record);
                    match outcome.result {
                        Ok(v) => v,
                        Err(f) if f.kind == crate::tool::FailureKind::Capability => {
                            return Err(RunErrorKind::Capability(f.message));
                        }
                        Err(f) if f.kind == crate::tool::FailureKind::Cancelled => {
                            return Err(RunErrorKind::Cancelled);
                        }
                        Err(f) => error_result(f.message),
                    }
                }
            }
        };
        let done = result.get("status").and_then(Value::as_str) == Some("done");
        let thought = plan.get("thought").cloned().unwrap_or(Value::Null);
        run.report.steps.push(
            json!({"thought": thought, "action": {"tool": name, "args": args}, "result": result}),
        );
        if done {
            run.report.answer = result.to_string();
            return Ok(());
        }
    }
    Err(RunErrorKind::MaxSteps(agent.max_steps))
}
