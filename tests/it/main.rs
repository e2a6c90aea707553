//! Integration tests: one binary (one link) with a module per area.

mod cli;
mod common;
mod dsl;
mod exec;
mod sandbox;
mod spec;
