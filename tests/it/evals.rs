//! kiln eval and kiln test: evaluations, their reports and the run log they leave.

pub(crate) mod bench_scripts;
pub(crate) mod eval;
pub(crate) mod eval_live;
pub(crate) mod eval_reports;
pub(crate) mod eval_runlog;
pub(crate) mod ktest;
