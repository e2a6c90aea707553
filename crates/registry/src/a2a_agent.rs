//! A remote A2A agent as a tool: `a2a_agent("billing").url("https://…/a2a/billing")` in a
//! script, listed by an agent as `"a2a:billing"` and offered to its model as `a2a__billing`,
//! needing capability `a2a:billing`. A call sends the model's message to the remote agent
//! (A2A 1.0, JSON-RPC binding; its card read first, once), follows the task until it ends or
//! asks something, and answers the task's state, its answer (the artifacts' text and data)
//! and its question; the model continues a task by passing its `task_id`. Each change of the
//! remote task's status is the call's progress, as every door shows a tool's. Every connection
//! goes through the host's resolver and is checked against the declared host (never a
//! link-local or metadata address), without redirects.

pub use crate::agent_spec::{A2A_PREFIX as PREFIX, A2aAgentSpec, named_a2a_agent as named};
use crate::native::NativeTool;
use kiln_core::context::CallContext;
use kiln_core::failure::{FailureKind, ToolFailure};
use kiln_core::tool::Tool;
use kiln_egress::resolver::CheckedResolver;
use kiln_egress::{NetRule, Target};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long one call follows the remote task at most, when the run sets no deadline.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest answer read from the remote agent.
const MAX_REPLY: usize = 4 << 20;

/// The tool name the model sees for remote agent `name`.
pub fn tool_name(name: &str) -> String {
    format!("a2a__{name}")
}

/// The tool calling `spec`'s agent.
pub fn a2a_tool(spec: &A2aAgentSpec) -> Option<Arc<Tool>> {
    let remote = Arc::new(Remote {
        spec: spec.clone(),
        endpoint: OnceLock::new(),
    });
    let description = spec.description.clone().unwrap_or_else(|| {
        format!(
            "Ask the remote agent \"{}\" (A2A); pass task_id to answer its question or go on with its task",
            spec.name
        )
    });
    NativeTool::new(
        tool_name(&spec.name),
        move |args: Value, ctx: &CallContext| {
            let call = Call {
                remote: remote.clone(),
                resolver: ctx.run.services.egress.resolver.clone(),
                events: ctx.run.events.clone(),
                approver: ctx.approval.approver.clone(),
                call_id: ctx.who.call_id.clone(),
                deadline: ctx
                    .run
                    .deadline
                    .unwrap_or_else(|| Instant::now() + CALL_TIMEOUT),
            };
            async move { call.ask(&args).await }
        },
    )
    .description(description)
    .param(
        "message",
        "string",
        json!({"desc": "what to tell the agent"}),
    )
    .param(
        "task_id",
        "string",
        json!({"desc": "the task to go on with (from an earlier answer)", "optional": true}),
    )
    .requires(&format!("{PREFIX}{}", spec.name))
    .timeout(CALL_TIMEOUT)
    .located(spec.loc.clone())
    .into_tool()
    .ok()
    .map(Arc::new)
}

/// A declared remote agent and, once read from its card, its JSON-RPC endpoint.
struct Remote {
    spec: A2aAgentSpec,
    endpoint: OnceLock<String>,
}

/// One call of the tool: the remote agent, and what the caller's context lends it.
struct Call {
    remote: Arc<Remote>,
    resolver: Arc<dyn kiln_egress::resolver::NameResolver>,
    /// Where the call's progress goes (its door shows it).
    events: Option<Arc<kiln_core::context::call_events::CallEvents>>,
    /// The person behind the caller's door, who answers a remote kiln agent's approval.
    approver: Option<Arc<dyn kiln_core::context::Approver>>,
    call_id: Option<String>,
    deadline: Instant,
}

fn failed(message: String) -> ToolFailure {
    ToolFailure::visible(FailureKind::ToolError, message)
}

impl Call {
    /// The message sent, the task followed (its status changes as progress, a remote kiln
    /// agent's approval asked of the person behind the caller's door), its state and answer.
    async fn ask(&self, args: &Value) -> Result<Value, ToolFailure> {
        let remote = &self.remote;
        let name = &remote.spec.name;
        let token = match &remote.spec.bearer_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                failed(format!(
                    "a2a agent \"{name}\": set {var} to its bearer token"
                ))
            })?),
            None => None,
        };
        let rpc = |method: &'static str, params: Value| {
            let token = token.clone();
            async move {
                let endpoint = remote.endpoint(&self.resolver).await?;
                remote
                    .rpc(&endpoint, method, params, &self.resolver, token.as_deref())
                    .await
            }
        };
        let send = |text: &str, task: Option<&str>| {
            let mut message =
                json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]});
            if let Some(t) = task {
                message["taskId"] = json!(t);
            }
            json!({"message": message, "configuration": {"returnImmediately": true}})
        };
        let first = send(
            args["message"].as_str().unwrap_or_default(),
            args["task_id"].as_str(),
        );
        let mut task = rpc("SendMessage", first).await?;
        task = task.get("task").cloned().unwrap_or(task);
        // Each change of the remote task's status is the call's progress.
        let (mut shown, mut changes) = (String::new(), 0.0);
        loop {
            let line = status_line(&task);
            if line != shown {
                changes += 1.0;
                let events = self.events.as_deref();
                let _ =
                    kiln_core::context::call_events::progress(events, changes, None, Some(&line));
                shown = line;
            }
            let state = task["status"]["state"].as_str().unwrap_or_default();
            let next = match state {
                "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING" => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    rpc("GetTask", json!({"id": task["id"]})).await?
                }
                "TASK_STATE_INPUT_REQUIRED" => match self.decide(&task, args) {
                    Some(reply) => {
                        let id = task["id"].as_str().map(str::to_string);
                        let sent = rpc("SendMessage", send(reply, id.as_deref())).await?;
                        sent.get("task").cloned().unwrap_or(sent)
                    }
                    None => return Ok(answer(&task)),
                },
                _ => return Ok(answer(&task)),
            };
            if Instant::now() >= self.deadline {
                return Ok(answer(&task));
            }
            task = next;
        }
    }

    /// A remote kiln agent's approval (its question carries `{"approval": ...}`), asked of the
    /// person behind the caller's door: "yes" or "no" to send back; `None` leaves the
    /// question to the model (another agent's question, or no person to ask).
    fn decide(&self, task: &Value, args: &Value) -> Option<&'static str> {
        let approver = self.approver.as_ref()?;
        let parts = task["status"]["message"]["parts"].as_array()?;
        parts.iter().find(|p| p["data"]["approval"].is_string())?;
        let name = &self.remote.spec.name;
        let said: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let question = format!("the agent \"{name}\" asks: {}", said.join(" "));
        let label = format!("{PREFIX}{name}");
        let tool = tool_name(name);
        let ask = kiln_core::context::ApprovalAsk {
            label: &label,
            question: &question,
            tool: &tool,
            args: Some(args),
            call_id: self.call_id.as_deref(),
            ends: kiln_core::context::WaitEnds {
                deadline: Some(self.deadline),
                ..Default::default()
            },
        };
        match approver.approve_call(&ask) {
            Ok(true) => Some("yes"),
            Ok(false) => Some("no"),
            Err(_) => None,
        }
    }
}

impl Remote {
    /// Its JSON-RPC endpoint: from its card, read once.
    async fn endpoint(
        &self,
        resolver: &Arc<dyn kiln_egress::resolver::NameResolver>,
    ) -> Result<String, ToolFailure> {
        if let Some(e) = self.endpoint.get() {
            return Ok(e.clone());
        }
        let card_url = format!(
            "{}/.well-known/agent-card.json",
            self.spec.url.trim_end_matches('/')
        );
        let card = self.http(&card_url, None, resolver, None).await?;
        let e = jsonrpc_url(&card).unwrap_or_else(|| self.spec.url.clone());
        Ok(self.endpoint.get_or_init(|| e).clone())
    }

    /// A JSON-RPC call's result, or the remote error as the tool's.
    async fn rpc(
        &self,
        endpoint: &str,
        method: &str,
        params: Value,
        resolver: &Arc<dyn kiln_egress::resolver::NameResolver>,
        token: Option<&str>,
    ) -> Result<Value, ToolFailure> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let reply = self.http(endpoint, Some(&body), resolver, token).await?;
        if let Some(e) = reply.get("error") {
            return Err(failed(format!(
                "a2a agent \"{}\" refused {method}: {} ({})",
                self.spec.name,
                e["message"].as_str().unwrap_or("no message"),
                e["code"]
            )));
        }
        Ok(reply["result"].clone())
    }

    /// GET (no body) or POST `url`, through the host's resolver checked against the URL's host.
    async fn http(
        &self,
        url: &str,
        body: Option<&Value>,
        resolver: &Arc<dyn kiln_egress::resolver::NameResolver>,
        token: Option<&str>,
    ) -> Result<Value, ToolFailure> {
        let name = &self.spec.name;
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| failed(format!("a2a agent \"{name}\": {url} is not a URL: {e}")))?;
        let target = Target::of_url(&parsed)
            .ok_or_else(|| failed(format!("a2a agent \"{name}\": {url} has no host")))?;
        let scope = match &target.host {
            kiln_egress::NetHost::Name(n) => n.clone(),
            kiln_egress::NetHost::Ip(ip) => ip.to_string(),
        };
        let checked = CheckedResolver {
            target,
            rule: NetRule {
                declared: vec![None],
                granted: vec![Some(scope)],
            },
            resolver: resolver.clone(),
        };
        let tls = match parsed.scheme() {
            "http" => kiln_egress::tls::plain_client_builder(),
            _ => kiln_egress::tls::client_builder(),
        };
        let client = tls
            .redirect(reqwest::redirect::Policy::none())
            .timeout(CALL_TIMEOUT)
            .dns_resolver(Arc::new(checked))
            .no_proxy()
            .build()
            .map_err(|e| failed(format!("a2a agent \"{name}\": {e}")))?;
        let mut req = match body {
            Some(b) => client.post(parsed).json(b),
            None => client.get(parsed),
        }
        .header("A2A-Version", "1.0");
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(|e| {
            failed(format!(
                "a2a agent \"{name}\": {}",
                kiln_egress::describe(&e, url)
            ))
        })?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| failed(format!("a2a agent \"{name}\": {e}")))?
        {
            if bytes.len() + chunk.len() > MAX_REPLY {
                return Err(failed(format!(
                    "a2a agent \"{name}\": its answer is over {MAX_REPLY} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let short: String = text.chars().take(300).collect();
            return Err(failed(format!(
                "a2a agent \"{name}\": {url} answered {status}: {short}"
            )));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            failed(format!(
                "a2a agent \"{name}\": {url} did not answer JSON: {e}"
            ))
        })
    }
}

/// A task's status as one line: its state, and the agent's status message.
fn status_line(task: &Value) -> String {
    let state = task["status"]["state"]
        .as_str()
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let state = state.trim_start_matches("TASK_STATE_").to_lowercase();
    let said: Vec<&str> = (task["status"]["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten())
    .filter_map(|p| p["text"].as_str())
    .collect();
    match said.is_empty() {
        true => state,
        false => format!("{state}: {}", said.join(" ")),
    }
}

/// The JSON-RPC interface's URL on a card.
fn jsonrpc_url(card: &Value) -> Option<String> {
    card["supportedInterfaces"]
        .as_array()?
        .iter()
        .find(|i| {
            i["protocolBinding"]
                .as_str()
                .is_some_and(|b| b.eq_ignore_ascii_case("JSONRPC"))
        })
        .and_then(|i| i["url"].as_str())
        .map(str::to_string)
}

/// What the model reads of a task: its id, state, answer (the artifacts' text and data) and
/// the agent's status message (its question, when it asks one).
fn answer(task: &Value) -> Value {
    let texts = |parts: &Value| -> Vec<String> {
        parts
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| match (&p["text"], &p["data"]) {
                        (Value::String(t), _) => Some(t.clone()),
                        (_, d) if !d.is_null() => Some(d.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let answer: Vec<String> = task["artifacts"]
        .as_array()
        .map(|a| a.iter().flat_map(|a| texts(&a["parts"])).collect())
        .unwrap_or_default();
    let said = texts(&task["status"]["message"]["parts"]).join("\n");
    let state = task["status"]["state"]
        .as_str()
        .unwrap_or("TASK_STATE_UNSPECIFIED");
    let mut out = json!({
        "task_id": task["id"],
        "state": state.trim_start_matches("TASK_STATE_").to_lowercase(),
        "answer": answer.join("\n"),
    });
    if !said.is_empty() {
        out["message"] = json!(said);
    }
    out
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kiln-{now:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_reads_as_its_state_answer_and_question() {
        let task = json!({"id": "t1", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "Refund A-1?"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "partial"}, {"data": {"n": 1}}]}]});
        assert_eq!(
            answer(&task),
            json!({"task_id": "t1", "state": "input_required", "answer": "partial\n{\"n\":1}", "message": "Refund A-1?"})
        );
        let card = json!({"supportedInterfaces": [{"protocolBinding": "HTTP+JSON", "url": "r"},
            {"protocolBinding": "JSONRPC", "url": "j"}]});
        assert_eq!(jsonrpc_url(&card).as_deref(), Some("j"));
        assert_eq!(named("a2a:billing"), Some("billing"));
        assert_eq!(tool_name("billing"), "a2a__billing");
    }
}
