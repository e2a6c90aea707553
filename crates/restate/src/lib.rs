//! kiln calling Restate over plain HTTP (no Restate SDK): registering a worker address with the
//! admin API ([`register`]), and the ingress and admin calls of `kiln serve`'s front door
//! ([`RestateClient`]). Below both the server (kiln-serve) and the worker (kiln-durable, the
//! SDK's side), which share its keys ([`approval_key`], [`key_segment`]).
//!
//! May depend on: kiln-egress.

#![warn(missing_docs)]

mod client;
mod error;
mod register;

pub use client::{
    Invocation, Outcome, RestateClient, Target, approval_key, is_invocation_id, key_segment,
};
pub use error::DurableError;
pub use register::register;
