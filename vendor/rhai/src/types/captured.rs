//! (kiln) The shared cells closures capture, collected per evaluation, so that the cycles a
//! script can make with them are broken when the evaluation ends.
//!
//! A closure captures a variable by turning it into a shared cell. Storing the closure in that
//! same variable (`let f = 0; f = || f;`, or anything holding the closure) makes a reference
//! cycle, which reference counting never frees: every run of such a script would leak what the
//! cycle holds, and a server running programs a model writes would grow without bound. An
//! embedder collects the cells of one evaluation ([`Cells::enter`]) and empties those still
//! alive when it ends ([`Cells::empty`]), which breaks every cycle among them.

#![cfg(all(feature = "sync", not(feature = "no_closure"), not(feature = "no_std")))]

use crate::Dynamic;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, RwLock, Weak};

/// The shared cells one evaluation captured (cheap to clone: one collection).
#[derive(Clone, Default)]
pub struct Cells(Arc<Mutex<Vec<Weak<RwLock<Dynamic>>>>>);

thread_local! {
    /// The collection the running evaluation adds its cells to, if any.
    static CURRENT: RefCell<Option<Cells>> = const { RefCell::new(None) };
}

impl Cells {
    /// A new, empty collection.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The collection current on this thread, if any (to share with threads it starts).
    #[must_use]
    pub fn current() -> Option<Cells> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// Runs `f` with this collection current on this thread (the previous one is put back).
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Cells>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                let _ = CURRENT.try_with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// Empties every cell of the collection still alive (what they held is dropped), which
    /// breaks every cycle through them. Call it when nothing of the evaluation is used again.
    pub fn empty(&self) {
        let cells = match self.0.lock() {
            Ok(mut cells) => std::mem::take(&mut *cells),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let mut held = Vec::new();
        for cell in cells.iter().filter_map(Weak::upgrade) {
            if let Ok(mut value) = cell.try_write() {
                held.push(std::mem::take(&mut *value));
            }
        }
        // Dropped with no cell locked.
        drop(held);
    }

    /// Adds a cell; dead ones are pruned as the list grows.
    fn add(&self, cell: &Arc<RwLock<Dynamic>>) {
        let Ok(mut cells) = self.0.lock() else {
            return;
        };
        if cells.len() == cells.capacity() && cells.len() >= 64 {
            cells.retain(|w| w.strong_count() > 0);
        }
        cells.push(Arc::downgrade(cell));
    }
}

/// Adds a cell just made shared to the current collection, if there is one.
pub(crate) fn register(cell: &Arc<RwLock<Dynamic>>) {
    let _ = CURRENT.try_with(|c| {
        if let Some(cells) = &*c.borrow() {
            cells.add(cell);
        }
    });
}
