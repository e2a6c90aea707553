//! Reading the A2A door's parameters, the same for both bindings: ProtoJSON's leniencies (the
//! proto's snake_case field names besides camelCase, `null` as absent, numbers and booleans as
//! strings from a query) and strictness where it matters (every error names the argument's
//! path, e.g. `params.message.parts[0]`).

use crate::table::approvals::Decision;
use kiln_a2a::error::ErrorKind;
use kiln_a2a::{A2aError, Message, Part, PushConfig, TaskState};
use serde_json::{Map, Value};

/// The most parts one message may carry.
const MAX_PARTS: usize = 256;

/// `v` with `null` members dropped and snake_case keys renamed to camelCase, recursively
/// (but not inside `data` and `metadata`, which are the sender's own JSON).
pub(crate) fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, val) in map {
                if val.is_null() {
                    continue;
                }
                let key = camel(k);
                let val = match key.as_str() {
                    "data" | "metadata" => val.clone(),
                    _ => normalize(val),
                };
                out.insert(key, val);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn camel(key: &str) -> String {
    if !key.contains('_') || key.starts_with('_') {
        return key.to_string();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        match (c, upper) {
            ('_', _) => upper = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// The params object (already normalized); anything else is refused.
pub(crate) fn object<'a>(
    params: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, A2aError> {
    params
        .as_object()
        .ok_or_else(|| A2aError::invalid_params(path, format!("{path} must be a JSON object")))
}

/// An optional string member.
pub(crate) fn string(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, A2aError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} must not be empty"),
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} must be a string"),
        )),
    }
}

/// A required string member.
pub(crate) fn required(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<String, A2aError> {
    string(map, key, path)?.ok_or_else(|| {
        A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} is required"),
        )
    })
}

/// An optional integer member (a string of digits from a query counts).
pub(crate) fn integer(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<i64>, A2aError> {
    let bad = || {
        A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} must be an integer"),
        )
    };
    match map.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(bad),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

/// An optional non-negative integer member, as a count.
pub(crate) fn count(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<usize>, A2aError> {
    match integer(map, key, path)? {
        None => Ok(None),
        Some(n) if n < 0 => Err(A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} must not be negative (got {n})"),
        )),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// An optional boolean member (`"true"`/`"false"` from a query count).
pub(crate) fn boolean(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<bool>, A2aError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(_) => Err(A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key} must be true or false"),
        )),
    }
}

/// A task state by its proto name (`TASK_STATE_WORKING`) or its short one (`working`).
pub(crate) fn state(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<TaskState>, A2aError> {
    let Some(name) = string(map, key, path)? else {
        return Ok(None);
    };
    let proto = match name.starts_with("TASK_STATE_") {
        true => name.clone(),
        false => format!("TASK_STATE_{}", name.to_uppercase().replace('-', "_")),
    };
    TaskState::from_name(&proto).map(Some).ok_or_else(|| {
        A2aError::invalid_params(
            &format!("{path}.{key}"),
            format!("{path}.{key}: \"{name}\" is not a task state (TASK_STATE_WORKING, TASK_STATE_COMPLETED, ...)"),
        )
    })
}

/// A client's message at `path` (normalized): an id, the user's role and at least one part,
/// each part holding exactly one of `text`, `raw`, `url` or `data`.
pub(crate) fn message(v: &Value, path: &str) -> Result<Message, A2aError> {
    let map = object(v, path)?;
    required(map, "messageId", path)?;
    match map.get("role").and_then(Value::as_str) {
        Some("ROLE_USER" | "user") => {}
        Some(other) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.role"),
                format!("{path}.role: a client's message is ROLE_USER, not \"{other}\""),
            ));
        }
        None => {
            return Err(A2aError::invalid_params(
                &format!("{path}.role"),
                format!("{path}.role is required (ROLE_USER)"),
            ));
        }
    }
    string(map, "taskId", path)?;
    string(map, "contextId", path)?;
    let parts = match map.get("parts") {
        Some(Value::Array(parts)) if !parts.is_empty() && parts.len() <= MAX_PARTS => parts,
        Some(Value::Array(parts)) if parts.is_empty() => {
            return Err(A2aError::invalid_params(
                &format!("{path}.parts"),
                format!("{path}.parts must hold at least one part"),
            ));
        }
        Some(Value::Array(_)) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.parts"),
                format!("{path}.parts holds more than {MAX_PARTS} parts"),
            ));
        }
        _ => {
            return Err(A2aError::invalid_params(
                &format!("{path}.parts"),
                format!("{path}.parts is required: an array of parts"),
            ));
        }
    };
    for (i, p) in parts.iter().enumerate() {
        let at = format!("{path}.parts[{i}]");
        let part: Part = serde_json::from_value(p.clone())
            .map_err(|e| A2aError::invalid_params(&at, format!("{at}: {e}")))?;
        if part.contents() != 1 {
            return Err(A2aError::invalid_params(
                &at,
                format!("{at} must hold exactly one of text, raw, url or data"),
            ));
        }
    }
    let mut m = v.clone();
    if let Some(o) = m.as_object_mut() {
        o.insert("role".into(), Value::from("ROLE_USER"));
    }
    serde_json::from_value(m).map_err(|e| A2aError::invalid_params(path, format!("{path}: {e}")))
}

/// The files a message carries, as the model's attachments: a `raw` part (base64, with its
/// `mediaType`) and a `url` part of a type the model takes (by its extension); another URL
/// stays in the prompt as text.
pub(crate) fn attachments(
    message: &Message,
    path: &str,
) -> Result<Vec<kiln_providers::Attachment>, A2aError> {
    let mut out = Vec::new();
    for (i, p) in message.parts.iter().enumerate() {
        let at = format!("{path}.parts[{i}]");
        let found = match (&p.raw, &p.url) {
            (Some(raw), _) => {
                let media = p.media_type.as_deref().ok_or_else(|| {
                    A2aError::invalid_params(&at, format!("{at}: a raw part needs its mediaType"))
                })?;
                let url = format!("data:{media};base64,{raw}");
                let a = kiln_providers::Attachment::from_data_url(&url)
                    .map_err(|e| A2aError::invalid_params(&at, format!("{at}: {e}")))?;
                Some(a)
            }
            (None, Some(url)) => kiln_providers::Attachment::from_url(url),
            (None, None) => None,
        };
        if let Some(mut a) = found {
            a.filename = p.filename.clone();
            out.push(a);
        }
    }
    Ok(out)
}

/// What a send asks besides its message (`params.configuration`).
#[derive(Default)]
pub(crate) struct SendOptions {
    /// Return at once, not when the task's turn ends.
    pub return_immediately: bool,
    /// History messages in the returned task.
    pub history_length: Option<usize>,
    /// A push config to add to the task.
    pub push: Option<PushConfig>,
}

/// A send's configuration; output modes the agent cannot answer in are refused.
pub(crate) fn send_options(params: &Map<String, Value>) -> Result<SendOptions, A2aError> {
    let Some(conf) = params.get("configuration") else {
        return Ok(SendOptions::default());
    };
    let path = "params.configuration";
    let conf = object(conf, path)?;
    if let Some(modes) = conf.get("acceptedOutputModes") {
        let modes = modes.as_array().ok_or_else(|| {
            A2aError::invalid_params(
                &format!("{path}.acceptedOutputModes"),
                "acceptedOutputModes must be an array of media types",
            )
        })?;
        let ours = |m: &&Value| {
            m.as_str().is_some_and(|m| {
                super::card::OUTPUT_MODES.contains(&m) || m == "*/*" || m == "text/*"
            })
        };
        if !modes.is_empty() && !modes.iter().any(|m| ours(&m)) {
            return Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "Incompatible content types: content type not supported: the agent answers in {}",
                    super::card::OUTPUT_MODES.join(", ")
                ),
            ));
        }
    }
    let push = conf
        .get("taskPushNotificationConfig")
        .or_else(|| conf.get("pushNotificationConfig"))
        .map(|p| push_config(p, &format!("{path}.taskPushNotificationConfig")))
        .transpose()?;
    Ok(SendOptions {
        return_immediately: boolean(conf, "returnImmediately", path)?.unwrap_or(false),
        history_length: count(conf, "historyLength", path)?,
        push,
    })
}

/// A push notification config at `path`.
pub(crate) fn push_config(v: &Value, path: &str) -> Result<PushConfig, A2aError> {
    let map = object(v, path)?;
    required(map, "url", path)?;
    serde_json::from_value(v.clone())
        .map_err(|e| A2aError::invalid_params(path, format!("{path}: {e}")))
}

/// A person's answer to an approval: a data part `{"approved": bool, "reason"?}`, or text
/// that says yes or no.
pub(crate) fn decision(message: &Message) -> Result<Decision, A2aError> {
    for p in &message.parts {
        if let Some(approved) = p.data.as_ref().and_then(|d| d["approved"].as_bool()) {
            let reason = p
                .data
                .as_ref()
                .and_then(|d| d["reason"].as_str())
                .unwrap_or("");
            return Ok(match approved {
                true => Decision::Approve,
                false => Decision::Deny(reason.to_string()),
            });
        }
    }
    let text = message.text();
    let word = text.trim().to_lowercase();
    let first = word
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    match first {
        "yes" | "y" | "approve" | "approved" | "allow" | "ok" => Ok(Decision::Approve),
        "no" | "n" | "deny" | "denied" | "reject" => Ok(Decision::Deny(text.trim().to_string())),
        _ => Err(A2aError::invalid_params(
            "params.message.parts",
            "the task waits for a person's approval: answer yes or no, or send a data part {\"approved\": true|false, \"reason\": \"...\"}",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snake_case_and_nulls_read_as_camel_case_and_absent() {
        let v = normalize(&json!({"message": {"message_id": "m", "task_id": null,
            "role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"a_b": 1}}}));
        let m = message(&v["message"], "params.message").expect("message");
        assert_eq!(m.message_id, "m");
        assert_eq!(m.task_id, None);
        assert_eq!(m.metadata.expect("metadata")["a_b"], 1);
    }

    #[test]
    fn errors_name_the_argument_path() {
        let e = message(
            &json!({"messageId": "m", "role": "ROLE_USER", "parts": []}),
            "params.message",
        )
        .expect_err("empty parts");
        assert_eq!(e.data["field"], "params.message.parts");
        let e = message(
            &json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "data": 1}]}),
            "params.message",
        )
        .expect_err("two contents");
        assert_eq!(e.data["field"], "params.message.parts[0]");
        let e = message(&json!({"kind": "message"}), "params.message").expect_err("0.3 shape");
        assert_eq!(e.data["field"], "params.message.messageId");
    }

    #[test]
    fn query_strings_count_as_numbers_and_states_take_both_names() {
        let q = json!({"pageSize": "2", "status": "working", "includeArtifacts": "true"});
        let q = q.as_object().expect("object");
        assert_eq!(integer(q, "pageSize", "params").expect("n"), Some(2));
        assert_eq!(
            state(q, "status", "params").expect("s"),
            Some(TaskState::Working)
        );
        assert_eq!(
            boolean(q, "includeArtifacts", "params").expect("b"),
            Some(true)
        );
        let bad = json!({"status": "INVALID_STATUS", "historyLength": -1});
        let bad = bad.as_object().expect("object");
        assert!(state(bad, "status", "params").is_err());
        assert!(count(bad, "historyLength", "params").is_err());
    }
}
