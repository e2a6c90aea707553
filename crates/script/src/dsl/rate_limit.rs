//! `.rate_limit(calls, per[, #{ wait: true }])` on the tool builder: `per` is a number of
//! seconds or a duration with its unit (`"1m"`, `"500ms"`).

use crate::dsl::ToolBuilder;
use kiln_core::ratelimit::RateLimit;
use rhai::{Engine, FLOAT, INT, Map, NativeCallContext, Position};
use std::time::Duration;

pub(crate) fn limit(calls: INT, per_seconds: FLOAT, opts: &Map) -> Result<RateLimit, String> {
    let calls = u32::try_from(calls)
        .ok()
        .filter(|c| *c > 0)
        .ok_or_else(|| format!("rate_limit: calls must be a positive number, not {calls}"))?;
    if !(per_seconds.is_finite() && per_seconds > 0.0 && per_seconds <= 86_400.0 * 366.0) {
        return Err(format!(
            "rate_limit: per_seconds must be a positive number of seconds, not {per_seconds}"
        ));
    }
    let mut wait = false;
    for (key, value) in opts {
        match (key.as_str(), value.as_bool()) {
            ("wait", Ok(b)) => wait = b,
            ("wait", Err(t)) => return Err(format!("rate_limit: wait must be a bool, not a {t}")),
            (other, _) => {
                return Err(format!(
                    "rate_limit: unknown option \"{other}\" (known: wait)"
                ));
            }
        }
    }
    Ok(RateLimit::new(calls, Duration::from_secs_f64(per_seconds)).wait(wait))
}

/// [`limit`] with the period written as text: a duration with its unit, or bare seconds.
pub(crate) fn limit_per(calls: INT, per: &str, opts: &Map) -> Result<RateLimit, String> {
    use kiln_core::duration::{BareUnit, parse_duration};
    let per = parse_duration(per, BareUnit::Seconds).map_err(|e| format!("rate_limit: {e}"))?;
    limit(calls, per.as_secs_f64(), opts)
}

fn set(b: &mut ToolBuilder, pos: Position, built: Result<RateLimit, String>) -> ToolBuilder {
    b.with(|d| match built {
        Ok(l) => d.rate_limit = Some(l),
        Err(e) => d.errors.push((pos, e)),
    })
}

/// Registers the `rate_limit` overloads (integer or fractional seconds, or a duration with its
/// unit; with or without options).
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: &str| {
            set(b, ctx.call_position(), limit_per(calls, per, &Map::new()))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: &str, opts: Map| {
            set(b, ctx.call_position(), limit_per(calls, per, &opts))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: INT| {
            set(
                b,
                ctx.call_position(),
                limit(calls, per as FLOAT, &Map::new()),
            )
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: FLOAT| {
            set(b, ctx.call_position(), limit(calls, per, &Map::new()))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: INT, opts: Map| {
            set(b, ctx.call_position(), limit(calls, per as FLOAT, &opts))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut ToolBuilder, calls: INT, per: FLOAT, opts: Map| {
            set(b, ctx.call_position(), limit(calls, per, &opts))
        },
    );
}
