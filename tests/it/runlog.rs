//! The run log: what a run commits and when, its queries and operations, the step journal.

pub(crate) mod commit_order;
pub(crate) mod db;
pub(crate) mod journal;
pub(crate) mod postgres_faults;
pub(crate) mod runlog_ops;
pub(crate) mod shared_approvals;
pub(crate) mod shared_postgres;
pub(crate) mod shared_tasks;
