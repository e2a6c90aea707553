//! (kiln) Bounds for the walks over values that the data-size checks do not cover:
//! serializing, JSON text and hashing.
//!
//! A closure that captures a variable holding the closure makes a value that refers to
//! itself (`let a = #{}; let f = || a; a.f = f;`), and a value may share one part many times
//! over. A walk that follows function pointers' curried values and shared cells would recurse
//! without end on the first, and produce output without bound on the second. Each step of
//! such a walk enters here: the shared cells on the walk's path are recorded, so meeting one
//! again is a cycle; the depth is bounded; and so is the number of steps one walk takes.

use std::cell::RefCell;
use std::fmt;

/// Levels one walk may descend (arrays, maps, curried function pointers, shared cells): the
/// same bound the data-size checks put on stored values.
pub const MAX_WALK_DEPTH: usize = 256;

/// Steps (levels entered) one walk may take in all.
pub const MAX_WALK_STEPS: usize = 1 << 22;

/// Why a walk over a value stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkRefused {
    /// The value refers to itself through a shared cell.
    Cycle,
    /// The value nests deeper than [`MAX_WALK_DEPTH`].
    TooDeep,
    /// The walk took more than [`MAX_WALK_STEPS`] steps.
    TooLarge,
}

impl fmt::Display for WalkRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cycle => f.write_str(
                "the value refers to itself (a closure captures a variable that holds it)",
            ),
            Self::TooDeep => write!(f, "the value nests deeper than {MAX_WALK_DEPTH} levels"),
            Self::TooLarge => write!(
                f,
                "the value is too large to walk (more than {MAX_WALK_STEPS} nested parts)"
            ),
        }
    }
}

#[derive(Default)]
struct Walk {
    depth: usize,
    steps: usize,
    cells: Vec<usize>,
}

std::thread_local! {
    static WALK: RefCell<Walk> = RefCell::new(Walk::default());
}

/// One level of a walk, left when dropped.
#[must_use]
pub struct Step {
    cell: bool,
}

impl Drop for Step {
    fn drop(&mut self) {
        let _ = WALK.try_with(|walk| {
            let mut walk = walk.borrow_mut();
            walk.depth = walk.depth.saturating_sub(1);
            if self.cell {
                walk.cells.pop();
            }
            if walk.depth == 0 {
                walk.steps = 0;
            }
        });
    }
}

fn step(cell: Option<usize>) -> Result<Step, WalkRefused> {
    WALK.with(|walk| {
        let mut walk = walk.borrow_mut();
        if let Some(address) = cell {
            if walk.cells.contains(&address) {
                return Err(WalkRefused::Cycle);
            }
        }
        if walk.depth >= MAX_WALK_DEPTH {
            return Err(WalkRefused::TooDeep);
        }
        if walk.steps >= MAX_WALK_STEPS {
            return Err(WalkRefused::TooLarge);
        }
        walk.depth += 1;
        walk.steps += 1;
        if let Some(address) = cell {
            walk.cells.push(address);
        }
        Ok(Step { cell: cell.is_some() })
    })
}

/// Enters an array, a map or a curried function pointer.
#[inline]
pub fn enter() -> Result<Step, WalkRefused> {
    step(None)
}

/// Enters the shared cell at `cell`; refused if the walk is already inside it.
#[inline]
pub fn enter_cell<T: ?Sized>(cell: *const T) -> Result<Step, WalkRefused> {
    step(Some(cell.cast::<()>() as usize))
}
