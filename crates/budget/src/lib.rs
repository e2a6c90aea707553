//! A memory budget for the scripts kiln runs.
//!
//! Rhai limits each string, array and map it builds, not how many a program keeps: a loop
//! adding 4 MB strings to a map grows until the process dies. So the memory is counted where
//! it is allocated: [`Counting`] wraps the global allocator and, on a thread whose budget is
//! armed ([`with_budget`]), adds each allocation's size and subtracts each release. The
//! sandbox asks [`over_budget`] before every operation of a script and stops it with a
//! `limit` error when the count has passed the budget; since Rhai bounds what one operation
//! can build, a script can pass its budget by at most one operation's worth.
//!
//! The count is of the thread's net allocations while armed: memory a script frees that was
//! allocated before (its arguments) counts as negative, and memory allocated on this thread
//! and freed on another (a result handed back) is not taken off here. Both err on the side of
//! the script, by at most what was there before it ran.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

/// A global allocator that counts what armed threads allocate, over allocator `A`.
pub struct Counting<A>(pub A);

/// This thread's count: whether it is armed, what it holds and past what it is over.
#[derive(Clone, Copy)]
struct Count {
    armed: bool,
    held: isize,
    limit: isize,
}

thread_local! {
    /// This thread's count (all in one cell: an allocation touches one thread local).
    static COUNT: Cell<Count> = const { Cell::new(Count { armed: false, held: 0, limit: isize::MAX }) };
    /// Set when an allocation takes the count past its limit: what a script's every
    /// operation reads, so it is a flag of its own.
    static OVER: Cell<bool> = const { Cell::new(false) };
}

/// Adds `delta` bytes to this thread's count when it is armed.
#[inline]
fn note(delta: isize) {
    // `try_with`: an allocation while the thread's locals are torn down is simply not counted.
    let _ = COUNT.try_with(|count| {
        let mut c = count.get();
        if c.armed {
            c.held = c.held.saturating_add(delta);
            count.set(c);
            let _ = OVER.try_with(|over| over.set(c.held > c.limit));
        }
    });
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged; counting touches
// only const-initialised thread locals (no allocation, no destructor).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let ptr = unsafe { self.0.alloc(layout) };
        if !ptr.is_null() {
            note(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let ptr = unsafe { self.0.alloc_zeroed(layout) };
        if !ptr.is_null() {
            note(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { self.0.dealloc(ptr, layout) };
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let new = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        new
    }
}

/// Runs `f` with this thread's allocations counted against a budget of `bytes` more than it
/// holds now. Nested budgets keep counting for the outer one and never loosen it.
pub fn with_budget<T>(bytes: usize, f: impl FnOnce() -> T) -> T {
    let outer = COUNT.with(Cell::get);
    let held = if outer.armed { outer.held } else { 0 };
    let limit = held
        .saturating_add(isize::try_from(bytes).unwrap_or(isize::MAX))
        .min(outer.limit);
    COUNT.with(|c| {
        c.set(Count {
            armed: true,
            held,
            limit,
        })
    });
    // Put the outer limit back however `f` ends (a panic included); what `f` left behind
    // still counts for the outer budget.
    struct Restore(Count);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = COUNT.try_with(|count| {
                let mut c = count.get();
                c.armed = self.0.armed;
                c.limit = self.0.limit;
                count.set(c);
                let _ = OVER.try_with(|over| over.set(c.armed && c.held > c.limit));
            });
        }
    }
    let _restore = Restore(outer);
    f()
}

/// True when the running script holds more than its budget allows.
#[inline]
pub fn over_budget() -> bool {
    OVER.with(Cell::get)
}

/// Bytes the running script may still allocate before it is over budget (`usize::MAX` on a
/// thread with no budget): what a script shares among the threads it starts.
pub fn remaining() -> usize {
    let c = COUNT.with(Cell::get);
    if !c.armed {
        return usize::MAX;
    }
    usize::try_from(c.limit.saturating_sub(c.held)).unwrap_or(0)
}

/// Bytes this thread allocated (less what it freed) since its outermost budget was armed.
pub fn held() -> isize {
    COUNT.with(Cell::get).held
}

/// Whether the process's global allocator is a [`Counting`] one (budgets are enforced).
pub fn is_counting() -> bool {
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        1 => return false,
        2 => return true,
        _ => {}
    }
    let counted = with_budget(usize::MAX, || {
        let before = held();
        let probe = std::hint::black_box(vec![0u8; 64]);
        let after = held();
        drop(probe);
        after > before
    });
    KNOWN.store(if counted { 2 } else { 1 }, Ordering::Relaxed);
    counted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static ALLOCATOR: Counting<std::alloc::System> = Counting(std::alloc::System);

    #[test]
    fn what_an_armed_thread_keeps_is_counted_and_what_it_frees_is_not() {
        assert!(is_counting());
        with_budget(1 << 20, || {
            let kept = vec![1u8; 512 * 1024];
            assert!(held() >= 512 * 1024, "{}", held());
            assert!(!over_budget());
            let more = vec![1u8; 600 * 1024];
            assert!(over_budget(), "1.1 MiB held against a 1 MiB budget");
            drop(more);
            assert!(!over_budget(), "freed again");
            drop(kept);
            assert!(held() < 64 * 1024, "{}", held());
        });
        assert!(!over_budget(), "disarmed");
    }

    #[test]
    fn a_nested_budget_never_loosens_the_outer_one_and_is_restored_after() {
        with_budget(1 << 20, || {
            let _outer = vec![1u8; 768 * 1024];
            with_budget(8 << 20, || {
                let _inner = vec![1u8; 512 * 1024];
                assert!(over_budget(), "the outer budget still holds inside");
            });
            assert!(!over_budget(), "the inner value is gone");
        });
    }

    #[test]
    fn a_panic_inside_leaves_the_thread_disarmed() {
        let caught = std::panic::catch_unwind(|| with_budget(1, || panic!("inside")));
        assert!(caught.is_err());
        let _big = vec![0u8; 1 << 20];
        assert!(!over_budget());
    }

    #[test]
    fn another_thread_is_not_counted() {
        with_budget(1 << 20, || {
            let other = std::thread::spawn(|| vec![0u8; 4 << 20]).join();
            assert!(other.is_ok());
            // The vector was allocated there (and dropped here: negative, on the safe side).
            assert!(!over_budget());
        });
    }
}
