//! A call of a function or method that does not exist, told as the DSL names things: the
//! builder it was called on and the nearest method or function kiln has, instead of Rhai's
//! internal signature (`Function not found: parm (ToolBuilder, &str | ImmutableString | ...)`).
//! A deprecated spelling is never suggested: its replacement is.

use rhai::{Engine, EvalAltResult};

use crate::reference::{self, BUILDERS};

/// The message for `err` when it is a call of an unknown function or method; `None` for any
/// other error.
pub fn explain(err: &EvalAltResult, engine: &Engine) -> Option<String> {
    let sig = match err {
        EvalAltResult::ErrorFunctionNotFound(sig, _) => sig,
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _) => return explain(inner, engine),
        _ => return None,
    };
    let (name, args) = sig.split_once(" (")?;
    let receiver = args
        .trim_end_matches(')')
        .split(", ")
        .next()
        .unwrap_or_default();
    let known = signatures(engine);
    if let Some((_, what)) = BUILDERS.iter().find(|(ty, _)| *ty == receiver) {
        let methods = known
            .iter()
            .filter(|(n, first)| first == receiver && !reference::is_deprecated(receiver, n))
            .map(|(n, _)| n.as_str());
        let hint = match kiln_core::error::suggest::nearest(name, methods) {
            Some(m) => match reference::find(receiver, m) {
                Some(entry) => format!("; did you mean .{}?", entry.call()),
                None => format!("; did you mean .{m}(...)?"),
            },
            None => String::new(),
        };
        return Some(format!("{what}: no method .{name}(...){hint}"));
    }
    let current = known
        .iter()
        .filter(|(n, _)| !reference::is_deprecated("", n))
        .map(|(n, _)| n.as_str());
    let hint = match kiln_core::error::suggest::nearest(name, current) {
        Some(f) => match reference::find("", f) {
            Some(entry) => format!("; did you mean {}?", entry.call()),
            None => format!("; did you mean {f}(...)?"),
        },
        None => String::new(),
    };
    Some(format!("unknown function {name}(...){hint}"))
}

/// Every registered function's name and the type of its first parameter (short name).
fn signatures(engine: &Engine) -> Vec<(String, String)> {
    engine
        .gen_fn_signatures(false)
        .into_iter()
        .filter_map(|sig| {
            let (name, rest) = sig.split_once('(')?;
            let first = rest.split([',', ')']).next().unwrap_or_default();
            let ty = first.rsplit(':').next().unwrap_or_default().trim();
            let ty = ty.trim_start_matches("&mut ").trim_start_matches('&');
            let ty = ty.rsplit("::").next().unwrap_or(ty).to_string();
            Some((name.trim().to_string(), ty))
        })
        .collect()
}
