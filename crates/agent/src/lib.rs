//! kiln's agent layer: provider setup from an agent's spec ([`connect`]), the tool-calling loop
//! ([`mod@run`]) and the planner mode, free-text extraction ([`text_calls::extract`]), the step journal a
//! durable run replaces ([`journal`]), the recorder seam and the run report ([`record`],
//! [`report`]), and the run log writer over kiln-db ([`record::runlog`]). The loop reaches the host
//! only through [`RunHost`].
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-db, kiln-otel (trace context only).

#![warn(missing_docs)]

pub mod connect;
mod event;
mod host;
pub mod journal;
mod options;
mod planner;
pub mod record;
pub mod report;
mod round;
pub mod run;
mod spans;
mod start;
pub mod text_calls;
pub(crate) mod tool_loop;

pub use event::{ApprovalAsked, Event, Observer};
pub use host::RunHost;
pub use journal::{Journaled, Local, Recalled, StepFuture, StepJournal, StepValue, StepWork};
pub use options::{RunOptions, steer};
pub use record::Recorder;
pub use report::call_outcome::{CallError, CallOutcome};
pub use report::{RecordError, RunError, RunErrorKind, RunReport, ToolCallRecord};
pub use start::{run, run_journaled};
/// Compaction asked for outside a run (`kiln sessions compact`, `POST /v1/responses/compact`).
pub use tool_loop::compact::on_request as compaction;
