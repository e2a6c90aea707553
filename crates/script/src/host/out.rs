//! What a script exchanges with its caller besides arguments and a plain value: content blocks
//! (`image`, `audio`, `resource_block`, `resource_blob_block`, returned alone or in a list with text),
//! `progress(...)`, `emit(name, value)` and `log(level, msg)` (no capability: none reaches outside the tool; bounded
//! by [`kiln_core::context::call_events`]), and `sample(prompt)`, which asks the calling MCP client's model
//! and needs capability `sampling`.

use crate::host;
use kiln_core::context::call_events::{self, CallEvents, LogLevel};
use kiln_core::model::content::{self, Content};
use kiln_core::tool::{FailureKind, ToolFailure};
use rhai::{Dynamic, Engine, EvalAltResult, Position};
use serde_json::Value;
use std::sync::Arc;

/// The value thrown by a content constructor given something it cannot use.
#[derive(Debug, Clone)]
pub struct BadContent(pub String);

/// The failure a bad content block becomes: `invalid_output`, naming what is wrong.
pub fn invalid_output(msg: &str) -> ToolFailure {
    ToolFailure::invalid_output(msg)
}

fn bad(msg: String) -> Box<EvalAltResult> {
    EvalAltResult::ErrorRuntime(Dynamic::from(BadContent(msg)), Position::NONE).into()
}

/// A handler's result as JSON: a content block, or a list holding at least one (its strings
/// become text blocks), is a content result; anything else converts as is.
pub fn result_json(value: &Dynamic) -> Result<Value, ToolFailure> {
    let value = value.flatten_clone();
    if let Some(block) = value.read_lock::<Block>() {
        return Ok(content::to_result(std::slice::from_ref(&**block)));
    }
    if let Some(items) = value.read_lock::<rhai::Array>()
        && items.iter().any(|i| i.is::<Block>())
    {
        // One block may be listed many times: the copies are counted before they are made.
        let size: usize = items
            .iter()
            .map(|i| match i.read_lock::<Block>() {
                Some(block) => block.approx_len(),
                None => {
                    i.read_lock::<rhai::ImmutableString>()
                        .map_or(0, |t| t.len())
                        + 32
                }
            })
            .sum();
        if size > crate::convert::MAX_JSON_BYTES {
            return Err(ToolFailure::sanitized(
                FailureKind::Limit,
                format!(
                    "the result is too large: its content blocks would be more than {} bytes",
                    crate::convert::MAX_JSON_BYTES
                ),
            ));
        }
        let blocks = items
            .iter()
            .enumerate()
            .map(|(n, item)| {
                if let Some(block) = item.read_lock::<Block>() {
                    Ok((**block).clone())
                } else if let Some(text) = item.read_lock::<rhai::ImmutableString>() {
                    Ok(Content::text(text.as_str()))
                } else {
                    Err(invalid_output(&format!(
                        "item {n} of the result is {}: a list with content blocks holds only strings and blocks (image(), audio(), resource_block(), resource_blob_block())",
                        item.type_name()
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(content::to_result(&blocks));
    }
    use crate::convert::{JsonError, MAX_JSON_BYTES, to_json_within};
    to_json_within(&value, MAX_JSON_BYTES).map_err(|e| match e {
        JsonError::TooLarge(_) => {
            ToolFailure::sanitized(FailureKind::Limit, format!("the result is too large: {e}"))
        }
        JsonError::NotJson(e) => {
            ToolFailure::sanitized(FailureKind::Runtime, format!("result is not JSON: {e}"))
        }
    })
}

/// Argument `name` of `func` as a string.
fn string(func: &str, name: &str, value: &Dynamic) -> Result<String, Box<EvalAltResult>> {
    value
        .read_lock::<rhai::ImmutableString>()
        .map(|s| s.to_string())
        .ok_or_else(|| {
            bad(format!(
                "{func}(): {name} must be a string, not {}",
                value.type_name()
            ))
        })
}

/// A block checked now, so the error points at the line that built it.
/// A content block as scripts hold it: shared, so a script that lists one block many times
/// copies a pointer, not its data (Rhai counts no custom type's size).
pub type Block = std::sync::Arc<Content>;

fn checked(func: &str, block: Content) -> Result<Block, Box<EvalAltResult>> {
    block.check().map_err(|e| bad(format!("{func}(): {e}")))?;
    Ok(std::sync::Arc::new(block))
}

/// Argument `name` of `progress` as a number.
fn number(name: &str, value: &Dynamic) -> Result<f64, Box<EvalAltResult>> {
    if let Ok(i) = value.as_int() {
        return Ok(i as f64);
    }
    value
        .as_float()
        .map_err(|t| format!("progress(): {name} must be a number, not {t}").into())
}

/// Where `progress` and `emit` send: the running call's events, looked up at each call (a
/// handler's come with its call; a program's are its worker's pipe).
pub(crate) type EventsSource = Arc<dyn Fn() -> Option<Arc<CallEvents>> + Send + Sync>;

fn progress(
    events: Option<&CallEvents>,
    done: &Dynamic,
    total: Option<&Dynamic>,
    msg: Option<&str>,
) -> Result<(), Box<EvalAltResult>> {
    let done = number("done", done)?;
    let total = total.map(|t| number("total", t)).transpose()?;
    call_events::progress(events, done, total, msg).map_err(|e| e.into())
}

/// `emit(name, value)`: a named JSON value for the caller (bounded, coalesced, never waits).
fn emit(
    events: Option<&CallEvents>,
    name: &str,
    value: &Dynamic,
) -> Result<(), Box<EvalAltResult>> {
    // Refused before it is built when it would be far over the bound (checked exactly below).
    let bound = 2 * call_events::MAX_EMIT_BYTES;
    let value = crate::convert::to_json_within(value, bound).map_err(|e| match e {
        crate::convert::JsonError::TooLarge(_) => format!(
            "emit(\"{name}\"): the value is over the {} bytes of JSON allowed (send less, or a reference to it)",
            call_events::MAX_EMIT_BYTES
        ),
        other => format!("emit(\"{name}\"): {other}"),
    })?;
    call_events::emit(events, name, value).map_err(|e| e.into())
}

/// Registers `progress` (three arities) and `emit`, sending where `source` says.
pub(crate) fn register_notes(engine: &mut Engine, source: EventsSource) {
    let from = source.clone();
    engine.register_fn("progress", move |done: Dynamic| {
        progress(from().as_deref(), &done, None, None)
    });
    let from = source.clone();
    engine.register_fn("progress", move |done: Dynamic, total: Dynamic| {
        progress(from().as_deref(), &done, Some(&total), None)
    });
    let from = source.clone();
    engine.register_fn(
        "progress",
        move |done: Dynamic, total: Dynamic, msg: &str| {
            progress(from().as_deref(), &done, Some(&total), Some(msg))
        },
    );
    engine.register_fn("emit", move |name: &str, value: Dynamic| {
        emit(source().as_deref(), name, &value)
    });
}

fn log(level: &str, msg: &str) -> Result<(), Box<EvalAltResult>> {
    let level = LogLevel::parse(level).ok_or_else(|| {
        let names: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
        format!(
            "log(): unknown level \"{level}\" (one of {})",
            names.join(", ")
        )
    })?;
    let events = host::current_events();
    call_events::log(events.as_deref(), level, msg);
    Ok(())
}

/// Registers the content constructors, `progress`, `emit` and `log`.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<Block>("Content");
    engine.register_fn("to_string", |c: &mut Block| {
        content::render_text(std::slice::from_ref(&**c))
    });
    engine.register_fn("to_debug", |c: &mut Block| format!("{:?}", **c));
    engine.register_type_with_name::<BadContent>("BadContent");
    engine.register_fn("to_string", |e: &mut BadContent| e.0.clone());

    register_blocks(engine);
    register_notes(engine, Arc::new(host::current_events));
    engine.register_fn("log", log);
    engine.register_fn("log", |level: &str, msg: Dynamic| {
        log(level, &msg.to_string())
    });
}

/// The content block constructors: `image`, `audio`, `resource_block`, `resource_blob_block`
/// (and the last two's deprecated spellings).
fn register_blocks(engine: &mut Engine) {
    engine.register_fn("image", |data: Dynamic, mime: Dynamic| {
        let (data, mime) = (
            string("image", "data", &data)?,
            string("image", "mime", &mime)?,
        );
        checked("image", Content::image(data, mime))
    });
    engine.register_fn("audio", |data: Dynamic, mime: Dynamic| {
        let (data, mime) = (
            string("audio", "data", &data)?,
            string("audio", "mime", &mime)?,
        );
        checked("audio", Content::audio(data, mime))
    });
    // `resource(uri, text, mime)` and `resource_blob(uri, blob, mime)` are the deprecated
    // spellings (renames.rs): `resource(uri)` declares an MCP resource.
    for f in ["resource_block", "resource"] {
        engine.register_fn(f, move |uri: Dynamic, text: Dynamic, mime: Dynamic| {
            let (uri, text) = (string(f, "uri", &uri)?, string(f, "text", &text)?);
            checked(
                f,
                Content::resource_text(uri, text, &string(f, "mime", &mime)?),
            )
        });
    }
    for f in ["resource_blob_block", "resource_blob"] {
        engine.register_fn(f, move |uri: Dynamic, blob: Dynamic, mime: Dynamic| {
            let (uri, blob) = (string(f, "uri", &uri)?, string(f, "blob", &blob)?);
            checked(
                f,
                Content::resource_blob(uri, blob, &string(f, "mime", &mime)?),
            )
        });
    }
}
