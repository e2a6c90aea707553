//! `mcp_server("name")`: an outside MCP server whose tools join the registry as `NAME__TOOL`,
//! declared in a script: `.command(program, [args])` (stdio, started in the workspace) or
//! `.url("http://...")` with `.bearer_env("VAR")`; `.pass_env(["VAR"])` passes variables kiln
//! would otherwise withhold (`.env([...])` is its deprecated spelling); `.rate_limit(...)` applies to each of its tools.

use crate::dsl::rate_limit::{limit, limit_per};
use crate::dsl::{lock, strings};
use kiln_core::error::LoadError;
use kiln_core::ratelimit::RateLimit;
use kiln_registry::mount_spec::{MountSpec, Target};
use rhai::{Array, EvalAltResult, FLOAT, INT, Map, NativeCallContext, Position};
use std::sync::{Arc, Mutex};

/// What a script said about one MCP server.
#[derive(Debug, Default)]
pub struct McpServerDraft {
    /// The server's name.
    pub name: String,
    /// Position of the `mcp_server(...)` call.
    pub pos: Position,
    /// `.command(program, args)`.
    pub command: Option<(String, Vec<String>)>,
    /// `.url(url)`.
    pub url: Option<String>,
    /// `.bearer_env(var)` and its position.
    pub bearer_env: Option<(String, Position)>,
    /// `.oauth(#{ ... })` and its position.
    pub oauth: Option<(kiln_registry::mount_spec::OAuth, Position)>,
    /// `.pass_env([...])`, its position and the spelling used.
    pub env: Option<(Vec<String>, Position, &'static str)>,
    /// `.rate_limit(...)`.
    pub rate_limit: Option<RateLimit>,
    /// Problems found while building.
    pub errors: Vec<(Position, String)>,
}

/// Handle to a server draft, returned by every `mcp_server` builder method.
#[derive(Clone)]
pub struct McpServerBuilder(Arc<Mutex<McpServerDraft>>);

impl McpServerBuilder {
    fn with(&mut self, f: impl FnOnce(&mut McpServerDraft)) -> McpServerBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }

    fn command(&mut self, pos: Position, program: &str, args: &Array) -> McpServerBuilder {
        self.with(|d| match strings(args) {
            Ok(_) if d.command.is_some() || d.url.is_some() => d.errors.push((
                pos,
                "a server has one .command(...) or one .url(...)".into(),
            )),
            Ok(args) if !program.trim().is_empty() => {
                d.command = Some((program.to_string(), args));
            }
            Ok(_) => d.errors.push((pos, "command: the program is empty".into())),
            Err(e) => d.errors.push((pos, format!("command: {e}"))),
        })
    }

    fn rate_limit(&mut self, pos: Position, built: Result<RateLimit, String>) -> McpServerBuilder {
        self.with(|d| match built {
            Ok(l) => d.rate_limit = Some(l),
            Err(e) => d.errors.push((pos, e)),
        })
    }
}

fn new_server(ctx: NativeCallContext, name: &str) -> Result<McpServerBuilder, Box<EvalAltResult>> {
    let draft = Arc::new(Mutex::new(McpServerDraft {
        name: name.to_string(),
        pos: ctx.call_position(),
        ..McpServerDraft::default()
    }));
    crate::dsl::collect_draft(&draft, "mcp_server", ctx.call_position())?;
    Ok(McpServerBuilder(draft))
}

/// Registers `mcp_server(...)` and its builder methods.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine.register_type_with_name::<McpServerBuilder>("McpServerBuilder");
    engine.register_fn("mcp_server", new_server);
    engine.register_fn(
        "command",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, program: &str| {
            b.command(ctx.call_position(), program, &Array::new())
        },
    );
    engine.register_fn(
        "command",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, program: &str, args: Array| {
            b.command(ctx.call_position(), program, &args)
        },
    );
    engine.register_fn(
        "url",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, url: &str| {
            let pos = ctx.call_position();
            b.with(|d| {
                if d.command.is_some() || d.url.is_some() {
                    d.errors.push((
                        pos,
                        "a server has one .command(...) or one .url(...)".into(),
                    ));
                } else {
                    d.url = Some(url.to_string());
                }
            })
        },
    );
    engine.register_fn(
        "bearer_env",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, var: &str| {
            let pos = ctx.call_position();
            // It holds a credential: `env` must not hand it to a tool.
            kiln_core::capability::declare_secret_var(var);
            b.with(|d| d.bearer_env = Some((var.to_string(), pos)))
        },
    );
    register_oauth(engine);
    // `.env([...])` is the deprecated spelling (renames.rs): `env(name)` reads a variable.
    for key in ["pass_env", "env"] {
        engine.register_fn(
            key,
            move |ctx: NativeCallContext, b: &mut McpServerBuilder, vars: Array| {
                let pos = ctx.call_position();
                b.with(|d| match strings(&vars) {
                    Ok(v) => d.env = Some((v, pos, key)),
                    Err(e) => d.errors.push((pos, format!("{key}: {e}"))),
                })
            },
        );
    }
    register_rate_limits(engine);
}

/// `.oauth(#{ ... })`'s options as OAuth settings, and what is wrong with them.
pub(crate) fn oauth_options(opts: Map) -> (kiln_registry::mount_spec::OAuth, Vec<String>) {
    let mut oauth = kiln_registry::mount_spec::OAuth::default();
    let mut problems = Vec::new();
    for (key, value) in opts {
        let text = match value.clone().into_array() {
            Ok(items) => Ok(items
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")),
            Err(_) => value.into_string().map_err(|t| {
                format!("oauth: {key} must be a string (or a list of scopes), not {t}")
            }),
        };
        if let Err(e) = text.and_then(|t| oauth.set(&key, &t)) {
            problems.push(e);
        }
    }
    (oauth, problems)
}

/// `.oauth([options])`: log in to a URL server with OAuth.
fn register_oauth(engine: &mut rhai::Engine) {
    engine.register_fn(
        "oauth",
        |ctx: NativeCallContext, b: &mut McpServerBuilder| {
            let pos = ctx.call_position();
            b.with(|d| d.oauth = Some((kiln_registry::mount_spec::OAuth::default(), pos)))
        },
    );
    engine.register_fn(
        "oauth",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, opts: Map| {
            let pos = ctx.call_position();
            let (oauth, problems) = oauth_options(opts);
            b.with(|d| {
                d.errors.extend(problems.into_iter().map(|e| (pos, e)));
                d.oauth = Some((oauth, pos));
            })
        },
    );
}

/// `.rate_limit(calls, per[, options])`: `per` in seconds (integer or fractional) or a
/// duration with its unit.
fn register_rate_limits(engine: &mut rhai::Engine) {
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: &str| {
            b.rate_limit(ctx.call_position(), limit_per(calls, per, &Map::new()))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: &str, opts: Map| {
            b.rate_limit(ctx.call_position(), limit_per(calls, per, &opts))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: INT| {
            b.rate_limit(ctx.call_position(), limit(calls, per as FLOAT, &Map::new()))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: FLOAT| {
            b.rate_limit(ctx.call_position(), limit(calls, per, &Map::new()))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: INT, opts: Map| {
            b.rate_limit(ctx.call_position(), limit(calls, per as FLOAT, &opts))
        },
    );
    engine.register_fn(
        "rate_limit",
        |ctx: NativeCallContext, b: &mut McpServerBuilder, calls: INT, per: FLOAT, opts: Map| {
            b.rate_limit(ctx.call_position(), limit(calls, per, &opts))
        },
    );
}

/// Checks a draft and turns it into the server to mount, or the located errors.
pub(crate) fn finish(d: McpServerDraft, path: &str) -> Result<MountSpec, Vec<LoadError>> {
    let at = |pos: Position| crate::loc(path, pos);
    let name = d.name.clone();
    let err =
        |pos: Position, m: String| LoadError::at(at(pos), format!("mcp_server \"{name}\": {m}"));
    let mut errors: Vec<LoadError> = d.errors.iter().map(|(p, m)| err(*p, m.clone())).collect();
    if let Err(reason) = MountSpec::check_name(&d.name) {
        errors.push(err(d.pos, reason));
    }
    let target = match (d.command, d.url) {
        (Some((program, args)), None) => {
            if let Some((_, pos)) = &d.bearer_env {
                errors.push(err(
                    *pos,
                    ".bearer_env(...) goes with .url(...), not .command(...)".into(),
                ));
            }
            Some(Target::Command { program, args })
        }
        (None, Some(url)) => {
            if let Some((_, pos, key)) = &d.env {
                errors.push(err(
                    *pos,
                    format!(
                        ".{key}(...) goes with .command(...): a URL server has its own environment"
                    ),
                ));
            }
            if let Err(reason) = kiln_registry::mount_spec::check_url(&url) {
                errors.push(err(d.pos, reason));
            }
            if let (Some((_, pos)), Some(_)) = (&d.bearer_env, &d.oauth) {
                errors.push(err(
                    *pos,
                    "a server takes .bearer_env(...) or .oauth(...), not both".into(),
                ));
            }
            Some(Target::Url {
                url,
                bearer_env: d.bearer_env.map(|(v, _)| v),
                oauth: d.oauth.map(|(o, _)| o),
            })
        }
        _ => {
            errors.push(err(
                d.pos,
                "needs .command(program, [args]) or .url(\"http://...\")".into(),
            ));
            None
        }
    };
    match target {
        Some(target) if errors.is_empty() => Ok(MountSpec {
            name: d.name,
            target,
            env: d.env.map(|(v, ..)| v).unwrap_or_default(),
            rate_limit: d.rate_limit,
            declared: Some(at(d.pos)),
        }),
        _ => Err(errors),
    }
}
