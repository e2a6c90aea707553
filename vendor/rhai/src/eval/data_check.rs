//! Data size checks during evaluation.
#![cfg(not(feature = "unchecked"))]

use super::GlobalRuntimeState;
use crate::types::dynamic::Union;
use crate::{Dynamic, Engine, Position, RhaiResultOf, ERR};
use std::borrow::Borrow;
#[cfg(feature = "no_std")]
use std::prelude::v1::*;

/// The deepest data may nest: arrays, maps, function pointers' curried values and shared
/// cells each count one level. (kiln: a value nested deeper than the stack can clone, compare,
/// print or drop would abort the process; sizes are checked when data is built, so refusing
/// here bounds every value a script can hold.)
pub const MAX_DATA_DEPTH: usize = 256;

/// Sizes returned for data nested past [`MAX_DATA_DEPTH`]: reported as too deep.
const TOO_DEEP: (usize, usize, usize) = (usize::MAX, usize::MAX, usize::MAX);

/// The shared cells a measurement has met, by address.
type Seen = std::collections::BTreeSet<usize>;

/// Adds two size triples, saturating (so [`TOO_DEEP`] stays too deep).
#[inline]
fn add_sizes(a: (usize, usize, usize), b: (usize, usize, usize)) -> (usize, usize, usize) {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1), a.2.saturating_add(b.2))
}

/// The sizes of one value held `depth` levels deep; `seen` holds the shared cells measured.
fn calc_at(value: &Dynamic, depth: usize, seen: &mut Seen) -> (usize, usize, usize) {
    if depth > MAX_DATA_DEPTH {
        return TOO_DEEP;
    }
    match value.0 {
        #[cfg(not(feature = "no_index"))]
        Union::Array(ref arr, ..) => {
            let mut sizes = (0, 0, 0);
            for item in arr.iter() {
                sizes = add_sizes(sizes, (1, 0, 0));
                sizes = add_sizes(sizes, calc_at(item, depth + 1, seen));
                if sizes.0 == usize::MAX {
                    break;
                }
            }
            sizes
        }
        #[cfg(not(feature = "no_index"))]
        Union::Blob(ref blob, ..) => (blob.len(), 0, 0),
        #[cfg(not(feature = "no_object"))]
        Union::Map(ref map, ..) => {
            let mut sizes = (0, 0, 0);
            for item in map.values() {
                sizes = add_sizes(sizes, (0, 1, 0));
                sizes = add_sizes(sizes, calc_at(item, depth + 1, seen));
                if sizes.1 == usize::MAX {
                    break;
                }
            }
            sizes
        }
        Union::Str(ref s, ..) => (0, 0, s.len()),
        // Curried values count as the items of an array (`f = f.curry(f)` doubles in size).
        Union::FnPtr(ref f, ..) => {
            let mut sizes = (0, 0, 0);
            for item in f.iter_curry() {
                sizes = add_sizes(sizes, (1, 0, 0));
                sizes = add_sizes(sizes, calc_at(item, depth + 1, seen));
                if sizes.0 == usize::MAX {
                    break;
                }
            }
            sizes
        }
        #[cfg(not(feature = "no_closure"))]
        Union::Shared(ref cell, ..) => {
            // A cell is measured once, wherever else it is met (a cycle, or closures sharing
            // a captured variable): what it holds is held once.
            let key = crate::Shared::as_ptr(cell) as *const () as usize;
            if seen.contains(&key) {
                return (0, 0, 0);
            }
            // A cell locked for writing is the one being assigned: its old value is going.
            let Ok(inner) = cell.try_read() else {
                return (0, 0, 0);
            };
            seen.insert(key);
            calc_at(&inner, depth + 1, seen)
        }
        _ => (0, 0, 0),
    }
}

/// Recursively calculate the sizes of an array.
///
/// Sizes returned are `(` [`Array`][crate::Array], [`Map`][crate::Map] and [`String`] `)`;
/// all `usize::MAX` when it nests deeper than [`MAX_DATA_DEPTH`].
#[cfg(not(feature = "no_index"))]
#[inline]
pub fn calc_array_sizes(array: &crate::Array) -> (usize, usize, usize) {
    let mut sizes = (0, 0, 0);
    let mut seen = Seen::new();
    for item in array {
        sizes = add_sizes(sizes, (1, 0, 0));
        sizes = add_sizes(sizes, calc_at(item, 1, &mut seen));
    }
    sizes
}

/// Recursively calculate the sizes of a map.
///
/// Sizes returned are `(` [`Array`][crate::Array], [`Map`][crate::Map] and [`String`] `)`;
/// all `usize::MAX` when it nests deeper than [`MAX_DATA_DEPTH`].
#[cfg(not(feature = "no_object"))]
#[inline]
pub fn calc_map_sizes(map: &crate::Map) -> (usize, usize, usize) {
    let mut sizes = (0, 0, 0);
    let mut seen = Seen::new();
    for item in map.values() {
        sizes = add_sizes(sizes, (0, 1, 0));
        sizes = add_sizes(sizes, calc_at(item, 1, &mut seen));
    }
    sizes
}

/// Recursively calculate the sizes of a value.
///
/// Sizes returned are `(` [`Array`][crate::Array], [`Map`][crate::Map] and [`String`] `)`;
/// all `usize::MAX` when it nests deeper than [`MAX_DATA_DEPTH`].
#[inline]
pub fn calc_data_sizes(value: &Dynamic, _top: bool) -> (usize, usize, usize) {
    calc_at(value, 0, &mut Seen::new())
}

impl Engine {
    /// Raise an error if any data size exceeds limit.
    ///
    /// [`Position`] in [`EvalAltResult`][crate::EvalAltResult] is always [`NONE`][Position::NONE]
    /// and should be set afterwards.
    #[cfg(not(feature = "unchecked"))]
    pub(crate) fn throw_on_size(&self, (_arr, _map, s): (usize, usize, usize)) -> RhaiResultOf<()> {
        if (_arr, _map, s) == TOO_DEEP {
            return Err(ERR::ErrorDataTooLarge(
                format!("Nesting of data (deeper than {MAX_DATA_DEPTH} levels)"),
                Position::NONE,
            )
            .into());
        }
        if self.limits.string_len.map_or(false, |max| s > max.get()) {
            return Err(
                ERR::ErrorDataTooLarge("Length of string".to_string(), Position::NONE).into(),
            );
        }

        #[cfg(not(feature = "no_index"))]
        if self.limits.array_size.map_or(false, |max| _arr > max.get()) {
            return Err(
                ERR::ErrorDataTooLarge("Size of array/BLOB".to_string(), Position::NONE).into(),
            );
        }

        #[cfg(not(feature = "no_object"))]
        if self.limits.map_size.map_or(false, |max| _map > max.get()) {
            return Err(
                ERR::ErrorDataTooLarge("Size of object map".to_string(), Position::NONE).into(),
            );
        }

        Ok(())
    }

    /// Check whether the size of a [`Dynamic`] is within limits.
    #[cfg(not(feature = "unchecked"))]
    #[inline]
    pub(crate) fn check_data_size<T: Borrow<Dynamic>>(
        &self,
        value: T,
        pos: Position,
    ) -> RhaiResultOf<T> {
        // If no data size limits, just return
        if !self.has_data_size_limit() {
            return Ok(value);
        }

        let sizes = calc_data_sizes(value.borrow(), true);

        self.throw_on_size(sizes)
            .map_err(|err| err.fill_position(pos))?;

        Ok(value)
    }

    /// Raise an error if the size of a [`Dynamic`] is out of limits (if any).
    ///
    /// Not available under `unchecked`.
    #[cfg(not(feature = "unchecked"))]
    #[inline(always)]
    pub fn ensure_data_size_within_limits(&self, value: &Dynamic) -> RhaiResultOf<()> {
        self.check_data_size(value, Position::NONE).map(|_| ())
    }

    /// Check if the number of operations stay within limit.
    #[inline(always)]
    pub(crate) fn track_operation(
        &self,
        global: &mut GlobalRuntimeState,
        pos: Position,
    ) -> RhaiResultOf<()> {
        let mut num_ops = None;

        let mut num_operations = || {
            *num_ops.get_or_insert_with(|| {
                // Increment operations count
                #[cfg(atomic_ops_count)]
                return global
                    .num_operations
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                    + 1;

                #[cfg(not(atomic_ops_count))]
                {
                    global.num_operations += 1;
                    return global.num_operations;
                }
            })
        };

        // Guard against too many operations
        #[cfg(not(feature = "unchecked"))]
        if self.max_operations() > 0 && num_operations() > self.max_operations() {
            return Err(ERR::ErrorTooManyOperations(pos).into());
        }

        if let Some(progress) = self.progress.as_ref() {
            return progress(num_operations())
                .map(|token| Err(ERR::ErrorTerminated(token, pos).into()))
                .unwrap_or(Ok(()));
        }

        Ok(())
    }
}
