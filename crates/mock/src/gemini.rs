//! Gemini in `kiln mock`: `POST /{v1beta,v1}/models/{model}:generateContent` and
//! `:streamGenerateContent` (`?alt=sse`), the request checked as the Gemini API checks it
//! (fields read in either protobuf-JSON spelling, `functionCall` / `function_call`), the turn
//! rendered by `gemini_render`, errors in Google's shape `{error: {code, message, status}}`.

pub mod render;

use super::{Shared, Wire, client_key, fault_response, json_response, next_turn};
use crate::render::Reply;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A rejected request: status and Google's error body.
pub type Rejection = (u16, Value);

pub use super::errors::{field, gemini_error as error, gemini_status_name as status_name};

fn reject(status: u16, message: impl Into<String>) -> Rejection {
    (status, error(status, message))
}

/// Serves `/{version}/models/{model}:{method}`.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    Path(call): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    version: &'static str,
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let path = format!("/{version}/models/{call}");
    super::record(&shared, json!({"path": path}), &headers, &parsed, &body);
    let refuse = |(status, body): Rejection| {
        json_response(status, body, &[("x-should-retry", "false".into())])
    };
    let (model, method) = call.split_once(':').unwrap_or((call.as_str(), ""));
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        other => {
            return refuse(reject(
                404,
                format!(
                    "Method not found: models/{model}:{other} (kiln mock serves generateContent and streamGenerateContent)"
                ),
            ));
        }
    };
    let sse = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "alt=sse"));
    if stream && !sse {
        return refuse(reject(
            400,
            "kiln mock streams Server-Sent Events only: add ?alt=sse",
        ));
    }
    let Ok(body) = parsed else {
        return refuse(reject(
            400,
            "Invalid JSON payload received. Unexpected token.",
        ));
    };
    let keyed = headers.contains_key("x-goog-api-key")
        || uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("key=")));
    if shared.scenario.require_auth && !keyed {
        return refuse(reject(
            403,
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ));
    }
    if let Err(r) = check(&body, model) {
        return refuse(r);
    }
    let (n, mut turn) = match next_turn(&shared, client_key(&headers), &body, Some(model)) {
        Ok(t) => t,
        Err(served) => {
            return refuse(reject(
                400,
                format!("kiln-mock: scenario exhausted after {served} turns"),
            ));
        }
    };
    if let Some(ms) = turn.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if turn.reset_connection {
        super::serve::reset_connection().await;
    }
    if let Some(f) = &turn.fault {
        return fault_response(Wire::Gemini, f);
    }
    super::count_usage(&shared.scenario, &mut turn, &body);
    match render::reply(&turn, n, model, stream) {
        Reply::Json(v) => json_response(200, v, &[]),
        Reply::Raw(text) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
        Reply::Stream(chunks) => {
            let delay = Duration::from_millis(shared.scenario.chunk_delay_ms);
            let stream =
                futures_util::stream::unfold(chunks.into_iter(), move |mut it| async move {
                    let next = it.next()?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok::<Bytes, std::convert::Infallible>(Bytes::from(next)), it))
                });
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream),
            )
                .into_response()
        }
    }
}

/// Whether `name` is a function name Gemini takes.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    (1..=64).contains(&name.len())
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Checks a `GenerateContentRequest` for `model` as the Gemini API does.
pub fn check(body: &Value, model: &str) -> Result<(), Rejection> {
    check_tools(body)?;
    super::tool_choice::gemini(body)?;
    let contents = field(body, "contents")
        .as_array()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            reject(
                400,
                "* GenerateContentRequest.contents: contents is not specified",
            )
        })?;
    for (i, c) in contents.iter().enumerate() {
        let role = field(c, "role").as_str().unwrap_or("user");
        if !matches!(role, "user" | "model") {
            return Err(reject(400, "Please use a valid role: user, model."));
        }
        if field(c, "parts").as_array().is_none_or(|p| p.is_empty()) {
            return Err(reject(
                400,
                format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
                ),
            ));
        }
        for (j, p) in field(c, "parts")
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(problem) = super::parts::gemini(i, j, p) {
                return Err(reject(400, problem));
            }
        }
    }
    check_responses(contents)?;
    if model.starts_with("gemini-3") {
        check_signatures(contents)?;
    }
    Ok(())
}

fn check_tools(body: &Value) -> Result<(), Rejection> {
    for (i, tool) in field(body, "tools")
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let decls = field(tool, "functionDeclarations").as_array();
        for (j, d) in decls.into_iter().flatten().enumerate() {
            let at = format!("GenerateContentRequest.tools[{i}].function_declarations[{j}]");
            if !field(d, "name").as_str().is_some_and(valid_name) {
                return Err(reject(
                    400,
                    format!(
                        "* {at}.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64."
                    ),
                ));
            }
            let schema = field(d, "parametersJsonSchema");
            if !schema.is_null() && !field(d, "parameters").is_null() {
                return Err(reject(
                    400,
                    format!("* {at}: parameters and parameters_json_schema are mutually exclusive"),
                ));
            }
            if !schema.is_null() && schema["type"] != "object" {
                return Err(reject(
                    400,
                    format!("* {at}.parameters_json_schema: the schema must describe an object"),
                ));
            }
        }
    }
    Ok(())
}

/// The `functionCall` (or `functionResponse`) objects of a content's parts.
fn of_kind<'v>(content: &'v Value, kind: &str) -> Vec<&'v Value> {
    field(content, "parts")
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| field(p, kind))
        .filter(|v| v.is_object())
        .collect()
}

/// Each turn of function responses answers the function call turn just before it: as many
/// responses as calls, each naming a call (and its id, where ids are given).
fn check_responses(contents: &[Value]) -> Result<(), Rejection> {
    for (i, c) in contents.iter().enumerate() {
        let responses = of_kind(c, "functionResponse");
        if responses.is_empty() {
            continue;
        }
        let calls = match i.checked_sub(1).map(|p| &contents[p]) {
            Some(prev) if field(prev, "role") == "model" => of_kind(prev, "functionCall"),
            _ => Vec::new(),
        };
        if calls.len() != responses.len() {
            return Err(reject(
                400,
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
            ));
        }
        for (j, r) in responses.iter().enumerate() {
            let matched = calls.iter().any(|c| {
                field(c, "name") == field(r, "name")
                    && (field(r, "id").is_null() || field(c, "id") == field(r, "id"))
            });
            if !matched {
                return Err(reject(
                    400,
                    format!(
                        "* GenerateContentRequest.contents[{i}].parts[{j}].function_response: no function call named {} (id {}) in the function call turn before it",
                        field(r, "name"),
                        field(r, "id")
                    ),
                ));
            }
            if !field(r, "response").is_object() {
                return Err(reject(
                    400,
                    format!(
                        "* GenerateContentRequest.contents[{i}].parts[{j}].function_response.response: must be an object"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Gemini 3 refuses a function call turn of the current turn (since the last user text)
/// whose first function call part has no thought signature.
fn check_signatures(contents: &[Value]) -> Result<(), Rejection> {
    let start = contents
        .iter()
        .rposition(|c| field(c, "role") != "model" && of_kind(c, "functionResponse").is_empty())
        .unwrap_or(0);
    for c in &contents[start..] {
        let parts = field(c, "parts").as_array().into_iter().flatten();
        let first_call = parts
            .enumerate()
            .find(|(_, p)| field(p, "functionCall").is_object());
        if let Some((pos, p)) = first_call
            && !field(p, "thoughtSignature").is_string()
        {
            return Err(reject(
                400,
                format!(
                    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                    field(field(p, "functionCall"), "name")
                        .as_str()
                        .unwrap_or(""),
                    pos + 1
                ),
            ));
        }
    }
    Ok(())
}
