//! kiln calling Restate over plain HTTP (no Restate SDK): registering a worker address with the
//! admin API ([`register`]), and the ingress and admin calls of `kiln serve`'s front door
//! ([`RestateClient`]). The worker itself (the SDK's side) is kiln-durable.

mod client;
mod error;
mod register;
mod tasks;

pub use client::{Invocation, Outcome, RestateClient, Target, approval_key, key_segment};
pub use error::DurableError;
pub use register::register;
pub use tasks::RestateTasks;
