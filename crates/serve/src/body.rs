//! Request bodies: JSON only (which also keeps browsers' simple cross-site posts out), within
//! the size limit, with errors in OpenAI's shape.

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;
use std::sync::Arc;

/// A JSON object body, sent as `application/json` (or a `+json` type): a browser sends
/// `text/plain` and form bodies to another site without asking first, so no other type is
/// taken (`415`).
pub struct JsonBody(pub Value);

impl FromRequest<Arc<AppState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        match content_type(req.headers()) {
            Some(t) if is_json(&t) => {}
            Some(t) => return Err(not_json(&format!("Content-Type: {t}"))),
            None => return Err(not_json("no Content-Type")),
        }
        let value = read_json(req, state).await?;
        if !value.is_object() {
            return Err(ApiError::bad_request("", "the body must be a JSON object"));
        }
        Ok(JsonBody(value))
    }
}

/// A `POST` that takes no body (a cancel): nothing, or a JSON body it ignores. A body of
/// another type (or of none named) is refused with `415`, as [`JsonBody`] refuses it.
pub struct NoBody;

impl<S: Send + Sync> FromRequestParts<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let headers = &parts.headers;
        match content_type(headers) {
            Some(t) if is_json(&t) => Ok(NoBody),
            Some(t) => Err(not_json(&format!("Content-Type: {t}"))),
            None if has_body(headers) => Err(not_json("a body with no Content-Type")),
            None => Ok(NoBody),
        }
    }
}

/// The `Content-Type` header as text (`None` when absent).
fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
}

/// `application/json` or `application/*+json`, with any parameters (`; charset=utf-8`).
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.len() > 5 && sub.ends_with("+json"))
}

/// Whether the request says it carries a body (a length over 0, or chunks).
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// `415`: the request's body is not JSON; `what` says what it was.
fn not_json(what: &str) -> ApiError {
    let shown: String = what.chars().take(120).collect();
    ApiError::unsupported_media_type(format!(
        "this endpoint takes JSON bodies only (Content-Type: application/json), not {shown}"
    ))
}

/// The body as JSON: a body over the limit is a JSON `413` (axum's own is plain text), and an
/// object naming a key twice is refused (serde_json would keep the last one silently, so
/// `{"decision": "deny", "decision": "approve"}` would approve).
async fn read_json(req: Request, state: &Arc<AppState>) -> Result<Value, ApiError> {
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(state.options.max_body)
        } else {
            ApiError::bad_request("", format!("could not read the body: {e}"))
        }
    })?;
    parse_json(&bytes)
}

/// `bytes` as JSON, refusing an object with a key twice.
pub fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = serde::Deserialize::deserialize(&mut de).and_then(|Strict(v)| {
        de.end()?;
        Ok(v)
    });
    parsed.map_err(|e| {
        ApiError::bad_request(
            "",
            format!(
                "the body is not valid JSON: line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        )
    })
}

/// A JSON value whose objects name no key twice.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                let shown: String = key.chars().take(64).collect();
                return Err(serde::de::Error::custom(format!(
                    "the key {shown:?} is given twice (each key at most once)"
                )));
            }
            let Strict(v) = map.next_value()?;
            object.insert(key, v);
        }
        Ok(Value::Object(object))
    }
}

/// An optional array of strings at `param` (`caps`).
pub fn string_list(v: &Value, param: &str) -> Result<Option<Vec<String>>, ApiError> {
    match v {
        Value::Null => Ok(None),
        Value::Array(list) => list
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(param, format!("{param} must be strings"))),
        _ => Err(ApiError::bad_request(
            param,
            format!("{param} must be an array of strings"),
        )),
    }
}

/// An optional flag at `param` (`kiln.events`); false when absent.
pub fn flag(v: &Value, param: &str) -> Result<bool, ApiError> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        _ => Err(ApiError::bad_request(
            param,
            format!("{param} must be true or false"),
        )),
    }
}

/// An optional object at `param` (`context`); empty when absent.
pub fn object(v: &Value, param: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    match v {
        Value::Null => Ok(serde_json::Map::new()),
        Value::Object(m) => Ok(m.clone()),
        _ => Err(ApiError::bad_request(
            param,
            format!("{param} must be an object"),
        )),
    }
}

fn string_field(body: &Value, field: &str, required: bool) -> Result<Option<String>, ApiError> {
    match &body[field] {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Null if !required => Ok(None),
        Value::Null => Err(ApiError::bad_request(field, format!("{field} is required"))),
        _ => Err(ApiError::bad_request(
            field,
            format!("{field} must be a string"),
        )),
    }
}

/// The run a `POST /v1/runs` body asks for, and whether to wait for its end.
pub(crate) fn parse(body: &Value) -> Result<(crate::launch::RunRequest, bool), ApiError> {
    let caps = string_list(&body["caps"], "caps")?;
    let context = object(&body["context"], "context")?;
    let wait = match &body["wait"] {
        Value::Null => true,
        Value::Bool(b) => *b,
        _ => return Err(ApiError::bad_request("wait", "wait must be true or false")),
    };
    let req = crate::launch::RunRequest {
        agent: string_field(body, "agent", true)?.unwrap_or_default(),
        prompt: string_field(body, "input", true)?.unwrap_or_default(),
        caps,
        caps_param: "caps",
        context,
        actor: string_field(body, "actor", false)?,
        session: string_field(body, "session", false)?,
        stream: true,
        budget: budget(&body["budget"])?,
        ..crate::launch::RunRequest::default()
    };
    Ok((req, wait))
}

/// The run's `budget` (`{"tool_calls": 5, "cost_usd": 0.5, ...}`), within the agent's own.
pub(crate) fn budget(v: &Value) -> Result<Option<kiln_registry::contract::Budget>, ApiError> {
    if v.is_null() {
        return Ok(None);
    }
    let bad = |m: String| ApiError::bad_request("budget", m);
    let Value::Object(limits) = v else {
        return Err(bad("budget must be an object of limits".into()));
    };
    let text: Vec<String> = limits
        .iter()
        .map(|(k, v)| match v {
            Value::Number(n) => Ok(format!("{k}={n}")),
            _ => Err(bad(format!("budget.{k} must be a number"))),
        })
        .collect::<Result<_, _>>()?;
    kiln_registry::contract::Budget::parse(&text.join(","))
        .map(Some)
        .map_err(bad)
}

/// `body[field]` as a number, if given.
pub(crate) fn number(body: &Value, field: &str) -> Result<Option<f64>, ApiError> {
    match &body[field] {
        Value::Null => Ok(None),
        v => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(field, format!("{field} must be a number"))),
    }
}

/// `body[field]` as a positive integer (a token limit), if given.
pub(crate) fn positive(body: &Value, field: &str) -> Result<Option<u32>, ApiError> {
    number(body, field)?
        .map(|n| {
            (n >= 1.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX))
                .then_some(n as u32)
                .ok_or_else(|| {
                    ApiError::bad_request(field, format!("{field} must be a positive integer"))
                })
        })
        .transpose()
}
