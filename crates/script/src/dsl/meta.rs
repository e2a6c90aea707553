//! What a tool tells its callers beyond its arguments: `.title("...")`, `.output(type | #{...})`
//! (`.returns(...)` is its deprecated spelling),
//! `.annotations(#{ read_only, destructive, idempotent, open_world })` and `.task(mode)`.

use crate::dsl::{ToolBuilder, to_json};
use kiln_core::schema;
use rhai::{Dynamic, Engine, Map, NativeCallContext, Position};
use serde_json::Value;

/// Records `.output(spec)` as a schema (the loader compiles it, located at this call).
fn output(b: &mut ToolBuilder, pos: Position, spec: Result<Value, String>) -> ToolBuilder {
    let built = spec.and_then(|s| schema::returns_schema(&s));
    b.with(|d| match built {
        Ok(_) if d.output.is_some() => d.errors.push((pos, ".output(...) is given twice".into())),
        Ok(s) => d.output = Some((s, pos)),
        Err(e) => d.errors.push((pos, e)),
    })
}

fn annotations(b: &mut ToolBuilder, pos: Position, map: Map) -> ToolBuilder {
    b.with(|d| {
        for (key, value) in map {
            let set = match value.as_bool() {
                Ok(v) => d.hints.set(&key, v),
                Err(t) => Err(format!(
                    "annotation \"{key}\" must be true or false, not a {t}"
                )),
            };
            if let Err(e) = set {
                d.errors.push((pos, format!("annotations: {e}")));
            }
        }
    })
}

/// `.task(mode[, #{ start }])`: `mode` is "optional" or "required"; `start` is "call" (the
/// task starts with the call) or "background" (at the handler's `background()`).
fn task(b: &mut ToolBuilder, pos: Position, mode: &str, opts: Map) -> ToolBuilder {
    let required = match mode {
        "optional" => Ok(false),
        "required" => Ok(true),
        other => Err(format!(
            ".task(\"{other}\"): the mode is \"optional\" (a client without the tasks extension is answered in the call) or \"required\" (it is refused)"
        )),
    };
    let mut at_background = Ok(false);
    for (key, value) in opts {
        at_background = match (key.as_str(), value.into_string().as_deref()) {
            ("start", Ok("call")) => Ok(false),
            ("start", Ok("background")) => Ok(true),
            ("start", _) => Err(".task(...): start is \"call\" or \"background\"".to_string()),
            (other, _) => Err(format!(".task(...): unknown option \"{other}\" (start)")),
        };
    }
    b.with(|d| match (required, at_background) {
        _ if d.task.is_some() => d.errors.push((pos, ".task(...) is given twice".into())),
        (Ok(required), Ok(at_background)) => {
            d.task = Some(kiln_core::tool::TaskMode {
                required,
                at_background,
            })
        }
        (Err(e), _) | (_, Err(e)) => d.errors.push((pos, e)),
    })
}

/// Registers `.title`, `.output` (and `.output`), `.annotations` and `.task` on the tool
/// builder.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "task",
        |ctx: NativeCallContext, b: &mut ToolBuilder, mode: &str| {
            task(b, ctx.call_position(), mode, Map::new())
        },
    );
    engine.register_fn(
        "task",
        |ctx: NativeCallContext, b: &mut ToolBuilder, mode: &str, opts: Map| {
            task(b, ctx.call_position(), mode, opts)
        },
    );
    engine.register_fn("title", |b: &mut ToolBuilder, text: &str| {
        b.with(|d| d.title = Some(text.to_string()))
    });
    for key in ["output", "returns"] {
        engine.register_fn(
            key,
            |ctx: NativeCallContext, b: &mut ToolBuilder, ty: &str| {
                output(b, ctx.call_position(), Ok(Value::String(ty.into())))
            },
        );
        engine.register_fn(
            key,
            |ctx: NativeCallContext, b: &mut ToolBuilder, spec: Map| {
                output(b, ctx.call_position(), to_json(&Dynamic::from_map(spec)))
            },
        );
        engine.register_fn(
            key,
            |ctx: NativeCallContext, b: &mut ToolBuilder, ty: &str, opts: Map| {
                let spec = to_json(&Dynamic::from_map(opts)).map(|mut o| {
                    if let Value::Object(m) = &mut o {
                        m.insert("type".into(), Value::String(ty.into()));
                    }
                    o
                });
                output(b, ctx.call_position(), spec)
            },
        );
    }
    engine.register_fn(
        "annotations",
        |ctx: NativeCallContext, b: &mut ToolBuilder, map: Map| {
            annotations(b, ctx.call_position(), map)
        },
    );
}
