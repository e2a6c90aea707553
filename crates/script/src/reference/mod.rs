//! The one description of the DSL: every builder method and host function kiln's engine
//! registers, with its signature as a person writes it (parameters named and typed), the
//! capability a call needs, and a line of doc. Completion, hover, the unknown-method hint,
//! `kiln definitions` and `docs/reference.md` all read it; a test keeps it equal to what the
//! engine registers (`coverage_tests`), and another keeps the reference current.

mod agent;
mod builders;
#[cfg(test)]
mod coverage_tests;
mod entry;
mod eval;
mod functions;
mod host;
mod render;
pub mod signature;
mod table;
mod testing;
mod tool;
pub(crate) mod unknown_fn;

pub use entry::Entry;
pub use render::{
    REFERENCE_PATH, annotate_definitions, definitions, entry_of_definition, markdown,
    typed_definition,
};
pub use signature::Param;
pub use table::{
    BUILDERS, FUNCTION_PARTS, TEST_FILES, capability_of, entries, find, find_all, is_builder,
    is_deprecated, is_test_function,
};
