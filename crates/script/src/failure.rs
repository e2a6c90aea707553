//! Rhai errors sorted into tool failure kinds, and told as text for a person.

use crate::{host, sandbox};
use kiln_core::tool::{FailureKind, ToolFailure};
use rhai::EvalAltResult;

/// A Rhai error as text for a person: the message a refusal or `tool_error` carries (not the
/// type of the value holding it), else the error with its position, after `path`.
pub fn describe(err: &EvalAltResult, path: &str) -> String {
    let f = classify(err, path);
    match f.kind {
        FailureKind::Denied | FailureKind::ToolError | FailureKind::InvalidOutput => {
            format!("{path}: {}", f.message)
        }
        _ => f.detail.unwrap_or(f.message),
    }
}

/// Sorts a Rhai error into a failure kind and message.
pub fn classify(err: &EvalAltResult, path: &str) -> ToolFailure {
    use EvalAltResult as E;
    match err {
        E::ErrorInFunctionCall(_, _, inner, _) | E::ErrorInModule(_, inner, _) => {
            let inner_failure = classify(inner, path);
            if inner_failure.kind == FailureKind::ToolError {
                inner_failure
            } else {
                ToolFailure {
                    detail: Some(format!("{path}: {err}")),
                    ..inner_failure
                }
            }
        }
        E::ErrorRuntime(value, _) if value.is::<host::ToolErrorValue>() => {
            let msg = value.clone_cast::<host::ToolErrorValue>().0;
            ToolFailure::visible(FailureKind::ToolError, msg)
        }
        E::ErrorTerminated(token, _) if token.to_string() == crate::host::ask::INPUT_TOKEN => {
            ToolFailure::visible(
                FailureKind::InputRequired,
                "the call asked its caller for input: it runs again when the caller answers",
            )
        }
        E::ErrorTerminated(token, _)
            if token
                .to_string()
                .starts_with(crate::host::ask::MISSING_TOKEN) =>
        {
            let cap = token.to_string()[crate::host::ask::MISSING_TOKEN.len()..].to_string();
            ToolFailure::visible(
                FailureKind::Denied,
                format!(
                    "the caller did not declare the client capability \"{cap}\" this call needs"
                ),
            )
        }
        E::ErrorTerminated(token, _) if token.to_string() == sandbox::MEMORY_TOKEN => {
            let msg = format!(
                "{path}: the script held more memory than its limit ({} MiB) allows",
                sandbox::max_memory() / (1024 * 1024)
            );
            ToolFailure::sanitized(FailureKind::Limit, msg)
        }
        E::ErrorTerminated(token, _) => {
            let kind = if token.to_string() == sandbox::CANCEL_TOKEN {
                FailureKind::Cancelled
            } else {
                FailureKind::Deadline
            };
            ToolFailure::sanitized(kind, format!("{path}: {err}"))
        }
        E::ErrorRuntime(value, _) if value.is::<crate::host::out::BadContent>() => ToolFailure {
            detail: Some(format!("{path}: {err}")),
            ..crate::host::out::invalid_output(
                &value.clone_cast::<crate::host::out::BadContent>().0,
            )
        },
        E::ErrorRuntime(value, _) if value.is::<host::DeniedValue>() => ToolFailure::visible(
            FailureKind::Denied,
            value.clone_cast::<host::DeniedValue>().0,
        ),
        E::ErrorTooManyOperations(_)
        | E::ErrorStackOverflow(_)
        | E::ErrorDataTooLarge(..)
        | E::ErrorTooManyModules(_)
        | E::ErrorTooManyVariables(_) => {
            ToolFailure::sanitized(FailureKind::Limit, format!("{path}: {err}"))
        }
        _ => ToolFailure::sanitized(FailureKind::Runtime, format!("{path}: {err}")),
    }
}
