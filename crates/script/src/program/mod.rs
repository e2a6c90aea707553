//! Code-mode programs, run apart from the host: a program the model writes runs in a worker
//! process (`kiln __program-worker`) from a bounded pool the host keeps warm, under hard OS
//! limits and a seccomp filter. The worker holds a Rhai engine and nothing else; each tool
//! call it makes comes back to the host over a pipe and takes the tool's normal path there
//! (validation, grants, approvals, policies, the journal, the run log), so the walls stay in
//! one place. A worker that crashes, overflows, deadlocks or outlives its deadline is killed
//! and its program ends with a clear `limit` or `deadline` error.
//!
//! `eval` is the evaluation both sides share (an embedder that installs no pool runs
//! programs in its own process); `pool` is the host's side; `worker` the worker's; `wire`
//! what they say; `confine` the walls a worker puts up.

pub mod code_mode;
pub mod confine;
pub(crate) mod error;
pub mod eval;
pub mod pool;
pub mod wire;
pub mod worker;
