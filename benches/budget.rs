//! What the memory budget costs: one allocation and its release through kiln's counting
//! allocator, on a thread without a budget and on one whose budget is armed (a running
//! script's), against mimalloc called directly (the allocator it wraps), in the same run.
//! `cargo bench --bench budget` measures; under `cargo test` it runs once with tiny inputs.

mod support;

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use support::{measuring, per_iter, ratio, show, table};

/// One allocation of each size and its release, through `alloc`.
fn churn(alloc: &dyn GlobalAlloc, sizes: &[usize]) {
    for &size in sizes {
        let Ok(layout) = Layout::from_size_align(size, 8) else {
            continue;
        };
        // SAFETY: a non-zero size, freed with the layout it was allocated with.
        unsafe {
            let p = alloc.alloc(layout);
            if !p.is_null() {
                black_box(p).write(1);
                alloc.dealloc(p, layout);
            }
        }
    }
}

/// The process's global allocator (kiln's counting one, as in the binary).
struct Global;

// SAFETY: forwards to the global allocator.
unsafe impl GlobalAlloc for Global {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        unsafe { std::alloc::alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { std::alloc::dealloc(ptr, layout) }
    }
}

fn main() {
    let (samples, iters) = if measuring() { (15, 2000) } else { (1, 1) };
    assert!(
        kiln::budget::is_counting(),
        "the benches allocate as the binary does"
    );
    let sizes: Vec<usize> = (0..64).map(|i| 16 << (i % 8)).collect();
    let direct = per_iter(samples, iters, || churn(&mimalloc::MiMalloc, &sizes));
    // The counting wrapper called the same way, so only the counting differs.
    let counting = kiln::budget::Counting(mimalloc::MiMalloc);
    let unarmed = per_iter(samples, iters, || churn(&counting, &sizes));
    let (armed, global) = kiln::budget::with_budget(1 << 30, || {
        (
            per_iter(samples, iters, || churn(&counting, &sizes)),
            per_iter(samples, iters, || churn(&Global, &sizes)),
        )
    });
    let per = |d: std::time::Duration| show(d / sizes.len() as u32);
    table(
        "Memory budget: one allocation and its release (16 B to 2 KiB)",
        &["allocator", "per allocation", "vs mimalloc directly"],
        &[
            vec![
                "mimalloc, called directly (baseline)".into(),
                per(direct),
                "1.00x".into(),
            ],
            vec![
                "the counting wrapper, no budget".into(),
                per(unarmed),
                ratio(unarmed, direct),
            ],
            vec![
                "the counting wrapper, a script's budget armed".into(),
                per(armed),
                ratio(armed, direct),
            ],
            vec![
                "a script's allocation as the binary makes it (std::alloc, armed)".into(),
                per(global),
                ratio(global, direct),
            ],
        ],
    );
}
