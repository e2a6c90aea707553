//! (kiln) Every walk over a value that refers to itself ends with an error or a marker,
//! never a recursion without end or a lock that waits forever.
#![cfg(all(feature = "sync", not(feature = "no_closure")))]

use rhai::{Dynamic, Engine, EvalAltResult};

/// A map `a` holding a closure that captures `a`: the smallest cycle a script can build.
const CYCLE: &str = "let a = #{}; let f = || a; a.f = f;";

fn run(setup: &str, expr: &str) -> Result<Dynamic, Box<EvalAltResult>> {
    let engine = Engine::new();
    // On a thread with a small stack, so a walk without a bound fails the test quickly.
    let script = format!("{setup} {expr}");
    std::thread::Builder::new()
        .stack_size(4 << 20)
        .spawn(move || engine.eval::<Dynamic>(&script))
        .unwrap()
        .join()
        .unwrap()
}

fn refused(setup: &str, expr: &str) {
    refused_for(setup, expr, "refers to itself");
}

fn refused_for(setup: &str, expr: &str, why: &str) {
    let started = std::time::Instant::now();
    match run(setup, expr) {
        Err(e) => assert!(e.to_string().contains(why), "{expr}: {e}"),
        Ok(v) => panic!("{expr}: expected an error, got {v:?}"),
    }
    assert!(started.elapsed().as_secs() < 60, "{expr} took {:?}", started.elapsed());
}

/// Ends quickly, with a value or an error (Rhai compares no function pointers).
fn ends(setup: &str, expr: &str) {
    let started = std::time::Instant::now();
    let _ = run(setup, expr);
    assert!(started.elapsed().as_secs() < 60, "{expr} took {:?}", started.elapsed());
}

/// The cycle as a value on the Rust side.
fn cycle() -> Dynamic {
    Engine::new().eval(&format!("{CYCLE} a")).unwrap()
}

#[test]
fn to_json_of_a_cycle_is_an_error() {
    refused(CYCLE, "#{x: f}.to_json()");
    refused(CYCLE, "a.to_json()");
    refused(CYCLE, "#{x: [[f]]}.to_json()");
}

#[test]
fn printing_comparing_and_searching_a_cycle_end() {
    let exprs = [
        "to_string(a)", "`${a}`", "a.to_string()", "to_debug(a)", "`${#{x: f}}`", "print(a)",
        "debug(a)", "[a] == [a]", "[a].contains(a)", "[a].index_of(a)", "a in [a]",
    ];
    for expr in exprs {
        ends(CYCLE, expr);
    }
}

#[test]
fn formatting_and_hashing_a_cycle_from_rust_end() {
    use std::hash::{Hash, Hasher};
    let value = cycle();
    assert!(format!("{value}").starts_with("#{"));
    assert!(format!("{value:?}").contains("<shared>"), "{value:?}");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    let _ = hasher.finish();
    let copy = value.clone();
    assert_eq!(copy.type_name(), value.type_name());
}

#[test]
fn hashing_a_cycle_ends() {
    // `switch` hashes the value it looks up.
    let v = run(CYCLE, "switch a { 1 => 0, _ => 2 }").unwrap();
    assert_eq!(v.as_int().unwrap(), 2);
    let v = run(CYCLE, "switch [a, f] { 1 => 0, _ => 2 }").unwrap();
    assert_eq!(v.as_int().unwrap(), 2);
}

#[test]
fn sorting_and_cloning_a_cycle_end() {
    ends(CYCLE, "let b = [a, a]; b.sort(); b.len()");
    let v = run(CYCLE, "let b = a; let c = [b, b, a]; c.len()").unwrap();
    assert_eq!(v.as_int().unwrap(), 3);
}

#[test]
fn serde_of_a_cycle_is_an_error() {
    let json = serde_json::to_string(&cycle());
    assert!(json.unwrap_err().to_string().contains("refers to itself"));
}

#[test]
fn sharing_without_a_cycle_is_walked_as_before() {
    let engine = Engine::new();
    let v: String = engine.eval("let a = #{n: 1}; let f = || a; #{x: a, y: a, z: [a, a]}.to_json()").unwrap();
    assert_eq!(v, r#"{"x":{"n":1},"y":{"n":1},"z":[{"n":1},{"n":1}]}"#);
    let v: bool = engine.eval("let a = #{n: 1}; let f = || a; [a, a] == [a, #{n: 1}]").unwrap();
    assert!(v);
    let v: String = engine.eval("let a = [1]; let f = || a; `${[a, a]}`").unwrap();
    assert_eq!(v, "[[1], [1]]");
}


#[test]
fn a_walk_over_a_part_shared_many_times_is_bounded() {
    // Each level holds the one before twice: 2^40 parts to walk, a few hundred bytes stored.
    let setup = "let x = []; for i in 0..40 { let y = x; let f = || y; x = [f, f]; }";
    refused_for(setup, "#{x: x}.to_json()", "too large to walk");
}
