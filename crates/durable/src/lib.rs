//! Durable agent runs on Restate (issue 14): a worker serves the agent loop as Restate
//! handlers, each model request and tool call one journaled step, so a run whose worker dies is
//! resumed by another without repeating completed steps.
//!
//! - `journal`: the Restate-backed `StepJournal` (`ctx.run` per step)
//! - `handlers`: the `KilnSession` Virtual Object and the `KilnRun` workflow
//! - `decision`: the `KilnApproval` object, the one writer of each approval's decision
//! - `calls`: the `KilnCall` workflow, one tool call (an MCP task under `kiln serve --restate`)
//! - `server`: the HTTP/2 server Restate calls
//! - `coalesce`: its responses, a quick step's start sent with its result
//! - `steer`: a person's messages to a running `KilnRun` (its `input` handler's promises)
//!
//! The other direction, kiln calling Restate (registering a worker, the front door of
//! `kiln serve`), is plain HTTP and lives in kiln-restate, re-exported here. The run slots and
//! the token ceiling it shares with the server are kiln-host's (`kiln_host::admission`).
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-agent, kiln-host,
//! kiln-restate, restate-sdk.

#![warn(missing_docs)]

mod calls;
mod coalesce;
mod decision;
mod handlers;
mod inbox;
mod journal;
mod server;
mod steer;

pub use kiln_restate::{
    DurableError, Invocation, Outcome, RestateClient, Target, key_segment, register,
};

use handlers::{AgentRun, Session, Worker};
use kiln_agent::connect::ProviderOverrides;
use kiln_core::capability::Grants;
use kiln_host::Host;
use restate_sdk::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How a worker runs agents.
#[derive(Clone, Default)]
pub struct WorkerOptions {
    /// Provider overrides (the request timeout also sets Restate's timeouts).
    pub overrides: ProviderOverrides,
    /// The most any run may be granted (`kiln serve --caps`), applied again by the handler to
    /// whatever the input asks for: Restate's ingress is one more door.
    pub ceiling: Option<Grants>,
    /// The run slots of the process (`kiln serve --max-runs/--queue`); a run finding none
    /// free fails its attempt and Restate retries it later (on this or another worker).
    pub slots: Option<kiln_host::admission::Limiter>,
    /// Deadline of each run, counted from the start of each attempt (a resumed run's journaled
    /// steps come back at once, so it bounds the work done live).
    pub run_timeout: Option<Duration>,
    /// How long a durable run waits for a person's approval before it is denied
    /// (`kiln serve --approval-timeout`).
    pub approval_timeout: Duration,
    /// Public keys of Restate's request identity (`publickeyv1_...`): with one, requests not
    /// signed by the Restate server are refused.
    pub identity_keys: Vec<String>,
}

/// How long Restate waits on a handler that sends nothing before asking it to suspend
/// (inactivity) and then before aborting the attempt (abort). A step cannot suspend, so both
/// cover the longest model request: every attempt of it and the backoff between them.
pub fn timeouts(overrides: &ProviderOverrides) -> Duration {
    let request = (overrides.timeout).unwrap_or(kiln_core::defaults::REQUEST_TIMEOUT);
    let attempts = (overrides.max_retries).unwrap_or(kiln_core::defaults::MAX_RETRIES) + 1;
    request * attempts + Duration::from_secs(60)
}

/// The worker's Restate endpoint (its services with their timeouts), checked before serving
/// so a bad identity key is refused at startup.
pub fn endpoint(host: Arc<Host>, options: WorkerOptions) -> Result<Endpoint, DurableError> {
    let limit = timeouts(&options.overrides);
    let service_options = ServiceOptions::new()
        .inactivity_timeout(limit)
        .abort_timeout(limit);
    let mut builder = Endpoint::builder();
    for key in &options.identity_keys {
        builder = builder
            .identity_key(key)
            .map_err(|e| DurableError::BadIdentityKey(e.to_string()))?;
    }
    let worker = Arc::new(Worker {
        host,
        overrides: options.overrides,
        ceiling: options.ceiling,
        slots: options.slots,
        run_timeout: options.run_timeout,
        approval_timeout: options.approval_timeout,
    });
    Ok(builder
        .bind(
            Session(worker.clone())
                .into_service_definition()
                .options(service_options.clone()),
        )
        .bind(
            AgentRun(worker.clone())
                .into_service_definition()
                .options(service_options.clone()),
        )
        .bind(
            decision::Approval
                .into_service_definition()
                .options(service_options.clone()),
        )
        .bind(
            inbox::Inbox
                .into_service_definition()
                .options(service_options.clone()),
        )
        .bind(
            calls::ToolCall(worker)
                .into_service_definition()
                .options(service_options),
        )
        .build())
}

/// Serves `endpoint` on `listener` until `shutdown` completes.
pub async fn serve(endpoint: Endpoint, listener: tokio::net::TcpListener, shutdown: impl Future) {
    server::serve(endpoint, listener, shutdown).await;
}
