//! The sandboxed Rhai engine: built once, shared by every load and call.
//!
//! `Engine::new_raw()` plus a shared standard package, hard limits, `eval` disabled, `sleep`
//! replaced by one that honours deadlines, `print`/`debug` routed to the log (stdout belongs to
//! the REPL), imports resolved only inside the scripts folders, and a per-call deadline and
//! cancellation flag checked from `on_progress`.

pub(crate) mod bounded;

use rhai::packages::{Package, StandardPackage};
use rhai::{Dynamic, Engine, EvalAltResult, Position};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Limits applied to every script evaluation.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Maximum operations per evaluation.
    pub max_operations: u64,
    /// Maximum function call depth.
    pub max_call_levels: usize,
    /// Maximum expression nesting depth (global, in functions).
    pub max_expr_depth: (usize, usize),
    /// Maximum string length in bytes.
    pub max_string_size: usize,
    /// Maximum array length.
    pub max_array_size: usize,
    /// Maximum map size.
    pub max_map_size: usize,
    /// Maximum number of modules imported.
    pub max_modules: usize,
    /// Most bytes one evaluation may hold (a handler or a code-mode program, with what it
    /// calls on its thread); enforced where the process counts allocations (`kiln_budget`).
    pub max_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_operations: 50_000_000,
            max_call_levels: 48,
            max_expr_depth: (64, 48),
            max_string_size: 4 * 1024 * 1024,
            max_array_size: 200_000,
            max_map_size: 100_000,
            max_modules: 32,
            max_memory: 64 * 1024 * 1024,
        }
    }
}

/// Token passed to `on_progress` termination when a call's deadline passes.
pub const DEADLINE_TOKEN: &str = "deadline";
/// Token passed to `on_progress` termination when a call is cancelled.
pub const CANCEL_TOKEN: &str = "cancelled";
/// Token passed to `on_progress` termination when a script holds more than its memory budget.
pub const MEMORY_TOKEN: &str = "memory";

/// The per-thread watch on the running evaluation: deadline and cancellation.
#[derive(Default, Clone)]
struct Watch {
    deadline: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
}

thread_local! {
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
}

/// Puts the outer watch back when dropped, so a panic inside cannot leave a pooled thread
/// with a stale deadline or cancel flag.
struct RestoreWatch(Option<Watch>);

impl Drop for RestoreWatch {
    fn drop(&mut self) {
        if let Some(previous) = self.0.take() {
            WATCH.with(|w| *w.borrow_mut() = previous);
        }
    }
}

/// Runs `f` with a deadline, a cancellation flag and a memory budget watched by the engine on
/// this thread.
///
/// A call runs on one thread, so a thread-local watch is exact; nested watches restore the
/// outer one and never extend it, also when `f` panics.
pub fn with_watch<T>(
    deadline: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
    f: impl FnOnce() -> T,
) -> T {
    let previous = WATCH.with(|w| w.borrow().clone());
    let deadline = match (previous.deadline, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let cancel = cancel.or_else(|| previous.cancel.clone());
    let _restore = RestoreWatch(Some(previous));
    WATCH.with(|w| *w.borrow_mut() = Watch { deadline, cancel });
    kiln_budget::with_budget(MAX_MEMORY.load(Ordering::Relaxed), f)
}

/// Runs `f` (a call: a handler, a code-mode program, and whatever converts its result) with
/// the variables its closures capture collected, and empties those still alive when it ends:
/// a closure stored in the variable it captures is a cycle reference counting never frees,
/// and every call would leak what it holds. Inside another call, `f` joins that call's
/// collection (emptied when the outer call ends). Loading a script and the REPL's scope keep
/// theirs (their closures live on).
pub fn dropping_captures<T>(f: impl FnOnce() -> T) -> T {
    if rhai::captured::Cells::current().is_some() {
        return f();
    }
    let cells = rhai::captured::Cells::new();
    let out = cells.enter(f);
    cells.empty();
    out
}

/// The memory budget of an evaluation, in bytes.
pub fn max_memory() -> usize {
    MAX_MEMORY.load(Ordering::Relaxed)
}

/// The memory budget of an evaluation: the last engine built sets it ([`Limits::max_memory`]).
static MAX_MEMORY: AtomicUsize = AtomicUsize::new(64 * 1024 * 1024);

/// Why the current evaluation must stop, if it must.
fn stop_reason() -> Option<&'static str> {
    WATCH.with(|w| {
        let w = w.borrow();
        if w.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Some(CANCEL_TOKEN);
        }
        if w.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(DEADLINE_TOKEN);
        }
        None
    })
}

/// Fails with the engine's own termination when the running call's deadline has passed or it
/// was cancelled, so host functions that wait stop the way scripts do.
pub fn check_stop() -> Result<(), Box<EvalAltResult>> {
    match stop_reason() {
        Some(reason) => Err(EvalAltResult::ErrorTerminated(reason.into(), Position::NONE).into()),
        None => Ok(()),
    }
}

/// Time left before the running call's deadline, if it has one.
pub fn remaining() -> Option<Duration> {
    WATCH.with(|w| {
        w.borrow()
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    })
}

/// A sink for `print` and `debug` output of scripts.
pub type PrintSink = Arc<dyn Fn(&str) + Send + Sync>;

fn standard_package() -> &'static StandardPackage {
    static PKG: OnceLock<StandardPackage> = OnceLock::new();
    PKG.get_or_init(StandardPackage::new)
}

/// Builds the sandboxed engine. `roots` are the scripts folders imports may read from;
/// compiled modules are kept in `modules`.
pub fn build_engine(
    limits: &Limits,
    roots: Vec<PathBuf>,
    modules: super::imports::ModuleCache,
    print: Option<PrintSink>,
) -> Engine {
    MAX_MEMORY.store(limits.max_memory, Ordering::Relaxed);
    let mut engine = Engine::new_raw();
    engine.register_global_module(standard_package().as_shared_module());
    engine
        .set_max_operations(limits.max_operations)
        .set_max_call_levels(limits.max_call_levels)
        .set_max_expr_depths(limits.max_expr_depth.0, limits.max_expr_depth.1)
        .set_max_string_size(limits.max_string_size)
        .set_max_array_size(limits.max_array_size)
        .set_max_map_size(limits.max_map_size)
        .set_max_modules(limits.max_modules)
        .set_max_variables(10_000)
        .set_max_functions(10_000);
    engine.disable_symbol("eval");
    engine.set_module_resolver(super::imports::RootedResolver::new(roots, modules));
    // The memory budget is read every fourth operation (a thread-local load): one operation
    // builds at most one value Rhai's size limits allow, so a script passes its budget by
    // four of those at most before it stops.
    engine.on_progress(|ops| {
        if ops % 4 == 0 && kiln_budget::over_budget() {
            Some(Dynamic::from(MEMORY_TOKEN))
        } else if ops % 256 == 0 {
            stop_reason().map(Dynamic::from)
        } else {
            None
        }
    });
    let sink = print.clone();
    engine.on_print(move |s| match &sink {
        Some(f) => f(s),
        None => tracing::info!(target: "kiln::script", "{s}"),
    });
    engine.on_debug(move |s, src, pos| match &print {
        Some(f) => f(&format!("[debug {}{pos}] {s}", src.unwrap_or(""))),
        None => tracing::debug!(target: "kiln::script", "{}{pos}: {s}", src.unwrap_or("")),
    });
    engine.register_fn("sleep", sleep_int);
    engine.register_fn("sleep", sleep_float);
    engine.register_fn("sleep", sleep_text);
    engine
}

fn sleep_int(seconds: rhai::INT) -> Result<(), Box<EvalAltResult>> {
    sleep_for(Duration::from_secs(seconds.max(0) as u64))
}

fn sleep_float(seconds: rhai::FLOAT) -> Result<(), Box<EvalAltResult>> {
    let secs = if seconds.is_finite() {
        seconds.clamp(0.0, 86_400.0)
    } else {
        0.0
    };
    sleep_for(Duration::from_secs_f64(secs))
}

/// `sleep("50ms")`: a duration with its unit (a bare number is seconds, as `sleep(n)`).
fn sleep_text(text: &str) -> Result<(), Box<EvalAltResult>> {
    use kiln_core::duration::{BareUnit, parse_duration};
    let total = parse_duration(text, BareUnit::Seconds).map_err(|e| format!("sleep(): {e}"))?;
    sleep_for(total.min(Duration::from_secs(86_400)))
}

/// Sleeps in small steps so deadlines and cancellation still stop the script.
fn sleep_for(total: Duration) -> Result<(), Box<EvalAltResult>> {
    let end = Instant::now() + total;
    loop {
        check_stop()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(10)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    #[test]
    fn a_panic_inside_a_watch_leaves_the_thread_with_the_outer_watch() {
        let expired = Some(Instant::now() - Duration::from_secs(1));
        let cancel = Arc::new(AtomicBool::new(true));
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            with_watch(expired, Some(cancel.clone()), || {
                assert!(stop_reason().is_some());
                panic!("a handler's host function panicked");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(stop_reason(), None, "no stale deadline or cancel flag");

        let outer = Some(Instant::now() + Duration::from_secs(60));
        with_watch(outer, None, || {
            let inner = catch_unwind(AssertUnwindSafe(|| {
                with_watch(expired, None, || panic!("inner"))
            }));
            assert!(inner.is_err());
            assert_eq!(stop_reason(), None, "the outer deadline is back");
            assert_eq!(WATCH.with(|w| w.borrow().deadline), outer);
        });
        assert_eq!(WATCH.with(|w| w.borrow().deadline), None);
    }
}
