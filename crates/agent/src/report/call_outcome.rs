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
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl std::fmt::Display for CallOutcome {
    /// The run log's JSON, on one line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_json())
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
            let typed = serde_json::to_value(CallOutcome::of(&outcome)).expect("json");
            assert_eq!(typed, outcome.to_json(true));
        }
    }
}
