//! `kiln eval`: datasets and evaluators declared in scripts, run over a matrix of models with
//! repeats, scored, reported and compared against baselines.
//!
//! `report` is the report's data (what `--json` writes); `score` and `judge` give each run its
//! verdicts; `stats` sums it up per model, `compare`
//! sets it against a baseline, and `table`, `junit` and `html` (with `svg`'s charts) render it.
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-script, kiln-db, kiln-agent, kiln-host,
//! kiln-testing, kiln-mock.

#![warn(missing_docs)]

pub use kiln_registry::eval_spec;

pub mod cache;
pub mod compare;
pub mod record;
pub mod render;
pub mod report;
pub mod rescore;
pub mod run;
pub mod score;
pub mod scoring;
pub mod stats;
pub mod store;

#[cfg(test)]
mod sample;
#[cfg(test)]
mod schema_tests;
