//! Call policies: rules about a call's arguments, not just its tool, declared in scripts
//! (`policy(name).applies_to([...]).check(|call, ctx| ...)`) and checked for every call a door
//! makes, after its arguments are validated and before its handler runs. A policy allows,
//! denies (the reason reaches the model as a tool error), asks a person, or rewrites the
//! arguments (validated again).

use crate::context::CallContext;
pub use crate::context::{Policy, Verdict};
use crate::failure::{FailureKind, ToolFailure};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// `*` in a pattern matches any run of characters (`db_*`, `*_delete`, `*`).
pub fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Runs every policy of the call's registry that applies to `tool`, in load order; the
/// arguments the call goes ahead with (rewritten by a policy, validated again), or the refusal.
pub fn apply<'a>(
    tool: &str,
    validate: &dyn Fn(&Value) -> Vec<String>,
    args: &'a Value,
    ctx: &CallContext,
) -> Result<Cow<'a, Value>, ToolFailure> {
    let Some(registry) = &ctx.run.registry else {
        return Ok(Cow::Borrowed(args));
    };
    let policies: Vec<Arc<dyn Policy>> = registry
        .policies()
        .into_iter()
        .filter(|p| p.applies_to(tool))
        .collect();
    let mut args = Cow::Borrowed(args);
    for policy in policies {
        let denied = |why: String| {
            ToolFailure::visible(
                FailureKind::Denied,
                format!(
                    "policy \"{}\" denied the call of {tool}: {why}",
                    policy.name()
                ),
            )
        };
        match policy.check(tool, &args, ctx) {
            Verdict::Allow => {}
            Verdict::Deny(why) => return Err(denied(why)),
            Verdict::NeedsApproval(why) => {
                let question = format!(
                    "policy \"{}\" asks before tool \"{tool}\" runs with {}: {why}",
                    policy.name(),
                    crate::approval::shorten(&args.to_string())
                );
                let label = format!("policy:{}", policy.name());
                let answer = crate::approval::ask_person(ctx, tool, Some(&args), &label, &question);
                match answer {
                    Ok(true) => {}
                    Ok(false) => return Err(denied(format!("{why} (not approved)"))),
                    Err(e) => return Err(denied(format!("{why}; it needs approval and {e}"))),
                }
            }
            Verdict::Rewrite(new) => {
                let violations = validate(&new);
                if !violations.is_empty() {
                    return Err(denied(format!(
                        "it rewrote the arguments into invalid ones:\n{}",
                        violations.join("\n")
                    )));
                }
                args = Cow::Owned(new);
            }
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn patterns_match_names() {
        assert!(glob("db_*", "db_delete"));
        assert!(glob("*_delete", "db_delete"));
        assert!(glob("*", "anything"));
        assert!(glob("db_delete", "db_delete"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("db_*", "files_delete"));
        assert!(!glob("db_delete", "db_delete_all"));
        assert!(!glob("a*c*e", "abcd"));
    }
}
