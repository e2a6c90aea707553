//! Rhai values <-> JSON.

use rhai::Dynamic;
use serde_json::Value;

/// Converts a script value to JSON; non-finite floats become `null`, custom types are errors.
pub fn to_json(value: &Dynamic) -> Result<Value, String> {
    if value.is_shared() {
        return to_json(&value.flatten_clone());
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
