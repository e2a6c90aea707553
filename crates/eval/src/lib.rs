//! `kiln eval`: datasets and evaluators declared in scripts, run over a matrix of models with
//! repeats, scored, reported and compared against baselines.
//!
//! `report` is the report's data (what `--json` writes); the other modules make and render it.
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-db, kiln-agent, kiln-host,
//! kiln-testing, kiln-mock.

#![warn(missing_docs)]

pub mod judge;
pub mod report;
pub mod score;
