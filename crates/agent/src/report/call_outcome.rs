//! How a recorded tool call ended, typed: what the run log stores and people read.

use kiln_core::failure::{FailureKind, ToolOutcome};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

/// How a recorded call ended. It serializes as the run log has always stored it:
/// `{"success": true, "result", "duration_ms"}` or
/// `{"success": false, "error": {"kind", "message", "detail"?}, "duration_ms"}`.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// It returned a result.
    Ok {
        /// The result.
        result: Value,
        /// Wall time in milliseconds (to the microsecond).
        duration_ms: f64,
    },
    /// It failed, or was refused.
    Failed {
        /// Why.
        error: CallError,
        /// Wall time in milliseconds (to the microsecond).
        duration_ms: f64,
    },
}

/// Why a recorded call failed, with the detail people may see (never a model).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallError {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What the model was told.
    pub message: String,
    /// More for people (an unexpected failure's cause).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl CallOutcome {
    /// The record of `outcome`, failure detail included.
    pub fn of(outcome: &ToolOutcome) -> CallOutcome {
        let duration_ms = (outcome.duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        match &outcome.result {
            Ok(v) => CallOutcome::Ok {
                result: v.clone(),
                duration_ms,
            },
            Err(f) => CallOutcome::Failed {
                error: CallError {
                    kind: f.kind,
                    message: f.message.clone(),
                    detail: f.detail.clone(),
                },
                duration_ms,
            },
        }
    }

    /// The result, when the call returned one.
    pub fn result(&self) -> Option<&Value> {
        match self {
            CallOutcome::Ok { result, .. } => Some(result),
            CallOutcome::Failed { .. } => None,
        }
    }

    /// Why it failed, when it did.
    pub fn error(&self) -> Option<&CallError> {
        match self {
            CallOutcome::Ok { .. } => None,
            CallOutcome::Failed { error, .. } => Some(error),
        }
    }

    /// The outcome as the run log's JSON.
    pub fn to_json(&self) -> Value {
        match self {
            CallOutcome::Ok {
                result,
                duration_ms,
            } => json!({"success": true, "result": result, "duration_ms": duration_ms}),
            CallOutcome::Failed { error, duration_ms } => {
                json!({"success": false, "error": error, "duration_ms": duration_ms})
            }
        }
    }
}

impl Serialize for CallOutcome {
    /// The fields in [`CallOutcome::to_json`]'s order, written without building that value
    /// first (every call's record is written for the run log and counted for the server).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        match self {
            CallOutcome::Ok {
                result,
                duration_ms,
            } => {
                map.serialize_entry("success", &true)?;
                map.serialize_entry("result", result)?;
                map.serialize_entry("duration_ms", duration_ms)?;
            }
            CallOutcome::Failed { error, duration_ms } => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", error)?;
                map.serialize_entry("duration_ms", duration_ms)?;
            }
        }
        map.end()
    }
}

impl std::fmt::Display for CallOutcome {
    /// The run log's JSON, on one line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use crate::report::call_outcome::*;
    use kiln_core::failure::ToolFailure;
    use std::time::Duration;

    #[test]
    fn a_record_serializes_as_the_run_log_stored_it() {
        let cases = [
            Ok(json!({"n": 1})),
            Ok(Value::Null),
            Err(ToolFailure::visible(FailureKind::RateLimited, "wait 2s")),
            Err(ToolFailure::sanitized(
                FailureKind::Runtime,
                "boom at /x.rhai",
            )),
        ];
        for result in cases {
            let outcome = ToolOutcome {
                result,
                duration: Duration::from_micros(1_234_567),
                attempts: 1,
            };
            let record = CallOutcome::of(&outcome);
            let typed = serde_json::to_value(&record).expect("json");
            assert_eq!(typed, outcome.to_json(true));
            // The same text too, keys in the same order: rows written before read alike.
            let text = serde_json::to_string(&outcome.to_json(true)).expect("json");
            assert_eq!(record.to_string(), text);
            assert_eq!(
                serde_json::to_string(&record.to_json()).expect("json"),
                text
            );
        }
    }
}
