//! The agent builder's methods: `.provider(...)`, `.model(...)` and the other settings,
//! `.tools([...])`, `.capabilities([...])`, `.needs_approval([...])`, `.planner(fn)`,
//! `.validator(fn)`. `.ask([...])` and `.max_tool_iterations(n)` are deprecated spellings
//! (renames.rs).
//! `agent(...)` itself and the draft are dsl.rs's; the loader turns the draft into an
//! `AgentSpec`.

use crate::dsl::{AgentBuilder, AgentSettings, strings};
use kiln_registry::agent_spec::CodeMode;
use kiln_registry::agent_spec::compact::{CompactWith, Compaction};
use kiln_registry::fallback::FallbackModel;
use rhai::{Array, Engine, FnPtr, INT, Map, NativeCallContext};

/// Registers the agent builder's methods.
pub fn register(engine: &mut Engine) {
    type Text = fn(&mut AgentSettings) -> &mut Option<String>;
    let texts: [(&str, Text); 7] = [
        ("description", |s| &mut s.description),
        ("provider", |s| &mut s.provider),
        ("model", |s| &mut s.model),
        ("system", |s| &mut s.system),
        ("base_url", |s| &mut s.base_url),
        ("api_key_env", |s| &mut s.api_key_env),
        ("mode", |s| &mut s.mode),
    ];
    for (key, field) in texts {
        engine.register_fn(key, move |b: &mut AgentBuilder, v: &str| {
            b.with(|d| *field(&mut d.settings) = Some(v.to_string()))
        });
    }
    engine.register_fn("temperature", |b: &mut AgentBuilder, t: rhai::FLOAT| {
        b.with(|d| d.settings.temperature = Some(t))
    });
    engine.register_fn("temperature", |b: &mut AgentBuilder, t: INT| {
        b.with(|d| d.settings.temperature = Some(t as rhai::FLOAT))
    });
    type Count = fn(&mut AgentSettings) -> &mut Option<INT>;
    let counts: [(&str, Count); 7] = [
        ("max_iterations", |s| &mut s.max_iterations),
        ("max_tool_iterations", |s| &mut s.max_iterations),
        ("max_tokens", |s| &mut s.max_tokens),
        ("max_steps", |s| &mut s.max_steps),
        ("max_parallel", |s| &mut s.max_parallel),
        ("max_reply_bytes", |s| &mut s.max_reply_bytes),
        ("max_line_bytes", |s| &mut s.max_line_bytes),
    ];
    for (key, field) in counts {
        engine.register_fn(
            key,
            move |ctx: NativeCallContext, b: &mut AgentBuilder, n: INT| {
                let pos = ctx.call_position();
                b.with(|d| match n {
                    n if n <= 0 => d
                        .errors
                        .push((pos, format!("{key} must be positive, not {n}"))),
                    n => *field(&mut d.settings) = Some(n),
                })
            },
        );
    }
    register_lists(engine);
    register_model_choice(engine);
    engine.register_fn("code_mode", |b: &mut AgentBuilder| {
        b.with(|d| d.code_mode = Some(CodeMode::default()))
    });
    engine.register_fn(
        "code_mode",
        |ctx: NativeCallContext, b: &mut AgentBuilder, opts: Map| {
            let pos = ctx.call_position();
            b.with(|d| match code_mode(opts) {
                Ok(mode) => d.code_mode = Some(mode),
                Err(e) => d.errors.push((pos, format!("code_mode: {e}"))),
            })
        },
    );
    crate::dsl::contract::register(engine);
    engine.register_fn("planner", |b: &mut AgentBuilder, f: FnPtr| {
        b.with(|d| d.planner = Some(f))
    });
    engine.register_fn("validator", |b: &mut AgentBuilder, f: FnPtr| {
        b.with(|d| d.validator = Some(f))
    });
}

/// The methods taking a list: `.tools`, `.capabilities`, `.skills`, `.handoffs`,
/// `.needs_approval`.
fn register_lists(engine: &mut Engine) {
    engine.register_fn(
        "tools",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => {
                    d.tools = l;
                    d.tools_pos = pos;
                }
                Err(e) => d.errors.push((pos, format!("tools: {e}"))),
            })
        },
    );
    engine.register_fn(
        "capabilities",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => {
                    d.capabilities = l;
                    d.caps_pos = pos;
                }
                Err(e) => d.errors.push((pos, format!("capabilities: {e}"))),
            })
        },
    );
    engine.register_fn(
        "defer_loading",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => d.defer_loading = l,
                Err(e) => d.errors.push((pos, format!("defer_loading: {e}"))),
            })
        },
    );
    engine.register_fn(
        "defer_loading",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array, opts: Map| {
            let pos = ctx.call_position();
            let search = defer_search(opts);
            b.with(|d| match (strings(&list), search) {
                (Ok(l), Ok(kiln)) => {
                    d.defer_loading = l;
                    d.defer_with_kiln = kiln;
                }
                (Err(e), _) | (_, Err(e)) => d.errors.push((pos, format!("defer_loading: {e}"))),
            })
        },
    );
    engine.register_fn(
        "skills",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => d.skills = l.into_iter().map(|f| (f, pos)).collect(),
                Err(e) => d.errors.push((pos, format!("skills: {e}"))),
            })
        },
    );
    engine.register_fn(
        "handoffs",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => d.handoffs = l,
                Err(e) => d.errors.push((pos, format!("handoffs: {e}"))),
            })
        },
    );
    for key in ["needs_approval", "ask"] {
        engine.register_fn(
            key,
            move |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
                let pos = ctx.call_position();
                b.with(|d| match strings(&list) {
                    Ok(l) => d.needs_approval = l,
                    Err(e) => d.errors.push((pos, format!("{key}: {e}"))),
                })
            },
        );
    }
}

/// `.fallback([...])` (each entry's provider checked here, at the call) and
/// `.text_tool_calls(...)` (checked by the loader).
fn register_model_choice(engine: &mut Engine) {
    engine.register_fn(
        "fallback",
        |ctx: NativeCallContext, b: &mut AgentBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(entries) => {
                    d.fallback.clear();
                    for entry in entries {
                        match FallbackModel::parse(&entry) {
                            Ok(m) => d.fallback.push(m),
                            Err(e) => d.errors.push((pos, format!("fallback: {e}"))),
                        }
                    }
                }
                Err(e) => d.errors.push((pos, format!("fallback: {e}"))),
            })
        },
    );
    engine.register_fn(
        "compact",
        |ctx: NativeCallContext, b: &mut AgentBuilder, opts: Map| {
            let pos = ctx.call_position();
            let read = compaction(opts);
            b.with(|d| match read {
                Ok(c) => d.compaction = Some(c),
                Err(e) => d.errors.push((pos, format!("compact: {e}"))),
            })
        },
    );
    engine.register_fn(
        "text_tool_calls",
        |ctx: NativeCallContext, b: &mut AgentBuilder, format: &str| {
            let pos = ctx.call_position();
            b.with(|d| d.settings.text_tool_calls = Some((format.to_string(), pos)))
        },
    );
}

/// `#{ search: "provider" | "kiln" }`: whether kiln's own search is used on every wire.
fn defer_search(opts: Map) -> Result<bool, String> {
    let mut kiln = false;
    for (key, value) in opts {
        match (key.as_str(), value.into_string().as_deref()) {
            ("search", Ok("provider")) => kiln = false,
            ("search", Ok("kiln")) => kiln = true,
            ("search", _) => return Err("search must be \"provider\" or \"kiln\"".into()),
            (other, _) => return Err(format!("unknown option \"{other}\" (expected search)")),
        }
    }
    Ok(kiln)
}

/// `#{ at: tokens, keep_last: n, how: "summary" | "trim" }`, every key optional (`with` is a
/// word Rhai keeps for itself).
fn compaction(opts: Map) -> Result<Compaction, String> {
    let mut c = Compaction::default();
    for (key, value) in opts {
        match key.as_str() {
            "at" => match value.as_int() {
                Ok(n) if n >= 1_000 => c.at = n as u64,
                _ => return Err("at must be a number of tokens, at least 1000".into()),
            },
            "keep_last" => match value.as_int() {
                Ok(n) if (1..=1_000).contains(&n) => c.keep_last = n as usize,
                _ => return Err("keep_last must be an integer from 1 to 1000".into()),
            },
            "how" => match value.into_string().as_deref() {
                Ok("summary") => c.with = CompactWith::Summary,
                Ok("trim") => c.with = CompactWith::Trim,
                _ => return Err("how must be \"summary\" or \"trim\"".into()),
            },
            "model" => match value.into_string() {
                Ok(m) => c.model = Some(FallbackModel::parse(&m)?),
                Err(t) => return Err(format!("model must be \"PROVIDER:MODEL\", not a {t}")),
            },
            other => {
                return Err(format!(
                    "unknown option \"{other}\" (expected at, keep_last, how, model)"
                ));
            }
        }
    }
    Ok(c)
}

/// `#{ except: [...], max_calls: n, timeout: ms | "30s" }`, every key optional.
fn code_mode(opts: Map) -> Result<CodeMode, String> {
    let mut mode = CodeMode::default();
    for (key, value) in opts {
        match key.as_str() {
            "except" => {
                let list = value
                    .into_typed_array::<rhai::Dynamic>()
                    .map_err(|t| format!("except must be a list of tool names, not a {t}"))?;
                mode.except = strings(&list)?;
            }
            "max_calls" => match value.as_int() {
                Ok(n) if (1..=10_000).contains(&n) => mode.max_calls = n as u32,
                _ => return Err("max_calls must be an integer from 1 to 10000".into()),
            },
            "timeout" => mode.timeout = crate::convert::timeout(&value)?,
            other => {
                return Err(format!(
                    "unknown option \"{other}\" (expected except, max_calls, timeout)"
                ));
            }
        }
    }
    Ok(mode)
}
