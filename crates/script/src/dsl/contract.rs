//! An agent's contract in scripts: `.output(schema)` and `.output_retries(n)`, `.budget(#{ ... })`
//! and `.price(input_per_mtok, output_per_mtok)`.
//!
//! `.output` takes a type name of the params language (`"string"`, `"array"`...), a map of
//! fields (`#{ name: "string", age: #{ type: "integer", desc: "years" } }`, every field
//! required unless `optional: true`), or a whole JSON Schema (a map with `"type"` or `"$schema"`).

use crate::dsl::{AgentBuilder, to_json};
use kiln_core::schema::{self, Param};
use kiln_registry::contract::{Budget, Price};
use rhai::{Dynamic, Engine, INT, Map, NativeCallContext};
use serde_json::{Value, json};

/// The JSON Schema `.output(...)` was given.
fn output_schema(spec: Dynamic) -> Result<Value, String> {
    if let Ok(ty) = spec.clone().into_immutable_string() {
        return Ok(json!({ "type": schema::json_type(ty.as_str())? }));
    }
    let value = to_json(&spec)?;
    let Some(map) = value.as_object() else {
        return Err("output takes a type name, a map of fields or a JSON Schema".into());
    };
    if map.contains_key("type") || map.contains_key("$schema") || map.contains_key("anyOf") {
        return Ok(value);
    }
    let mut params = Vec::new();
    for (name, field) in map {
        let (ty, options) = match field {
            Value::String(ty) => (ty.clone(), serde_json::Map::new()),
            Value::Object(o) => {
                let mut o = o.clone();
                let ty = o
                    .remove("type")
                    .and_then(|t| t.as_str().map(str::to_string))
                    .ok_or_else(|| format!("output field \"{name}\" has no type"))?;
                (ty, o)
            }
            _ => return Err(format!("output field \"{name}\": a type name or a map")),
        };
        let (schema, required) = schema::build_param(name, &ty, &options)?;
        params.push(Param {
            name: name.clone(),
            schema,
            required,
        });
    }
    Ok(schema::object_schema(&params))
}

/// `#{ input_tokens, output_tokens, tool_calls, cost_usd }`, every key optional.
fn budget(opts: Map) -> Result<Budget, String> {
    let mut b = Budget::default();
    for (key, value) in opts {
        let count = || match value.as_int() {
            Ok(n) if n > 0 => Ok(n as u64),
            _ => Err(format!("budget {key} must be a positive whole number")),
        };
        match key.as_str() {
            "input_tokens" => b.input_tokens = Some(count()?),
            "output_tokens" => b.output_tokens = Some(count()?),
            "tool_calls" => b.tool_calls = Some(count()?),
            "cost_usd" => {
                let dollars = value
                    .as_float()
                    .or_else(|_| value.as_int().map(|n| n as f64))
                    .map_err(|_| "budget cost_usd must be a number of dollars".to_string())?;
                if dollars <= 0.0 {
                    return Err("budget cost_usd must be positive".into());
                }
                b.cost_usd = Some(dollars);
            }
            other => {
                return Err(format!(
                    "unknown budget limit \"{other}\" (input_tokens, output_tokens, tool_calls, cost_usd)"
                ));
            }
        }
    }
    Ok(b)
}

fn number(v: &Dynamic) -> Option<f64> {
    v.as_float()
        .ok()
        .or_else(|| v.as_int().ok().map(|n| n as f64))
}

/// Registers the contract's agent methods.
pub fn register(engine: &mut Engine) {
    engine.register_fn(
        "output",
        |ctx: NativeCallContext, b: &mut AgentBuilder, spec: Dynamic| {
            let pos = ctx.call_position();
            b.with(|d| match output_schema(spec) {
                Ok(schema) => d.contract.output = Some((schema, pos)),
                Err(e) => d.errors.push((pos, format!("output: {e}"))),
            })
        },
    );
    engine.register_fn(
        "output_retries",
        |ctx: NativeCallContext, b: &mut AgentBuilder, n: INT| {
            let pos = ctx.call_position();
            b.with(|d| match u32::try_from(n) {
                Ok(n) if n <= 10 => d.contract.retries = Some(n),
                _ => d.errors.push((
                    pos,
                    format!("output_retries must be between 0 and 10, not {n}"),
                )),
            })
        },
    );
    engine.register_fn(
        "budget",
        |ctx: NativeCallContext, b: &mut AgentBuilder, opts: Map| {
            let pos = ctx.call_position();
            b.with(|d| match budget(opts) {
                Ok(budget) => d.contract.budget = budget,
                Err(e) => d.errors.push((pos, e)),
            })
        },
    );
    engine.register_fn(
        "price",
        |ctx: NativeCallContext, b: &mut AgentBuilder, input: Dynamic, output: Dynamic| {
            let pos = ctx.call_position();
            b.with(|d| match (number(&input), number(&output)) {
                (Some(i), Some(o)) if i >= 0.0 && o >= 0.0 => {
                    d.contract.price = Some(Price {
                        input_per_mtok: i,
                        output_per_mtok: o,
                    })
                }
                _ => d.errors.push((
                    pos,
                    "price takes dollars per million input and output tokens, as numbers".into(),
                )),
            })
        },
    );
}
