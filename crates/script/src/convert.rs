//! Rhai values <-> JSON, and durations as scripts write them (`timeout`).

use rhai::Dynamic;
use serde_json::Value;
use std::time::Duration;

/// The most JSON text a script value may render to. Rhai limits each string and list, not
/// how often one value is shared, so a map holding one 4 MiB string 100,000 times is small in
/// the script and 400 GB as JSON: its size is bounded before anything is built.
pub const MAX_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Why a script value did not become JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// It would render to more than the bound (in bytes).
    #[error("the value would be more than {0} bytes of JSON")]
    TooLarge(usize),
    /// It holds something JSON cannot (a custom type, a function pointer).
    #[error("{0}")]
    NotJson(String),
}

/// Whether `value` renders to more than `limit` bytes of JSON, at least: a walk that counts
/// its strings, keys and items and stops as soon as the count passes `limit`.
pub fn renders_over(value: &Dynamic, limit: usize) -> bool {
    /// Takes `n` from the budget; true once it is spent.
    fn take(budget: &mut usize, n: usize) -> bool {
        *budget = budget.saturating_sub(n);
        *budget == 0
    }
    fn walk(v: &Dynamic, budget: &mut usize) -> bool {
        if v.is_shared() {
            return walk(&v.flatten_clone(), budget);
        }
        if let Some(s) = v.read_lock::<rhai::ImmutableString>() {
            return take(budget, s.len() + 2);
        }
        if let Some(a) = v.read_lock::<rhai::Array>() {
            return take(budget, a.len() + 1) || a.iter().any(|item| walk(item, budget));
        }
        if let Some(m) = v.read_lock::<rhai::Map>() {
            return take(budget, 2)
                || m.iter()
                    .any(|(k, item)| take(budget, k.len() + 4) || walk(item, budget));
        }
        if let Some(b) = v.read_lock::<rhai::Blob>() {
            return take(budget, b.len() * 2 + 2);
        }
        take(budget, 1)
    }
    let mut budget = limit.saturating_add(1);
    walk(value, &mut budget)
}

/// [`to_json`] refusing values that would render to more than `limit` bytes, before any of it
/// is built.
pub fn to_json_within(value: &Dynamic, limit: usize) -> Result<Value, JsonError> {
    if renders_over(value, limit) {
        return Err(JsonError::TooLarge(limit));
    }
    to_json_unbounded(value).map_err(JsonError::NotJson)
}

/// Converts a script value to JSON; non-finite floats become `null`, custom types are errors,
/// and a value over [`MAX_JSON_BYTES`] is refused before it is built.
pub fn to_json(value: &Dynamic) -> Result<Value, String> {
    to_json_within(value, MAX_JSON_BYTES).map_err(|e| e.to_string())
}

fn to_json_unbounded(value: &Dynamic) -> Result<Value, String> {
    if value.is_shared() {
        return to_json_unbounded(&value.flatten_clone());
    }
    if let Ok(f) = value.as_float()
        && !f.is_finite()
    {
        return Ok(Value::Null);
    }
    rhai::serde::from_dynamic::<Value>(value).map_err(|e| e.to_string())
}

/// Converts JSON to a script value.
pub fn to_dynamic(value: &Value) -> Dynamic {
    rhai::serde::to_dynamic(value).unwrap_or(Dynamic::UNIT)
}

/// A `timeout` as a script writes it: a duration with its unit (`"30s"`, `"500ms"`, `"2m"`), or
/// (deprecated: `kiln check` warns and `--fix` rewrites it) a positive number of milliseconds.
pub(crate) fn timeout(value: &Dynamic) -> Result<Duration, String> {
    use kiln_core::duration::{BareUnit, parse_duration};
    let wrong = || {
        format!(
            "timeout must be a duration with its unit such as \"30s\" or \"500ms\" (or, deprecated, a positive number of milliseconds), not {value}"
        )
    };
    let time = if let Ok(ms) = value.as_int() {
        u64::try_from(ms).map(Duration::from_millis).ok()
    } else if let Some(text) = value.read_lock::<rhai::ImmutableString>() {
        Some(parse_duration(&text, BareUnit::Millis).map_err(|e| format!("timeout: {e}"))?)
    } else {
        None
    };
    time.filter(|t| !t.is_zero()).ok_or_else(wrong)
}

/// [`timeout`] in whole milliseconds (at least one).
pub(crate) fn timeout_ms(value: &Dynamic) -> Result<u64, String> {
    timeout(value).map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1))
}
