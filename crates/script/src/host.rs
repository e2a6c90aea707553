//! Host functions scripts may call. Those reaching outside the script are gated at every call:
//! the running tool must declare the capability and the caller must hold a grant whose scope
//! covers the call's target.

pub mod ask;
pub mod io;
pub mod net;
pub mod out;
pub mod terminal;

use kiln_core::capability::{Capability, GrantMode, HostCap};
use kiln_core::context::CallContext;
use kiln_core::services::Services;
use kiln_core::tool::Tool;
use rhai::{Dynamic, Engine, EvalAltResult, Position};
use std::cell::RefCell;
use std::sync::Arc;

/// The value thrown by `tool_error(msg)`: a failure whose message the model sees.
#[derive(Debug, Clone)]
pub struct ToolErrorValue(pub String);

/// The value thrown when a host function is refused.
#[derive(Debug, Clone)]
pub struct DeniedValue(pub String);

struct Frame {
    tool: String,
    declared: Vec<Capability>,
    ctx: CallContext,
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` as tool `tool` called with `ctx`, so gated host functions can check it.
pub fn with_call<T>(tool: &Tool, ctx: &CallContext, f: impl FnOnce() -> T) -> T {
    with_frame(&tool.name, tool.requires.clone(), ctx, f)
}

/// Runs `f` outside any tool (the REPL): everything granted counts as declared.
pub fn with_grants<T>(ctx: &CallContext, f: impl FnOnce() -> T) -> T {
    let declared = ctx.granted.grants.iter().map(|g| g.cap.clone()).collect();
    with_frame("repl", declared, ctx, f)
}

fn with_frame<T>(
    tool: &str,
    declared: Vec<Capability>,
    ctx: &CallContext,
    f: impl FnOnce() -> T,
) -> T {
    FRAMES.with(|s| {
        s.borrow_mut().push(Frame {
            tool: tool.to_string(),
            declared,
            ctx: ctx.clone(),
        })
    });
    let _pop = PopFrame;
    f()
}

/// Pops the frame pushed by [`with_frame`] when dropped, also when the call panics, so a
/// pooled thread never runs a later call as the panicked tool.
struct PopFrame;

impl Drop for PopFrame {
    fn drop(&mut self) {
        FRAMES.with(|s| s.borrow_mut().pop());
    }
}

/// A refusal the model may see.
pub fn denied(msg: String) -> Box<EvalAltResult> {
    EvalAltResult::ErrorRuntime(Dynamic::from(DeniedValue(msg)), Position::NONE).into()
}

/// The scopes of the caller's grants of capability `cap` (`None` for an unscoped grant).
pub fn scopes_for(cap: &str) -> Vec<Option<String>> {
    FRAMES.with(|s| {
        s.borrow()
            .last()
            .map(|f| {
                f.ctx
                    .granted
                    .grants
                    .iter()
                    .filter(|g| g.cap.name == cap)
                    .map(|g| g.cap.scope.clone())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// The context of the running call.
pub fn current_context() -> Option<CallContext> {
    FRAMES.with(|s| s.borrow().last().map(|f| f.ctx.clone()))
}

/// Where the running call's progress and log messages go, if its door listens.
pub fn current_events() -> Option<Arc<kiln_core::context::call_events::CallEvents>> {
    FRAMES.with(|s| s.borrow().last().and_then(|f| f.ctx.run.events.clone()))
}

/// The workspace of the running call.
pub fn workspace() -> Option<std::path::PathBuf> {
    FRAMES.with(|s| {
        s.borrow()
            .last()
            .map(|f| f.ctx.run.services.workspace.clone())
    })
}

/// The services of the running call.
pub fn services() -> Option<Arc<Services>> {
    FRAMES.with(|s| s.borrow().last().map(|f| f.ctx.run.services.clone()))
}

/// Checks that the running tool may use capability `cap` on `target`; returns the services.
pub fn gate(
    func: &str,
    cap: &str,
    target: &str,
    within: impl Fn(&str) -> bool,
) -> Result<Arc<Services>, Box<EvalAltResult>> {
    let check = Check {
        func,
        cap,
        target,
        covers: &|scope: Option<&str>| scope.is_none_or(&within),
        why_not: &String::new,
        approve: true,
    };
    gate_with(&check).map(|(services, _)| services)
}

/// One gate check where an unscoped grant need not cover everything (`net` reaches public
/// addresses only).
pub struct Check<'a> {
    /// The host function.
    pub func: &'a str,
    /// The capability it needs.
    pub cap: &'a str,
    /// The target as the script gave it.
    pub target: &'a str,
    /// Whether a declaration or grant with this scope (`None`: unscoped) covers the call;
    /// an unscoped declaration always does.
    pub covers: &'a dyn Fn(Option<&str>) -> bool,
    /// Why no grant covers it, added to the refusal (empty: nothing to add).
    pub why_not: &'a dyn Fn() -> String,
    /// Ask now for a grant that needs approval (false: a covering needs-approval grant counts,
    /// the question comes later).
    pub approve: bool,
}

/// The scopes of the grant a call used (`None`: unscoped); all of them must hold the call.
pub type GrantScopes = Vec<Option<String>>;

/// Checks declaration and grant; returns the services and the scopes of the grant used.
pub fn gate_with(c: &Check) -> Result<(Arc<Services>, GrantScopes), Box<EvalAltResult>> {
    let (func, cap, target) = (c.func, c.cap, c.target);
    FRAMES.with(|s| {
        let frames = s.borrow();
        let Some(top) = frames.last() else {
            return Err(denied(format!("{func}(\"{target}\") refused: host functions can only be called while a tool runs")));
        };
        let declared = top.declared.iter().any(|d| d.name == cap && (d.scope.is_none() || (c.covers)(d.scope.as_deref())));
        if !declared {
            return Err(denied(format!(
                "{func}(\"{target}\") refused: tool \"{}\" does not declare capability \"{cap}\" for \"{target}\" (add .requires(\"{cap}\"))",
                top.tool
            )));
        }
        let who = top.ctx.who.caller.describe("the caller");
        let grant = top.ctx.granted.grants.grant_covering(cap, c.covers);
        let used = || {
            let scopes = grant.map(|g| g.scopes().map(|s| s.map(str::to_string)).collect()).unwrap_or_default();
            (top.ctx.run.services.clone(), scopes)
        };
        match grant {
            None => {
                let why = (c.why_not)();
                let why = if why.is_empty() { String::new() } else { format!("; {why}") };
                Err(denied(format!(
                    "{func}(\"{target}\") refused: {who} was not granted \"{cap}\" covering \"{target}\" (it has {}){why}",
                    top.ctx.granted.grants.list()
                )))
            }
            Some(g) if g.mode == GrantMode::NeedsApproval && c.approve => {
                let question = format!("tool \"{}\" wants {func}(\"{target}\") [{}]", top.tool, g.cap);
                match kiln_core::approval::ask_person(&top.ctx, &top.tool, None, cap, &question) {
                    Ok(true) => Ok(used()),
                    Ok(false) => Err(denied(format!("{func}(\"{target}\") refused: \"{cap}\" needs approval and it was not approved"))),
                    Err(why) => Err(denied(format!("{func}(\"{target}\") refused: \"{cap}\" needs approval and {why}"))),
                }
            }
            Some(_) => Ok(used()),
        }
    })
}

/// The scopes of the running tool's declarations of capability `cap` (`None`: unscoped).
pub fn declared_scopes(cap: &str) -> Vec<Option<String>> {
    FRAMES.with(|s| {
        s.borrow()
            .last()
            .map(|f| {
                f.declared
                    .iter()
                    .filter(|d| d.name == cap)
                    .map(|d| d.scope.clone())
                    .collect()
            })
            .unwrap_or_default()
    })
}

fn call_tool(name: &str, args: Dynamic) -> Result<Dynamic, Box<EvalAltResult>> {
    let (caller, declared, ctx) = FRAMES
        .with(|s| {
            let frames = s.borrow();
            frames
                .last()
                .map(|f| (f.tool.clone(), f.declared.clone(), f.ctx.clone()))
        })
        .ok_or_else(|| denied(format!("call_tool(\"{name}\") refused: no tool is running")))?;
    let args = crate::convert::to_json(&args)
        .map_err(|e| denied(format!("call_tool(\"{name}\"): arguments: {e}")))?;
    let outcome =
        kiln_core::tool::call_nested(&caller, &declared, &ctx, name, &args).map_err(denied)?;
    match outcome.result {
        Ok(v) => Ok(crate::convert::to_dynamic(&v)),
        Err(f) => Err(EvalAltResult::ErrorRuntime(
            Dynamic::from(ToolErrorValue(format!("{name}: {}", f.message))),
            Position::NONE,
        )
        .into()),
    }
}

fn store_ns(func: &str, ns: &str) -> Result<Arc<Services>, Box<EvalAltResult>> {
    gate(func, HostCap::Store.name(), ns, |scope| scope == ns)
}

/// Registers a function the application gives scripts, behind the same gate as the built-ins.
pub fn register_app(engine: &mut Engine, f: &kiln_registry::native::HostFn) {
    let f = f.clone();
    let types = vec![std::any::TypeId::of::<Dynamic>(); f.params.len()];
    engine.register_raw_fn(
        f.name.clone(),
        types,
        move |_, args: &mut [&mut Dynamic]| -> Result<Dynamic, Box<EvalAltResult>> {
            let args = args
                .iter()
                .map(|a| crate::convert::to_json(a))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| denied(format!("{}(): arguments: {e}", f.name)))?;
            let target = (f.target)(&args);
            gate(&f.name, &f.capability, &target, |scope| match &f.in_scope {
                Some(check) => check(scope, &args),
                None => scope == target,
            })?;
            let ctx = current_context()
                .ok_or_else(|| denied(format!("{}() refused: no tool is running", f.name)))?;
            match (f.func)(&args, &ctx) {
                Ok(v) => Ok(crate::convert::to_dynamic(&v)),
                Err(msg) => Err(EvalAltResult::ErrorRuntime(
                    Dynamic::from(ToolErrorValue(msg)),
                    Position::NONE,
                )
                .into()),
            }
        },
    );
}

/// Registers the host functions.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ToolErrorValue>("ToolError");
    engine.register_fn("to_string", |e: &mut ToolErrorValue| e.0.clone());
    engine.register_fn("to_debug", |e: &mut ToolErrorValue| {
        format!("tool_error({:?})", e.0)
    });
    engine.register_type_with_name::<DeniedValue>("Denied");
    engine.register_fn("to_string", |e: &mut DeniedValue| e.0.clone());
    engine.register_fn("tool_error", |msg: &str| ToolErrorValue(msg.to_string()));
    engine.register_fn("tool_error", |msg: Dynamic| ToolErrorValue(msg.to_string()));

    engine.register_fn("now", || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    });
    engine.register_fn("now_iso", crate::math::now_iso);
    engine.register_fn(
        "json_encode",
        |ctx: rhai::NativeCallContext, v: Dynamic| -> Result<String, Box<EvalAltResult>> {
            // The text must fit the string limit: refused before it is rendered.
            let limit = match ctx.engine().max_string_size() {
                0 => crate::convert::MAX_JSON_BYTES,
                n => n,
            };
            match crate::convert::to_json_within(&v, limit) {
                Ok(j) => Ok(j.to_string()),
                Err(crate::convert::JsonError::TooLarge(_)) => Err(
                    EvalAltResult::ErrorDataTooLarge("Length of string".into(), Position::NONE)
                        .into(),
                ),
                Err(e) => Err(e.to_string().into()),
            }
        },
    );
    engine.register_fn(
        "json_decode",
        |s: &str| -> Result<Dynamic, Box<EvalAltResult>> {
            let v: serde_json::Value =
                serde_json::from_str(s).map_err(|e| format!("json_decode: {e}"))?;
            Ok(crate::convert::to_dynamic(&v))
        },
    );
    engine.register_fn(
        "math_eval",
        |expr: &str| -> Result<rhai::FLOAT, Box<EvalAltResult>> {
            crate::math::eval(expr).map_err(|e| {
                EvalAltResult::ErrorRuntime(Dynamic::from(ToolErrorValue(e)), Position::NONE).into()
            })
        },
    );
    engine.register_fn("call_tool", call_tool);

    engine.register_fn(
        "store_get",
        |ns: &str, key: &str| -> Result<Dynamic, Box<EvalAltResult>> {
            let svc = store_ns("store_get", ns)?;
            let value = svc
                .store
                .get(ns, key)
                .map_err(|e| store_failed("store_get", e))?;
            Ok(value.map_or(Dynamic::UNIT, |v| crate::convert::to_dynamic(&v)))
        },
    );
    engine.register_fn(
        "store_set",
        |ns: &str, key: &str, value: Dynamic| -> Result<(), Box<EvalAltResult>> {
            let svc = store_ns("store_set", ns)?;
            let v = crate::convert::to_json(&value).map_err(|e| format!("store_set: {e}"))?;
            svc.store
                .set(ns, key, v)
                .map_err(|e| store_failed("store_set", e))
        },
    );
    engine.register_fn(
        "store_delete",
        |ns: &str, key: &str| -> Result<bool, Box<EvalAltResult>> {
            let svc = store_ns("store_delete", ns)?;
            svc.store
                .delete(ns, key)
                .map_err(|e| store_failed("store_delete", e))
        },
    );
    engine.register_fn(
        "store_list",
        |ns: &str| -> Result<rhai::Array, Box<EvalAltResult>> {
            let svc = store_ns("store_list", ns)?;
            let keys = svc
                .store
                .list(ns)
                .map_err(|e| store_failed("store_list", e))?;
            Ok(keys.into_iter().map(Dynamic::from).collect())
        },
    );
}

/// A store that failed (locked, corrupt): a runtime error, never a missing key.
fn store_failed(func: &str, error: String) -> Box<EvalAltResult> {
    format!("{func}: {error}").into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    #[test]
    fn a_panic_inside_a_call_pops_its_frame() {
        let services = Arc::new(Services::new(std::path::PathBuf::from("/workspace")));
        let ctx = CallContext::new(kiln_core::capability::Grants::default(), services);
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            with_grants(&ctx, || {
                assert!(workspace().is_some());
                panic!("a host function panicked");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(workspace(), None, "no frame is left behind");
        assert!(
            gate("store_get", "store", "ns", |_| true).is_err(),
            "a later call is not taken for the panicked one"
        );
    }
}
