//! A tool's questions for the MCP client on a 2025-11-25 session, asked as requests while the
//! call runs (from the call's own task, so they travel with it): its model
//! (`sampling/createMessage`), the person behind it (`elicitation/create`) and its roots
//! (`roots/list`). A 2026-07-28 client is asked through an input-required result instead
//! ([`crate::ask::rounds`]).

// Sampling and roots are deprecated by SEP-2577 (after 2026-07-28), which still asks for them.
#![allow(deprecated)]

use kiln_core::context::call_events::{Answer, AskError, ClientAsk, FormRequest, SampleRequest};
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, SamplingMessage, ServerRequest,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use std::time::Duration;

/// A tool's questions, how long they may wait, and where the answers go.
pub struct Question {
    pub asks: Vec<(String, ClientAsk)>,
    pub wait: Duration,
    pub answer: std::sync::mpsc::SyncSender<Result<Vec<Answer>, AskError>>,
}

/// What this call's client can be asked, and why not where it cannot.
#[derive(Debug, Clone, Default)]
pub struct Askable {
    no_sampling: Option<String>,
    no_forms: Option<String>,
    no_roots: Option<String>,
}

impl Askable {
    /// What the client of `cx` declared it can answer.
    pub fn of(cx: &RequestContext<RoleServer>) -> Askable {
        let caps = cx.client_capabilities();
        let caps = caps.as_ref();
        let lacks = |has: bool, what: &str| {
            (!has).then(|| format!("the MCP client does not support {what}"))
        };
        Askable {
            no_sampling: lacks(caps.is_some_and(|c| c.sampling.is_some()), "sampling"),
            no_forms: lacks(caps.is_some_and(|c| c.elicitation.is_some()), "elicitation"),
            no_roots: lacks(caps.is_some_and(|c| c.roots.is_some()), "roots"),
        }
    }

    /// Why the client cannot answer `ask`, if it cannot.
    pub fn why_not(&self, ask: &ClientAsk) -> Option<&String> {
        match ask {
            ClientAsk::Form(_) => self.no_forms.as_ref(),
            ClientAsk::Sample(_) => self.no_sampling.as_ref(),
            ClientAsk::Roots => self.no_roots.as_ref(),
        }
    }
}

/// Asks each question in turn; the first failure answers them all.
pub async fn answer(
    cx: &RequestContext<RoleServer>,
    askable: &Askable,
    question: Question,
) -> Result<Vec<Answer>, AskError> {
    let mut answers = Vec::with_capacity(question.asks.len());
    for (_, ask) in question.asks {
        if let Some(why) = askable.why_not(&ask) {
            answers.push(Answer::Unsupported(why.clone()));
            continue;
        }
        let answered = match ask {
            ClientAsk::Form(form) => ask_form(cx, form, question.wait).await,
            ClientAsk::Sample(sample) => ask_model(cx, sample, question.wait)
                .await
                .map(Value::String),
            ClientAsk::Roots => list_roots(cx, question.wait).await,
        };
        answers.push(Answer::Value(answered.map_err(AskError::Refused)?));
    }
    Ok(answers)
}

/// Waits up to `wait` for `request`, or for the call's cancellation.
async fn send(
    cx: &RequestContext<RoleServer>,
    request: ServerRequest,
    wait: Duration,
    what: &str,
) -> Result<ClientResult, String> {
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, cx.peer.send_request(request)) => asked,
        () = cx.ct.cancelled() => return Err("the call was cancelled".into()),
    };
    match asked {
        Err(_) => Err(format!("{what} did not answer within {} s", wait.as_secs())),
        Ok(Err(e)) => Err(format!("the client did not answer: {e}")),
        Ok(Ok(result)) => Ok(result),
    }
}

/// The form request of `form` (its fields checked against MCP's form schema).
pub fn form_params(form: FormRequest) -> Result<ElicitRequestParams, String> {
    let requested_schema: ElicitationSchema = serde_json::from_value(form.schema)
        .map_err(|e| format!("the fields are not an MCP form (primitive fields only): {e}"))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message,
        requested_schema,
    })
}

/// Shows the client a form (`elicitation/create`); `{"action", "content"}`.
async fn ask_form(
    cx: &RequestContext<RoleServer>,
    form: FormRequest,
    wait: Duration,
) -> Result<Value, String> {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(form_params(form)?));
    match send(cx, request, wait, "nobody").await? {
        ClientResult::ElicitResult(answer) => Ok(form_answer(answer.action, answer.content)),
        _ => Err("the client's answer was not an elicitation result".into()),
    }
}

/// A form's answer as a script sees it.
pub fn form_answer(action: ElicitationAction, content: Option<Value>) -> Value {
    let action = match action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        _ => "cancel",
    };
    json!({ "action": action, "content": content })
}

/// The sampling request of `sample`.
#[allow(deprecated)] // sampling is deprecated by the 2026 revision, still asked through it
pub fn sample_params(sample: SampleRequest) -> CreateMessageRequestParams {
    let mut params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(sample.prompt)],
        sample.max_tokens,
    );
    params.system_prompt = sample.system;
    params
}

/// Asks the client's model (`sampling/createMessage`); its text answer.
#[allow(deprecated)] // sampling is deprecated by the 2026 revision, still served to 2025 sessions
async fn ask_model(
    cx: &RequestContext<RoleServer>,
    sample: SampleRequest,
    wait: Duration,
) -> Result<String, String> {
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, cx.peer.create_message(sample_params(sample))) => asked,
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

/// The client's roots (`roots/list`), as `[{"uri", "name"}]`.
async fn list_roots(cx: &RequestContext<RoleServer>, wait: Duration) -> Result<Value, String> {
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, cx.peer.list_roots()) => asked,
        () = cx.ct.cancelled() => return Err("the call was cancelled".into()),
    };
    match asked {
        Err(_) => Err(format!(
            "the client did not list its roots within {} s",
            wait.as_secs()
        )),
        Ok(Err(e)) => Err(format!("the client did not answer: {e}")),
        Ok(Ok(result)) => serde_json::to_value(result.roots).map_err(|e| e.to_string()),
    }
}
