//! Built-ins that build a string or list from their arguments, re-registered so the result's
//! size is checked *before* it is allocated.
//!
//! Rhai checks the string and array limits after a built-in returns, so
//! `"a" * 2000 .replace("a", "b" * 100000)` would allocate 200 MB (and arguments a model may
//! send, ~250 GB) before being refused; under a memory limit the process aborts. These
//! versions compute the size first and fail with the same "data too large" error (`limit`)
//! the sandbox gives everywhere else. (`pad` and `blob` already check first in Rhai.) The
//! `split`s and `to_chars` build one value per piece, so they are counted first too.

use rhai::{Array, Dynamic, Engine, EvalAltResult, ImmutableString, NativeCallContext, Position};

type Checked<T> = Result<T, Box<EvalAltResult>>;

fn too_large(what: &str) -> Box<EvalAltResult> {
    EvalAltResult::ErrorDataTooLarge(what.into(), Position::NONE).into()
}

/// Fails when a string of `len` bytes would pass the engine's string limit.
fn check_string(ctx: &NativeCallContext, len: usize) -> Checked<()> {
    let max = ctx.engine().max_string_size();
    if max > 0 && len > max {
        return Err(too_large("Length of string"));
    }
    Ok(())
}

/// Fails when a list of `len` items would pass the engine's array limit.
fn check_array(ctx: &NativeCallContext, len: usize) -> Checked<()> {
    let max = ctx.engine().max_array_size();
    if max > 0 && len > max {
        return Err(too_large("Size of array"));
    }
    Ok(())
}

/// The length `text` would have with every `find` replaced by `with` (`None`: it overflows).
fn replaced_len(text: &str, find: &str, with: &str) -> Option<usize> {
    if find.is_empty() {
        // `str::replace` with an empty pattern inserts `with` around every character.
        let slots = text.chars().count().checked_add(1)?;
        return text.len().checked_add(slots.checked_mul(with.len())?);
    }
    let count = text.matches(find).count();
    let removed = count.checked_mul(find.len())?;
    let added = count.checked_mul(with.len())?;
    (text.len() - removed).checked_add(added)
}

fn replace(
    ctx: &NativeCallContext,
    text: &mut ImmutableString,
    find: &str,
    with: &str,
) -> Checked<()> {
    if text.is_empty() {
        return Ok(());
    }
    match replaced_len(text, find, with) {
        Some(len) => check_string(ctx, len)?,
        None => return Err(too_large("Length of string")),
    }
    *text = text.replace(find, with).into();
    Ok(())
}

/// Registers the checked versions over the standard package's.
pub fn register(engine: &mut Engine) {
    engine.register_fn(
        "replace",
        |ctx: NativeCallContext, s: &mut ImmutableString, find: &str, with: &str| {
            replace(&ctx, s, find, with)
        },
    );
    engine.register_fn(
        "replace",
        |ctx: NativeCallContext, s: &mut ImmutableString, find: &str, with: char| {
            replace(&ctx, s, find, &with.to_string())
        },
    );
    engine.register_fn(
        "replace",
        |ctx: NativeCallContext, s: &mut ImmutableString, find: char, with: &str| {
            replace(&ctx, s, &find.to_string(), with)
        },
    );
    // One element per piece: refused before a 4 MiB string of commas becomes 4 M values.
    engine.register_fn(
        "split",
        |ctx: NativeCallContext, s: &mut ImmutableString, sep: &str| -> Checked<Array> {
            let pieces = if sep.is_empty() {
                s.chars().count() + 2
            } else {
                s.matches(sep).count() + 1
            };
            check_array(&ctx, pieces)?;
            Ok(s.split(sep).map(|p| Dynamic::from(p.to_string())).collect())
        },
    );
    engine.register_fn(
        "split",
        |ctx: NativeCallContext, s: &mut ImmutableString, sep: char| -> Checked<Array> {
            check_array(&ctx, s.matches(sep).count() + 1)?;
            Ok(s.split(sep).map(|p| Dynamic::from(p.to_string())).collect())
        },
    );
    engine.register_fn(
        "split",
        |ctx: NativeCallContext, s: &mut ImmutableString| -> Checked<Array> {
            check_array(&ctx, s.split_whitespace().count())?;
            if s.is_empty() {
                return Ok(vec![Dynamic::from(s.clone())]);
            }
            Ok(s.split_whitespace()
                .map(|p| Dynamic::from(p.to_string()))
                .collect())
        },
    );
    // One array element per character: refused before a 4 MiB string becomes 4 M values.
    engine.register_fn(
        "to_chars",
        |ctx: NativeCallContext, s: &str| -> Checked<Array> {
            check_array(&ctx, s.chars().count())?;
            Ok(s.chars().map(Dynamic::from).collect())
        },
    );
}

#[cfg(test)]
mod tests {
    use super::replaced_len;

    #[test]
    fn the_replaced_length_is_computed_without_building_the_result() {
        assert_eq!(replaced_len("aaa", "a", "bb"), Some(6));
        assert_eq!(replaced_len("abc", "x", "yyyy"), Some(3));
        assert_eq!(replaced_len("ab", "", "-"), Some(5));
        assert_eq!("ab".replace("", "-").len(), 5);
        assert_eq!(replaced_len("aaaa", "aa", ""), Some(0));
    }
}
