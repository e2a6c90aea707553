//! `policy(name).applies_to(["db_*"]).check(|c, ctx| ...)`: call policies in scripts, and
//! the verdicts a check returns: `allow()`, `deny(reason)`, `require_approval(reason)` (`ask(reason)`
//! is its deprecated spelling), or a map of rewritten arguments. A check that throws, runs past its second or returns anything else
//! denies.

use crate::dsl::{collect_draft, lock, strings};
use crate::handler::ctx_map;
use crate::{ScriptUnit, sandbox};
use kiln_core::context::CallContext;
use kiln_core::error::public::scrub;
use kiln_core::error::{LoadError, SourceLoc};
use kiln_core::tool::policy::{Policy, Verdict, glob};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, NativeCallContext, Position};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a check may take.
const CHECK_DEADLINE: Duration = Duration::from_secs(1);
/// The key of a verdict value.
const VERDICT_KEY: &str = "$policy";

/// What a script said about one policy.
#[derive(Debug, Default)]
pub struct PolicyDraft {
    name: String,
    pos: Position,
    patterns: Vec<String>,
    check: Option<(FnPtr, Position)>,
    errors: Vec<(Position, String)>,
}

/// Handle to a policy draft.
#[derive(Clone)]
pub struct PolicyBuilder(Arc<Mutex<PolicyDraft>>);

impl PolicyBuilder {
    fn with(&mut self, f: impl FnOnce(&mut PolicyDraft)) -> PolicyBuilder {
        f(&mut lock(&self.0));
        self.clone()
    }
}

/// A policy written in Rhai.
pub struct ScriptPolicy {
    name: String,
    patterns: Vec<String>,
    check: FnPtr,
    unit: Arc<ScriptUnit>,
    loc: SourceLoc,
}

impl Policy for ScriptPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.patterns.iter().any(|p| glob(p, tool))
    }

    fn check(&self, tool: &str, args: &Value, ctx: &CallContext) -> Verdict {
        let mut call = Map::new();
        call.insert("name".into(), tool.into());
        call.insert("args".into(), crate::convert::to_dynamic(args));
        let state = crate::handler::state_dynamic(ctx);
        let deadline = Some(Instant::now() + CHECK_DEADLINE);
        let unit = &self.unit;
        let result = sandbox::with_watch(deadline, None, || {
            self.check
                .call::<Dynamic>(&unit.engine, &unit.ast, (call, ctx_map(ctx, &state)))
        });
        match result {
            Ok(v) => verdict(v),
            Err(e) => Verdict::Deny(format!(
                "the policy failed: {}",
                scrub(&crate::failure::describe(&e, &shown(&self.loc.path)))
            )),
        }
    }

    fn loc(&self) -> &SourceLoc {
        &self.loc
    }
}

/// A check's value as a verdict.
fn verdict(v: Dynamic) -> Verdict {
    let Some(m) = v.clone().try_cast::<Map>() else {
        return Verdict::Deny(format!(
            "the policy returned a {}; expected allow(), deny(reason), require_approval(reason) or a map of arguments",
            v.type_name()
        ));
    };
    let reason = || m.get("reason").map(|r| r.to_string()).unwrap_or_default();
    match m.get(VERDICT_KEY).map(|k| k.to_string()) {
        Some(k) if k == "allow" => Verdict::Allow,
        Some(k) if k == "deny" => Verdict::Deny(reason()),
        Some(k) if k == "ask" => Verdict::NeedsApproval(reason()),
        _ => match crate::convert::to_json(&Dynamic::from_map(m.clone())) {
            Ok(args) => Verdict::Rewrite(args),
            Err(e) => Verdict::Deny(format!("the policy's arguments are not JSON: {e}")),
        },
    }
}

fn marker(kind: &str, reason: &str) -> Map {
    let mut m = Map::new();
    m.insert(VERDICT_KEY.into(), kind.into());
    m.insert("reason".into(), reason.into());
    m
}

/// Turns a draft into a policy of `unit`.
pub fn finish(d: PolicyDraft, unit: &Arc<ScriptUnit>) -> Result<Arc<dyn Policy>, Vec<LoadError>> {
    let at = |pos: Position| crate::loc(&unit.path, pos);
    let what = format!("policy \"{}\"", d.name);
    let mut errors: Vec<LoadError> = d
        .errors
        .iter()
        .map(|(p, m)| LoadError::at(at(*p), format!("{what}: {m}")))
        .collect();
    if d.patterns.is_empty() {
        errors.push(LoadError::at(
            at(d.pos),
            format!("{what} has no .applies_to([...]): name the tools it checks (\"*\" for all)"),
        ));
    }
    let check = match d.check {
        None => {
            errors.push(LoadError::at(
                at(d.pos),
                format!("{what} has no .check(|call, ctx| ...)"),
            ));
            None
        }
        Some((f, pos)) => match crate::handler_arity(&unit.ast, &f) {
            Some(2) => Some(f),
            Some(n) => {
                errors.push(LoadError::at(
                    at(pos),
                    format!("{what}: check takes {n} parameters; expected |c, ctx|"),
                ));
                None
            }
            None => {
                errors.push(LoadError::at(
                    at(pos),
                    format!(
                        "{what}: check function \"{}\" is not defined in this file",
                        f.fn_name()
                    ),
                ));
                None
            }
        },
    };
    match check {
        Some(check) if errors.is_empty() => Ok(Arc::new(ScriptPolicy {
            name: d.name,
            patterns: d.patterns,
            check,
            unit: unit.clone(),
            loc: at(d.pos),
        })),
        _ => Err(errors),
    }
}

fn new_policy(ctx: NativeCallContext, name: &str) -> Result<PolicyBuilder, Box<EvalAltResult>> {
    let pos = ctx.call_position();
    let draft = Arc::new(Mutex::new(PolicyDraft {
        name: name.to_string(),
        pos,
        ..PolicyDraft::default()
    }));
    collect_draft(&draft, "policy", pos)?;
    Ok(PolicyBuilder(draft))
}

/// Registers `policy(...)`, its methods and the verdicts.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<PolicyBuilder>("PolicyBuilder");
    engine.register_fn("policy", new_policy);
    engine.register_fn(
        "applies_to",
        |ctx: NativeCallContext, b: &mut PolicyBuilder, list: Array| {
            let pos = ctx.call_position();
            b.with(|d| match strings(&list) {
                Ok(l) => d.patterns = l,
                Err(e) => d.errors.push((pos, format!("applies_to: {e}"))),
            })
        },
    );
    engine.register_fn(
        "check",
        |ctx: NativeCallContext, b: &mut PolicyBuilder, f: FnPtr| {
            let pos = ctx.call_position();
            b.with(|d| d.check = Some((f, pos)))
        },
    );
    engine.register_fn("allow", || marker("allow", ""));
    engine.register_fn("deny", |reason: &str| marker("deny", reason));
    engine.register_fn("require_approval", |reason: &str| marker("ask", reason));
    // Deprecated: `.needs_approval([...])` is an agent's grants, so the verdict has a name of
    // its own (renames.rs warns and `kiln check --fix` rewrites it).
    engine.register_fn("needs_approval", |reason: &str| marker("ask", reason));
    engine.register_fn("ask", |reason: &str| marker("ask", reason));
}

/// Stands for the policies of a file that did not load: it denies every call until the file
/// loads, so a policy that cannot be read never means no policy.
pub struct FailClosed {
    name: String,
    why: String,
    loc: SourceLoc,
}

impl FailClosed {
    /// The stand-in for `path`, whose first error is `first`. Its name and refusal show the
    /// file's name, not where it lives: callers (MCP clients, run reports, the model) see it.
    pub fn new(path: &str, first: &LoadError) -> FailClosed {
        let at = SourceLoc::new(&shown(&first.loc.path), first.loc.line, first.loc.column);
        FailClosed {
            name: format!("policies of {}", shown(path)),
            why: format!("{at}: {}", scrub(&first.message)),
            loc: SourceLoc::new(path, 0, 0),
        }
    }
}

/// A script's path as a policy's callers see it: its file name (as every error callers see
/// shows script paths, see [`kiln_core::error::public`]).
fn shown(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

impl Policy for FailClosed {
    fn name(&self) -> &str {
        &self.name
    }
    fn applies_to(&self, _tool: &str) -> bool {
        true
    }
    fn check(&self, _tool: &str, _args: &Value, _ctx: &CallContext) -> Verdict {
        Verdict::Deny(format!(
            "the file did not load, so every call is refused until it does: {}",
            self.why
        ))
    }
    fn loc(&self) -> &SourceLoc {
        &self.loc
    }
}
