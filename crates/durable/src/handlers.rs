//! The Restate services a worker serves: `KilnSession`, a Virtual Object keyed by session name
//! (its conversation and `ctx.state` in the object's state, one turn at a time per key), and
//! `KilnRun`, a workflow keyed by run id for runs without a session. Both run the same loop as
//! `kiln ask`, with each step journaled through [`RestateJournal`].

use super::journal::{APPROVALS, CANCELLED, DEADLINE, RestateJournal, Waiting};
use super::steer;
use kiln_agent::connect::ProviderOverrides;
use kiln_agent::steer::Steering;
use kiln_agent::{RunError, RunErrorKind, RunOptions, StepJournal};
use kiln_core::capability::Grants;
use kiln_host::Host;
use kiln_providers::Message;
use restate_sdk::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// State keys of a `KilnSession` object.
const MESSAGES: &str = "messages";
const STATE: &str = "state";
const AGENT: &str = "agent";
/// State key of a `KilnRun` workflow: the Responses door's `response` it was sent with.
const RESPONSE: &str = "response";

/// What a session turn continues: its name, messages and `ctx.state`.
type Continued = (String, Vec<Message>, Arc<Mutex<Value>>);

/// What a worker runs agents with.
pub struct Worker {
    pub host: Arc<Host>,
    pub overrides: ProviderOverrides,
    pub ceiling: Option<Grants>,
    pub slots: Option<kiln_host::admission::Limiter>,
    pub run_timeout: Option<std::time::Duration>,
    pub approval_timeout: std::time::Duration,
}

/// The input of `KilnSession/{name}/turn` and `KilnRun/{id}/run`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    /// The agent to run.
    agent: String,
    /// The user's message.
    prompt: String,
    /// Application context (`ctx.context`).
    #[serde(default)]
    context: serde_json::Map<String, Value>,
    /// The actor (`ctx.actor_id`).
    #[serde(default)]
    actor: Option<String>,
    /// The capabilities granted (the front door's grants within its token's ceiling); none:
    /// the agent's own. Either way cut to the worker's ceiling.
    #[serde(default)]
    caps: Option<Vec<String>>,
    /// Which of `caps` need approval (`ask` mode).
    #[serde(default)]
    ask: Vec<String>,
    /// The conversation before `prompt` (a Responses door's); an empty prompt after tool
    /// results continues from them. Ignored by a session turn (its history is the session's).
    #[serde(default)]
    history: Vec<Message>,
    /// Function tools the caller runs itself: the run stops when the model calls one
    /// (`report.pending_calls`).
    #[serde(default)]
    client_tools: Vec<ClientTool>,
    /// Images and files on the prompt.
    #[serde(default)]
    attachments: Vec<kiln_providers::Attachment>,
    /// Instructions after the agent's own system prompt.
    #[serde(default)]
    instructions: Option<String>,
    /// Sampling temperature instead of the agent's.
    #[serde(default)]
    temperature: Option<f64>,
    /// Max output tokens per model request instead of the agent's.
    #[serde(default)]
    max_tokens: Option<u32>,
    /// The tool choice of the run's first model request.
    #[serde(default)]
    tool_choice: Option<kiln_providers::ToolChoice>,
    /// Whether a reply may hold several calls.
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
    /// Opaque to the worker: handed back beside the report (`{"report", "response"}`) so any
    /// front door renders the Responses API's object from the invocation's outcome alone.
    #[serde(default)]
    response: Option<Value>,
}

/// A function tool the caller runs itself.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientTool {
    name: String,
    #[serde(default)]
    description: String,
    schema: Value,
}

fn parse(input: Json<Value>) -> Result<RunRequest, TerminalError> {
    serde_json::from_value(input.into_inner()).map_err(|e| {
        TerminalError::new_with_code(
            400,
            format!("invalid run request: {e} (expected {{\"agent\", \"prompt\", \"context\"?, \"actor\"?, \"caps\"?, \"ask\"?, \"history\"?, \"client_tools\"?, \"attachments\"?, \"instructions\"?, \"temperature\"?, \"max_tokens\"?, \"tool_choice\"?, \"parallel_tool_calls\"?, \"response\"?}})"),
        )
    })
}

impl Worker {
    /// Runs the agent with `journal`; the run's id is the invocation's, so the run log and the
    /// tools' idempotency keys name the same run on every worker.
    async fn run(
        &self,
        journal: &dyn StepJournal,
        invocation: &str,
        req: RunRequest,
        session: Option<Continued>,
        steering: Option<Arc<Steering>>,
    ) -> Result<kiln_agent::RunReport, HandlerError> {
        self.start(journal, invocation, req, session, steering)
            .await?
            .map_err(|e| failed(e).into())
    }

    /// A run without a session, to its end: its report, or its error with the report so far
    /// (the outer error: the run could not start).
    async fn run_to_end(
        &self,
        journal: &dyn StepJournal,
        invocation: &str,
        req: RunRequest,
        steering: Option<Arc<Steering>>,
    ) -> Result<Result<kiln_agent::RunReport, RunError>, HandlerError> {
        self.start(journal, invocation, req, None, steering).await
    }

    async fn start(
        &self,
        journal: &dyn StepJournal,
        invocation: &str,
        req: RunRequest,
        session: Option<Continued>,
        steering: Option<Arc<Steering>>,
    ) -> Result<Result<kiln_agent::RunReport, RunError>, HandlerError> {
        let agent = self
            .host
            .agent(&req.agent)
            .map_err(|e| TerminalError::new_with_code(404, e.to_string()))?;
        if agent.mode == kiln_registry::agent_spec::AgentMode::JsonPlanner {
            return Err(TerminalError::new_with_code(
                400,
                format!(
                    "agent \"{}\" is a json_planner agent; durable runs support the tool-calling loop only",
                    req.agent
                ),
            )
            .into());
        }
        let grants = self.grants(&agent.grants, &req)?;
        let mut overrides = self.overrides.clone();
        overrides.extra_system = req.instructions.or(overrides.extra_system);
        overrides.temperature = req.temperature.or(overrides.temperature);
        overrides.max_tokens = req.max_tokens.or(overrides.max_tokens);
        overrides.tool_choice = req.tool_choice.or(overrides.tool_choice);
        overrides.parallel_tool_calls = req.parallel_tool_calls.or(overrides.parallel_tool_calls);
        let client_tools = req
            .client_tools
            .into_iter()
            .map(|t| kiln_providers::ToolDef {
                name: t.name,
                description: t.description,
                schema: t.schema.into(),
                deferred: false,
            })
            .collect();
        let mut opts = RunOptions {
            grants,
            overrides,
            context: req.context,
            actor_id: req.actor,
            run_id: Some(invocation.to_string()),
            timeout: self.run_timeout,
            history: req.history,
            client_tools,
            attachments: req.attachments,
            steering,
            ..RunOptions::default()
        };
        if let Some((name, history, state)) = session {
            opts.session = Some(name);
            opts.history = history;
            opts.state = Some(state);
        }
        // Each attempt of the invocation is a span of its own; a replayed step makes no span
        // (its model request or tool call is not made again).
        let span = tracing::info_span!(
            "durable_run",
            otel.name = %format_args!("durable_run {}", req.agent),
            otel.kind = "internal",
            restate.invocation_id = invocation,
        );
        let run = self
            .host
            .run_journaled(journal, &req.agent, &req.prompt, opts);
        Ok(tracing::Instrument::instrument(run, span).await)
    }
}

impl Worker {
    /// How a run of this worker waits for approvals, holding a run slot between them; no free
    /// slot: this attempt fails (retryable) and Restate tries again later.
    async fn waiting(&self) -> Result<Waiting, HandlerError> {
        let slot = match &self.slots {
            Some(slots) => Some(slots.acquire().await.map_err(|e| {
                HandlerError::from(std::io::Error::other(format!(
                    "no run slot free on this worker: {}",
                    e
                )))
            })?),
            None => None,
        };
        Ok(Waiting::new(
            self.approval_timeout,
            slot,
            self.slots.clone(),
        ))
    }

    /// The grants a run gets: the ones asked for (refused beyond the worker's ceiling, or
    /// beyond the agent's own grants when the worker has none) or the agent's own cut down to
    /// the ceiling; `None`: the agent's own.
    fn grants(&self, agent: &Grants, req: &RunRequest) -> Result<Option<Grants>, TerminalError> {
        let asked = match &req.caps {
            None => None,
            Some(caps) => {
                let mut asked = Grants::parse(caps)
                    .map_err(|e| TerminalError::new_with_code(400, format!("caps: {e}")))?;
                asked.mark_ask(&req.ask);
                // Restate's ingress knows no kiln tokens: without `--caps`, the agent's own
                // grants are the most a caller can ask for.
                let ceiling = self.ceiling.as_ref().unwrap_or(agent);
                kiln_host::admission::check_within(&asked, ceiling, "caps")
                    .map_err(|e| TerminalError::new_with_code(403, e.to_string()))?;
                Some(asked)
            }
        };
        // The meet keeps every `ask` of the agent and the ceiling, whatever the caller sent.
        Ok(Some(Grants::effective(&[
            Some(agent),
            self.ceiling.as_ref(),
            asked.as_ref(),
        ])))
    }
}

/// A failed run as the invocation's terminal error (a cancellation keeps Restate's code).
fn failed(e: RunError) -> TerminalError {
    let code = match e.kind {
        RunErrorKind::Cancelled => CANCELLED,
        RunErrorKind::Deadline => DEADLINE,
        RunErrorKind::Capability(_) => 403,
        _ => 500,
    };
    TerminalError::new_with_code(code, e.to_string())
}

fn report_json(report: &kiln_agent::RunReport) -> Result<Json<Value>, TerminalError> {
    serde_json::to_value(report)
        .map(Json)
        .map_err(|e| TerminalError::new(format!("the run report is not JSON: {e}")))
}

/// A conversation that lives in Restate, keyed by session name.
pub struct Session(pub Arc<Worker>);

#[restate_sdk::object(name = "KilnSession")]
impl Session {
    /// One turn: the agent answers `prompt` after the session's earlier messages.
    #[handler]
    async fn turn(&self, ctx: ObjectContext<'_>, input: Json<Value>) -> HandlerResult<Json<Value>> {
        let req = parse(input)?;
        // A session keeps the agent it started with, as `kiln serve`'s local sessions do.
        let owner = ctx.get::<String>(AGENT).await?;
        if let Some(owner) = owner.filter(|a| *a != req.agent) {
            return Err(TerminalError::new_with_code(
                400,
                format!(
                    "session \"{}\" belongs to agent \"{owner}\", not \"{}\"",
                    ctx.key(),
                    req.agent
                ),
            )
            .into());
        }
        let agent = req.agent.clone();
        let history: Vec<Message> = ctx
            .get::<Json<Vec<Message>>>(MESSAGES)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let state = ctx
            .get::<Json<Value>>(STATE)
            .await?
            .map(Json::into_inner)
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        let state = Arc::new(Mutex::new(state));
        let session = (ctx.key().to_string(), history, state.clone());
        let invocation = ctx.invocation_id().to_string();
        let journal = RestateJournal::new(&ctx, self.0.waiting().await?);
        // A person's messages to this turn wait in its inbox; closed however the turn ends.
        let steering = Arc::new(Steering::default());
        let ran = (self.0)
            .run(&journal, &invocation, req, Some(session), Some(steering))
            .await;
        ctx.object_client::<crate::inbox::InboxClient>(invocation.clone())
            .close()
            .send();
        ctx.clear(crate::steer::TAKEN);
        let report = ran?;
        ctx.set(AGENT, agent);
        ctx.set(MESSAGES, Json(report.messages.clone()));
        let state = state.lock().map(|s| s.clone()).unwrap_or(Value::Null);
        ctx.set(STATE, Json(state));
        Ok(report_json(&report)?)
    }

    /// The session's agent, messages and `ctx.state` (readable while a turn runs); the agent is
    /// null for a session that never ran.
    #[handler]
    async fn describe(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Value>> {
        let agent = ctx.get::<String>(AGENT).await?;
        let messages = ctx
            .get::<Json<Value>>(MESSAGES)
            .await?
            .map(Json::into_inner);
        let state = ctx.get::<Json<Value>>(STATE).await?.map(Json::into_inner);
        Ok(Json(serde_json::json!({
            "agent": agent,
            "messages": messages.unwrap_or(Value::Array(Vec::new())),
            "state": state.unwrap_or(Value::Object(serde_json::Map::new())),
        })))
    }

    /// Forgets the session (after the turn running now, if any: turns and this queue per key).
    #[handler]
    async fn clear(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.clear_all();
        Ok(())
    }

    /// The approvals the running turn waits for now (`[{id, capability, question}]`).
    #[handler]
    async fn approvals(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Value>> {
        let pending = ctx.get::<Json<Value>>(APPROVALS).await?;
        Ok(pending.unwrap_or(Json(Value::Array(Vec::new()))))
    }

    /// The session's messages so far (readable while a turn runs).
    #[handler]
    async fn transcript(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Value>> {
        let messages = ctx
            .get::<Json<Value>>(MESSAGES)
            .await?
            .map(Json::into_inner);
        Ok(Json(messages.unwrap_or(Value::Array(Vec::new()))))
    }
}

/// A run without a session, keyed by run id (it runs once per key).
pub struct AgentRun(pub Arc<Worker>);

#[restate_sdk::workflow(name = "KilnRun")]
impl AgentRun {
    /// Runs the agent on the prompt.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        let mut req = parse(input)?;
        let invocation = ctx.invocation_id().to_string();
        let journal = RestateJournal::new(&ctx, self.0.waiting().await?);
        // A person's messages come through `input` (see `steer`).
        let steering = Some(Arc::new(Steering::default()));
        let Some(response) = req.response.take() else {
            let report = self.0.run(&journal, &invocation, req, None, steering).await;
            steer::close(&ctx, journal.steered()).await;
            return Ok(report_json(&report?)?);
        };
        // Readable while the run runs (`response`), so a door answers for it in progress.
        ctx.set(RESPONSE, Json(response.clone()));
        // A Responses door's run: a failed or cancelled one is a Response too, so its end is
        // the output, with the report so far and the error.
        let ended = self
            .0
            .run_to_end(&journal, &invocation, req, steering)
            .await;
        steer::close(&ctx, journal.steered()).await;
        let (report, error) = match ended? {
            Ok(report) => (report, Value::Null),
            Err(e) => {
                let error = serde_json::json!({
                    "code": e.kind.name(),
                    "message": kiln_core::error::public::scrub(&e.to_string()),
                });
                (*e.report, error)
            }
        };
        let report = report_json(&report)?.into_inner();
        Ok(Json(serde_json::json!({
            "report": report,
            "error": error,
            "response": response,
        })))
    }

    /// The approvals the run waits for now (`[{id, capability, question}]`).
    #[handler]
    async fn approvals(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<Json<Value>> {
        let pending = ctx.get::<Json<Value>>(APPROVALS).await?;
        Ok(pending.unwrap_or(Json(Value::Array(Vec::new()))))
    }

    /// Adds a person's message (`{"text"}`) to the running run, taken before its next model
    /// request: `{"waiting": n}`; refused once the run has ended (409) or after
    /// `steer::PROMISES` messages (429).
    #[handler]
    async fn input(
        &self,
        ctx: SharedWorkflowContext<'_>,
        input: Json<Value>,
    ) -> HandlerResult<Json<Value>> {
        Ok(Json(steer::add(&ctx, input.into_inner()).await?))
    }

    /// The Responses door's `response` the run was sent with (null for a `/v1/runs` run).
    #[handler]
    async fn response(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<Json<Value>> {
        let response = ctx.get::<Json<Value>>(RESPONSE).await?;
        Ok(response.unwrap_or(Json(Value::Null)))
    }
}
