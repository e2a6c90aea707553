//! A static look at a handler: which gated host functions it (or the script functions and
//! closures it reaches) may call, so `kiln check` can warn before a model finds out.

use rhai::{AST, ASTNode, Expr, Position, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// The capability each gated host function needs.
pub fn capability_of(function: &str) -> Option<&'static str> {
    Some(match function {
        "http_get" | "http_post" => "net",
        "read_file" | "list_dir" => "fs.read",
        "write_file" => "fs.write",
        "env" => "env",
        "store_get" | "store_set" | "store_delete" | "store_list" => "store",
        "sample" => "sampling",
        _ => return None,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

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
