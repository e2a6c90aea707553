//! Asking the caller while a tool runs: `sample` (its model), `elicit` (a form for the person
//! behind it), `roots()`, and `ask_client(#{ key: request, ... })` for several questions at
//! once. Each needs its capability (`sampling`, `elicitation`, `roots`) and a caller that can
//! be asked (an MCP client). A caller that answers in a retried request (MCP 2026-07-28) stops
//! the handler here; the door sends the questions, and the retried call runs the handler again
//! from the top with the answers, so the same questions come back answered.

use crate::{host, sandbox};
use kiln_core::context::call_events::{Answer, AskError, ClientAsk, FormRequest, SampleRequest};
use rhai::{Dynamic, Engine, EvalAltResult, Map, Position};
use serde_json::{Value, json};
use std::time::Duration;

/// What stops a handler whose caller answers in a retried request.
pub const INPUT_TOKEN: &str = "input_required";
/// What stops a handler whose caller lacks a capability it must use (then the capability).
pub const MISSING_TOKEN: &str = "missing_capability:";
/// Default and largest `max_tokens` of a question for the model.
const SAMPLE_TOKENS: (i64, i64) = (512, 8192);
/// How long a question waits when the call has no deadline.
const ASK_WAIT: Duration = Duration::from_secs(120);
/// A request value made by `elicit_request`, `sample_request` or `roots_request`.
const REQUEST_KEY: &str = "$ask";

fn refused(func: &str, what: &str, why: &str) -> Box<EvalAltResult> {
    host::denied(format!("{func}(\"{what}\") refused: {why}"))
}

/// What a function asks for, as its refusals name it.
fn asked_for(func: &str) -> &'static str {
    match func {
        "sample" => "the client's model",
        "elicit" => "a form",
        "roots" => "the client's roots",
        _ => "the client",
    }
}

/// Asks the caller; answers in order (`()` where it does not offer the kind, when `lenient`).
fn ask(
    func: &str,
    asks: Vec<(Option<String>, ClientAsk)>,
    lenient: bool,
) -> Result<Vec<Value>, Box<EvalAltResult>> {
    let what = asked_for(func);
    let events = host::current_events().ok_or_else(|| {
        let can = match func {
            "sample" => "an MCP client that supports sampling can ask its model",
            "elicit" => {
                "an MCP client that supports elicitation, or an A2A task's client, can show a form"
            }
            _ => "an MCP client can ask it",
        };
        refused(
            func,
            what,
            &format!("only a tool called by {can} (not kiln call, an agent run or the HTTP API)"),
        )
    })?;
    let timeout = sandbox::remaining().map_or(ASK_WAIT, |left| left.min(ASK_WAIT));
    let answers = events.ask(asks, lenient, timeout);
    sandbox::check_stop()?;
    match answers {
        Ok(answers) => answers
            .into_iter()
            .map(|a| match a {
                Answer::Value(v) => Ok(v),
                Answer::Unsupported(_) if lenient => Ok(Value::Null),
                Answer::Unsupported(why) => Err(refused(func, what, &why)),
            })
            .collect(),
        Err(AskError::Refused(why)) => Err(refused(func, what, &why)),
        Err(AskError::InputRequired) => {
            Err(EvalAltResult::ErrorTerminated(INPUT_TOKEN.into(), Position::NONE).into())
        }
        Err(AskError::MissingCapability(cap)) => Err(EvalAltResult::ErrorTerminated(
            format!("{MISSING_TOKEN}{cap}").into(),
            Position::NONE,
        )
        .into()),
    }
}

fn gate(func: &str, ask: &ClientAsk) -> Result<(), Box<EvalAltResult>> {
    host::gate(func, ask.capability(), asked_for(func), |_| true).map(|_| ())
}

/// `sample(prompt[, #{ system, max_tokens }])`: the caller's model's answer, as text.
fn sample(prompt: &str, opts: Map) -> Result<String, Box<EvalAltResult>> {
    let request = ClientAsk::Sample(sample_request(prompt, opts)?);
    gate("sample", &request)?;
    let answer = ask("sample", vec![(None, request)], false)?;
    Ok(answer
        .into_iter()
        .next()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default())
}

fn sample_request(prompt: &str, opts: Map) -> Result<SampleRequest, Box<EvalAltResult>> {
    let mut request = SampleRequest::new(prompt, SAMPLE_TOKENS.0 as u32);
    for (key, value) in opts {
        match key.as_str() {
            "system" => request.system = Some(value.to_string()),
            "max_tokens" => match value.as_int() {
                Ok(n) if (1..=SAMPLE_TOKENS.1).contains(&n) => request.max_tokens = n as u32,
                _ => {
                    return Err(format!(
                        "sample(): max_tokens must be an integer from 1 to {}",
                        SAMPLE_TOKENS.1
                    )
                    .into());
                }
            },
            other => {
                return Err(
                    format!("sample(): unknown option \"{other}\" (system, max_tokens)").into(),
                );
            }
        }
    }
    Ok(request)
}

/// `elicit(message, fields)`: shows the person behind the client a form and returns
/// `#{ action, content }`.
fn elicit(message: &str, fields: Map) -> Result<Map, Box<EvalAltResult>> {
    let request = ClientAsk::Form(form(message, fields)?);
    gate("elicit", &request)?;
    let answer = ask("elicit", vec![(None, request)], false)?;
    let value = answer.into_iter().next().unwrap_or(Value::Null);
    match crate::convert::to_dynamic(&value).try_cast::<Map>() {
        Some(m) => Ok(m),
        None => Err(refused(
            "elicit",
            "a form",
            "the client's answer was not a form result",
        )),
    }
}

fn form(message: &str, fields: Map) -> Result<FormRequest, Box<EvalAltResult>> {
    let schema = form_schema(fields).map_err(|e| format!("elicit(): {e}"))?;
    Ok(FormRequest {
        message: message.to_string(),
        schema,
    })
}

/// The form's JSON Schema from `elicit`'s fields: each a type name or a map of its schema
/// (`required: true` moves to the object's `required`).
fn form_schema(fields: Map) -> Result<Value, String> {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, field) in fields {
        let mut schema = match field.clone().into_immutable_string() {
            Ok(ty) => json!({ "type": ty.as_str() }),
            Err(_) => {
                crate::convert::to_json(&field).map_err(|e| format!("field \"{name}\": {e}"))?
            }
        };
        let Some(obj) = schema.as_object_mut() else {
            return Err(format!(
                "field \"{name}\" must be a type name or a map of its schema"
            ));
        };
        if obj.remove("required") == Some(Value::Bool(true)) {
            required.push(name.to_string());
        }
        if !obj.contains_key("type") {
            return Err(format!("field \"{name}\" has no type"));
        }
        properties.insert(name.to_string(), schema);
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    Ok(schema)
}

/// `roots()`: the client's roots, as `[#{ uri, name }]`.
fn roots() -> Result<Dynamic, Box<EvalAltResult>> {
    gate("roots", &ClientAsk::Roots)?;
    let answer = ask("roots", vec![(None, ClientAsk::Roots)], false)?;
    Ok(crate::convert::to_dynamic(
        &answer.into_iter().next().unwrap_or(Value::Null),
    ))
}

/// A request value for `ask_client`.
fn request(kind: &str, body: Value) -> Map {
    let mut m = crate::convert::to_dynamic(&body)
        .try_cast::<Map>()
        .unwrap_or_default();
    m.insert(REQUEST_KEY.into(), kind.into());
    m
}

/// The request `ask_client` got under `key`.
fn parse_request(key: &str, value: &Dynamic) -> Result<ClientAsk, Box<EvalAltResult>> {
    let bad = || -> Box<EvalAltResult> {
        format!("ask_client(): \"{key}\" must be elicit_request(...), sample_request(...) or roots_request()").into()
    };
    let m = value.clone().try_cast::<Map>().ok_or_else(bad)?;
    let kind = m.get(REQUEST_KEY).map(|k| k.to_string()).ok_or_else(bad)?;
    let text = |k: &str| m.get(k).map(|v| v.to_string()).unwrap_or_default();
    match kind.as_str() {
        "form" => {
            let fields = m
                .get("fields")
                .and_then(|f| f.clone().try_cast::<Map>())
                .unwrap_or_default();
            Ok(ClientAsk::Form(form(&text("message"), fields)?))
        }
        "sample" => {
            let opts = m
                .get("options")
                .and_then(|f| f.clone().try_cast::<Map>())
                .unwrap_or_default();
            Ok(ClientAsk::Sample(sample_request(&text("prompt"), opts)?))
        }
        "roots" => Ok(ClientAsk::Roots),
        _ => Err(bad()),
    }
}

/// `ask_client(#{ key: request, ... })`: asks every question at once and returns the answers
/// by key (a form's `#{ action, content }`, the model's text, the roots; `()` for a kind the
/// client does not offer).
fn ask_client(requests: Map) -> Result<Map, Box<EvalAltResult>> {
    let mut asks = Vec::new();
    for (key, value) in &requests {
        let request = parse_request(key, value)?;
        gate("ask_client", &request)?;
        asks.push((Some(key.to_string()), request));
    }
    let keys: Vec<String> = asks.iter().filter_map(|(k, _)| k.clone()).collect();
    let answers = ask("ask_client", asks, true)?;
    Ok(keys
        .into_iter()
        .zip(answers)
        .map(|(k, v)| (k.into(), crate::convert::to_dynamic(&v)))
        .collect())
}

/// `background()`: a caller that can poll a task (an MCP client with the tasks extension,
/// calling a tool declared `.task(..., #{ start: "background" })`) gets one now, and the rest
/// of the handler runs in it; false where the call just goes on.
fn background() -> bool {
    host::current_events().is_some_and(|events| events.background())
}

/// Registers the asking functions.
pub fn register(engine: &mut Engine) {
    engine.register_fn("background", background);
    engine.register_fn("sample", |prompt: &str| sample(prompt, Map::new()));
    engine.register_fn("sample", sample);
    engine.register_fn("elicit", elicit);
    engine.register_fn("roots", roots);
    engine.register_fn("ask_client", ask_client);
    // `form_request` is the deprecated spelling (renames.rs).
    for name in ["elicit_request", "form_request"] {
        engine.register_fn(name, |message: &str, fields: Map| {
            request("form", json!({ "message": message, "fields": crate::convert::to_json(&Dynamic::from_map(fields)).unwrap_or(Value::Null) }))
        });
    }
    engine.register_fn("sample_request", |prompt: &str| {
        request("sample", json!({ "prompt": prompt }))
    });
    engine.register_fn("sample_request", |prompt: &str, options: Map| {
        request("sample", json!({ "prompt": prompt, "options": crate::convert::to_json(&Dynamic::from_map(options)).unwrap_or(Value::Null) }))
    });
    engine.register_fn("roots_request", || request("roots", json!({})));
}
