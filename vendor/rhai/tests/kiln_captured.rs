//! (kiln) The shared cells closures capture are collected while a collection is current, and
//! emptying the collection frees the cycles a closure stored in its own variable makes.
#![cfg(all(feature = "sync", not(feature = "no_closure")))]

use rhai::{captured::Cells, Engine};
use std::sync::atomic::{AtomicUsize, Ordering};

static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// A value that counts its drops.
#[derive(Clone)]
struct Token;

impl Drop for Token {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn emptying_the_cells_frees_a_cycle() {
    let mut engine = Engine::new();
    engine.register_fn("token", || Token);
    let cells = Cells::new();
    cells
        .enter(|| engine.run("let a = #{t: token()}; let f = || a; a.f = f;"))
        .unwrap();
    let before = DROPPED.load(Ordering::SeqCst);
    cells.empty();
    assert_eq!(DROPPED.load(Ordering::SeqCst), before + 1, "emptied, the cycle is freed");
}
