//! A request's parameters read by path: every missing or wrong one is an
//! [`RpcError::invalid_params`] naming where it is (`prompt[1].text`).

use crate::error::RpcError;
use serde_json::{Map, Value};

/// The params object (a missing one reads as empty; another type is an error).
pub fn object(params: Option<&Value>) -> Result<&Map<String, Value>, RpcError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match params {
        None | Some(Value::Null) => Ok(EMPTY.get_or_init(Map::new)),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(RpcError {
            code: crate::error::code::INVALID_PARAMS,
            message: "Invalid params: params: expected an object".into(),
            data: Some(serde_json::json!({"path": "params"})),
        }),
    }
}

/// The string at `key` of `obj` (found at `path`), required.
pub fn string<'a>(obj: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a str, RpcError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(RpcError::invalid_params(
            &join(path, key),
            "required (a string)",
        )),
        Some(_) => Err(RpcError::invalid_params(
            &join(path, key),
            "expected a string",
        )),
    }
}

/// The string at `key`, when present (null reads as absent).
pub fn opt_string<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<Option<&'a str>, RpcError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_params(
            &join(path, key),
            "expected a string",
        )),
    }
}

/// The array at `key`, required; `null_is_empty` reads null as `[]` (the schema's
/// `x-deserialize-default-on-null`).
pub fn array<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
    null_is_empty: bool,
) -> Result<&'a [Value], RpcError> {
    match obj.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(Value::Null) if null_is_empty => Ok(&[]),
        None | Some(Value::Null) => Err(RpcError::invalid_params(
            &join(path, key),
            "required (an array)",
        )),
        Some(_) => Err(RpcError::invalid_params(
            &join(path, key),
            "expected an array",
        )),
    }
}

/// The object at `index` of an array found at `path`.
pub fn item<'a>(
    v: &'a Value,
    path: &str,
    index: usize,
) -> Result<&'a Map<String, Value>, RpcError> {
    v.as_object()
        .ok_or_else(|| RpcError::invalid_params(&format!("{path}[{index}]"), "expected an object"))
}

/// `path.key`, or `key` at the top.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
