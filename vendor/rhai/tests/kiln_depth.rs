//! (kiln) Data may nest at most `MAX_DATA_DEPTH` levels: a value nested deeper would overflow
//! the stack of whatever clones, compares, prints or drops it.

use rhai::Engine;

/// An engine that checks data sizes (the depth is measured with them).
fn engine() -> Engine {
    let mut engine = Engine::new();
    engine.set_max_array_size(100_000);
    engine.set_max_map_size(100_000);
    engine.set_max_string_size(1 << 20);
    engine
}

fn nested_error(script: &str) -> String {
    let engine = engine();
    let script = script.to_string();
    std::thread::Builder::new()
        .stack_size(4 << 20)
        .spawn(move || engine.run(&script))
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err()
        .to_string()
}

#[test]
fn nesting_in_a_loop_is_refused() {
    for script in [
        "let a = []; for i in 0..30000 { a = [a]; }",
        "let a = #{}; for i in 0..30000 { a = #{x: a}; }",
    ] {
        let e = nested_error(script);
        assert!(e.contains("deeper than 256 levels"), "{script}: {e}");
    }
}

#[cfg(not(feature = "no_closure"))]
#[test]
fn closures_capturing_the_one_before_are_refused() {
    let e = nested_error("let f = || 0; for i in 0..30000 { let g = f; f = || g; }");
    assert!(e.contains("deeper than 256 levels"), "{e}");
}

#[test]
fn data_within_the_bound_is_kept() {
    let engine = engine();
    let n: rhai::INT = engine
        .eval("let a = []; for i in 0..200 { a = [a]; } let n = 0; while a.len() > 0 { a = a[0]; n += 1; } n")
        .unwrap();
    assert_eq!(n, 200);
}
