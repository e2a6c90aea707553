//! Agents: their spec, provider setup, the tool-calling loop and its report.

pub mod connect;
pub mod extract;
pub mod journal;
mod planner;
pub mod record;
pub mod report;
pub mod run;
pub mod spec;
mod start;

pub use journal::{Journaled, Local, Recalled, StepFuture, StepJournal, StepValue, StepWork};
pub use record::Recorder;
pub use report::{RecordError, RunError, RunErrorKind, RunReport, ToolCallRecord};
pub use run::{Observer, RunEvent, RunOptions};
pub use spec::AgentSpec;
pub use start::{run, run_journaled};
