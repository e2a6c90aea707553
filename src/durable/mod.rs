//! Durable agent runs on Restate (issue 14): a worker serves the agent loop as Restate
//! handlers, each model request and tool call one journaled step, so a run whose worker dies is
//! resumed by another without repeating completed steps.
//!
//! - [`journal`]: the Restate-backed `StepJournal` (`ctx.run` per step)
//! - [`handlers`]: the `KilnSession` Virtual Object and the `KilnRun` workflow
//! - [`register`]: registering a worker address with Restate's admin API
//! - [`server`]: the HTTP/2 server Restate calls

mod handlers;
mod journal;
mod register;
mod server;

pub use register::register;

use crate::{Host, ProviderOverrides};
use handlers::{AgentRun, Session, Worker};
use restate_sdk::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong serving or registering a worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The admin API could not be reached.
    #[error("cannot reach the Restate admin API at {url}: {message}")]
    Unreachable {
        /// The URL tried.
        url: String,
        /// Why.
        message: String,
    },
    /// The admin API refused the registration.
    #[error("Restate refused to register {endpoint} (HTTP {status}): {body}")]
    Refused {
        /// The worker address.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// Restate's explanation.
        body: String,
    },
    /// A URL argument is not an http(s) URL.
    #[error("{arg}: \"{value}\" is not an http:// or https:// URL")]
    BadUrl {
        /// The argument.
        arg: &'static str,
        /// What was given.
        value: String,
    },
}

/// How long Restate waits on a handler that sends nothing before asking it to suspend
/// (inactivity) and then before aborting the attempt (abort). A step cannot suspend, so both
/// cover the longest model request: every attempt of it and the backoff between them.
pub fn timeouts(overrides: &ProviderOverrides) -> Duration {
    let request = overrides.timeout.unwrap_or(Duration::from_secs(120));
    let attempts = overrides.max_retries.unwrap_or(3) + 1;
    request * attempts + Duration::from_secs(60)
}

/// Serves the worker's Restate endpoint on `listener` until `shutdown` completes.
pub async fn serve(
    host: Arc<Host>,
    overrides: ProviderOverrides,
    listener: tokio::net::TcpListener,
    shutdown: impl Future,
) {
    let limit = timeouts(&overrides);
    let options = ServiceOptions::new()
        .inactivity_timeout(limit)
        .abort_timeout(limit);
    let worker = Arc::new(Worker { host, overrides });
    let endpoint = Endpoint::builder()
        .bind(
            Session(worker.clone())
                .into_service_definition()
                .options(options.clone()),
        )
        .bind(AgentRun(worker).into_service_definition().options(options))
        .build();
    server::serve(endpoint, listener, shutdown).await;
}
