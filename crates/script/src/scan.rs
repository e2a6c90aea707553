//! A static look at a handler: which gated host functions it (or the script functions and
//! closures it reaches) may call, so `kiln check` can warn before a model finds out.

use rhai::{AST, ASTNode, Expr, Position, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// The capability each gated host function needs (the DSL's table says).
pub fn capability_of(function: &str) -> Option<&'static str> {
    crate::reference::capability_of(function)
}

type Pos = (usize, usize);

fn pos(p: Position) -> Pos {
    (p.line().unwrap_or(0), p.position().unwrap_or(0))
}

/// A name an expression calls or refers to (function call, method call, `Fn("name")`, pointer).
fn referenced(e: &Expr) -> Option<String> {
    match e {
        Expr::FnCall(call, _) | Expr::MethodCall(call, _) => Some(call.name.to_string()),
        Expr::StringConstant(s, _) => Some(s.to_string()),
        Expr::DynamicConstant(d, _) => d
            .read_lock::<rhai::FnPtr>()
            .map(|f| f.fn_name().to_string()),
        _ => None,
    }
}

/// `(function, capability)` pairs reachable from script function `start`; `app` names the
/// capability of each function the application added.
pub fn gated_calls(
    ast: &AST,
    start: &str,
    app: &BTreeMap<String, String>,
) -> BTreeSet<(String, String)> {
    // An expression-bodied closure has no end position: it ends before the next top-level
    // statement or named function.
    let mut boundaries: Vec<Pos> = ast.statements().iter().map(|s| pos(s.position())).collect();
    boundaries.extend(
        ast.iter_fn_def()
            .filter(|d| !d.name.starts_with("anon$"))
            .map(|d| pos(d.body.start_position())),
    );
    let defs: Vec<(String, Pos, Pos)> = ast
        .iter_fn_def()
        .map(|d| {
            let start = pos(d.body.start_position());
            let end = match d.body.end_position() {
                p if p.is_none() => boundaries
                    .iter()
                    .filter(|b| **b > start)
                    .min()
                    .copied()
                    .unwrap_or((usize::MAX, 0)),
                p => pos(p),
            };
            (d.name.to_string(), start, end)
        })
        .collect();
    let mut refs: Vec<(Pos, String)> = Vec::new();
    ast.walk(&mut |path: &[ASTNode]| {
        let found = match path.last() {
            Some(ASTNode::Expr(e)) => referenced(e).map(|n| (pos(e.position()), n)),
            Some(ASTNode::Stmt(Stmt::FnCall(call, p))) => Some((pos(*p), call.name.to_string())),
            _ => None,
        };
        refs.extend(found);
        true
    });
    // Everything textually inside a reachable function is reachable (nested closures), and so is
    // every script function it names.
    let inside = |p: Pos, d: &(String, Pos, Pos)| d.1 <= p && p <= d.2;
    let mut reachable: BTreeSet<usize> = defs
        .iter()
        .enumerate()
        .filter(|(_, d)| d.0 == start)
        .map(|(i, _)| i)
        .collect();
    let mut found = BTreeSet::new();
    loop {
        let before = reachable.len();
        for (i, d) in defs.iter().enumerate() {
            if reachable.iter().any(|&r| inside(d.1, &defs[r])) {
                reachable.insert(i);
            }
        }
        for (p, name) in &refs {
            if !reachable.iter().any(|&r| inside(*p, &defs[r])) {
                continue;
            }
            if let Some(cap) = capability_of(name).map(str::to_string) {
                found.insert((name.clone(), cap));
            } else if let Some(cap) = app.get(name) {
                found.insert((name.clone(), cap.clone()));
            }
            for (i, d) in defs.iter().enumerate() {
                if &d.0 == name {
                    reachable.insert(i);
                }
            }
        }
        if reachable.len() == before {
            return found;
        }
    }
}

/// Host functions that wait on the runtime that called the tool: a nested tool call may drive
/// an async handler there, and `sample` waits for the calling client's answer.
const WAITS_ON_CALLER: &[&str] = &["call_tool", "sample", "elicit", "roots", "ask_client"];

/// Whether handlers of this script may run on the very thread that drives the caller's
/// runtime (no hand-off to the blocking pool): nothing in the file, in any function, closure
/// or top-level code, names a host function that waits on that runtime or a function the
/// application added, builds a function pointer from a name (`Fn`), or uses a module (whose
/// code this look does not see). Conservative by design: one such name anywhere in the file
/// sends every handler of it to the pool.
pub fn may_run_in_place(ast: &AST, app: &BTreeMap<String, String>) -> bool {
    let waits = |name: &str| WAITS_ON_CALLER.contains(&name) || app.contains_key(name);
    let call_waits = |call: &rhai::FnCallExpr| {
        call.is_qualified() || call.name.as_str() == "Fn" || waits(call.name.as_str())
    };
    let mut in_place = true;
    ast.walk(&mut |path: &[ASTNode]| {
        let waiting = match path.last() {
            Some(ASTNode::Stmt(Stmt::Import(..))) => true,
            Some(ASTNode::Stmt(Stmt::FnCall(call, _))) => call_waits(call),
            Some(ASTNode::Expr(Expr::FnCall(call, _) | Expr::MethodCall(call, _))) => {
                call_waits(call)
            }
            Some(ASTNode::Expr(e)) => referenced(e).is_some_and(|name| waits(&name)),
            _ => false,
        };
        in_place &= !waiting;
        in_place
    });
    in_place
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scripts_that_cannot_wait_on_the_caller_run_in_place() {
        let engine = rhai::Engine::new_raw();
        let app = BTreeMap::from([("crm_lookup".to_string(), "crm".to_string())]);
        let in_place = |src: &str| may_run_in_place(&engine.compile(src).expect("compiles"), &app);
        assert!(in_place(
            "fn h(a) { let f = |x| x * 2; [1, 2].map(f).len() + a.n }"
        ));
        assert!(in_place("fn h(a) { read_file(a.path) }"));
        for waits in [
            "fn h(a) { call_tool(\"other\", #{}) }",
            "fn h(a) { helper() }\nfn helper() { sample(\"why?\") }",
            "fn h(a) { let f = |x| call_tool(x, #{}); f.call(\"t\") }",
            "fn h(a) { crm_lookup(a) }",
            "fn h(a) { let f = Fn(a.name); f.call() }",
            "fn h(a) { call(\"call_tool\", \"t\", #{}) }",
            "import \"lib\" as lib;\nfn h(a) { lib::work(a) }",
        ] {
            assert!(!in_place(waits), "{waits}");
        }
    }

    fn scan(src: &str, start: &str) -> Vec<String> {
        let engine = rhai::Engine::new_raw();
        let ast = engine.compile(src).expect("compiles");
        let app = BTreeMap::from([("crm_lookup".to_string(), "crm".to_string())]);
        gated_calls(&ast, start, &app)
            .into_iter()
            .map(|(f, c)| format!("{f}:{c}"))
            .collect()
    }

    #[test]
    fn finds_calls_in_the_function_its_helpers_and_nested_closures() {
        let src = "fn h(a) { helper() }\nfn helper() { store_get(\"x\", \"y\") }\nfn c(a) { let f = |x| read_file(x); f.call(1) }\nfn clean(a) { 1 + 1 }\nfn app(a) { crm_lookup(a) }";
        assert_eq!(scan(src, "h"), vec!["store_get:store"]);
        assert_eq!(scan(src, "app"), vec!["crm_lookup:crm"]);
        assert_eq!(scan(src, "c"), vec!["read_file:fs.read"]);
        assert!(scan(src, "clean").is_empty());
    }
}
