//! `ListTasks`: the caller's tasks of the agent, newest status first, filtered by context,
//! state and status time, a page at a time behind an opaque token.

use super::caller::{Caller, to_json};
use super::params::{self, object};
use kiln_a2a::A2aError;
use serde_json::{Value, json};

/// Tasks in a page unless asked otherwise.
const DEFAULT_PAGE: i64 = 50;
/// The largest page.
const MAX_PAGE: i64 = 100;

/// `{"tasks", "nextPageToken" ("" on the last page), "pageSize" (this page's), "totalSize"}`.
pub(crate) fn list(c: &Caller<'_>, params: &Value) -> Result<Value, A2aError> {
    let map = object(params, "params")?;
    let context = params::string(map, "contextId", "params")?;
    let state = params::state(map, "status", "params")?;
    let size = params::integer(map, "pageSize", "params")?.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&size) {
        return Err(A2aError::invalid_params(
            "params.pageSize",
            format!("params.pageSize must be 1 to {MAX_PAGE} (got {size})"),
        ));
    }
    let offset = match map.get("pageToken").and_then(Value::as_str) {
        None | Some("") => 0,
        Some(token) => offset_of(token).ok_or_else(|| {
            A2aError::invalid_params(
                "params.pageToken",
                "params.pageToken is not a token this server gave",
            )
        })?,
    };
    let history = params::count(map, "historyLength", "params")?.unwrap_or(0);
    let after = match params::string(map, "statusTimestampAfter", "params")? {
        None => None,
        Some(t) => Some(kiln_a2a::parse_timestamp(&t).ok_or_else(|| {
            A2aError::invalid_params(
                "params.statusTimestampAfter",
                format!("params.statusTimestampAfter: \"{t}\" is not an RFC 3339 timestamp"),
            )
        })?),
    };
    let artifacts = params::boolean(map, "includeArtifacts", "params")?.unwrap_or(false);
    let matching: Vec<_> = c
        .state
        .a2a
        .list(c.agent, c.who.actor.as_deref())
        .into_iter()
        .filter(|t| context.as_ref().is_none_or(|ctx| *ctx == t.context_id))
        .filter(|t| state.is_none_or(|s| s == t.state()))
        // Millisecond precision, as the timestamps the tasks show.
        .filter(|t| after.is_none_or(|a| (t.updated() * 1000.0).floor() >= (a * 1000.0).floor()))
        .collect();
    let total = matching.len();
    let page_size = usize::try_from(size).unwrap_or(50);
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(page_size)
        .map(|t| to_json(&t.snapshot(Some(history), artifacts)))
        .collect();
    let next = match offset + page.len() < total {
        true => token_of(offset + page.len()),
        false => String::new(),
    };
    Ok(json!({"tasks": page, "nextPageToken": next, "pageSize": page.len(), "totalSize": total}))
}

/// The page token for `offset`: `p` and the offset in hex, so a made-up token is refused.
fn token_of(offset: usize) -> String {
    format!("p{offset:x}")
}

fn offset_of(token: &str) -> Option<usize> {
    usize::from_str_radix(token.strip_prefix('p')?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_made_up_ones_are_refused() {
        assert_eq!(offset_of(&token_of(150)), Some(150));
        assert_eq!(offset_of("invalid-token-xyz"), None);
        assert_eq!(offset_of("p"), None);
    }
}
