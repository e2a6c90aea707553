//! The functions this crate registers for test files against their part of the DSL table
//! (`kiln_script::reference::TEST_FILES`): each registered one has an entry taking as many
//! arguments, and each entry's argument lists are all registered.

use kiln_script::reference::{TEST_FILES, signature};
use std::collections::BTreeSet;

/// Each function [`crate::register`] adds: its name and how many arguments it takes.
fn registered() -> BTreeSet<(String, usize)> {
    let mut engine = rhai::Engine::new_raw();
    crate::register(&mut engine);
    (engine.gen_fn_signatures(false).iter())
        .filter_map(|sig| {
            let (name, rest) = sig.split_once('(')?;
            let params = rest.split_once(')').map_or(rest, |(p, _)| p).trim();
            let arity = if params.is_empty() {
                0
            } else {
                params.split(", ").count()
            };
            Some((name.trim().to_string(), arity))
        })
        .collect()
}

/// Each argument list the table gives the functions of test files.
fn described() -> BTreeSet<(String, usize)> {
    (TEST_FILES.iter())
        .flat_map(|e| {
            (signature::expansions(e.signature).into_iter()).map(|x| (e.name.to_string(), x.len()))
        })
        .collect()
}

#[test]
fn every_test_function_is_in_the_table_and_every_entry_is_registered() {
    let (registered, described) = (registered(), described());
    assert!(registered.len() >= 10, "{registered:?}");
    let missing: Vec<_> = registered.difference(&described).collect();
    assert!(
        missing.is_empty(),
        "registered for test files but not in crates/script/src/reference/testing.rs: {missing:?}"
    );
    let stale: Vec<_> = described.difference(&registered).collect();
    assert!(
        stale.is_empty(),
        "in crates/script/src/reference/testing.rs but not registered: {stale:?}"
    );
}

#[test]
fn a_function_the_table_lacks_is_caught() {
    let mut described = described();
    assert!(described.remove(&("workspace".to_string(), 0)));
    assert!(registered().difference(&described).next().is_some());
}
