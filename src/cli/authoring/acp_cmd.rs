//! `kiln acp AGENT`: the agent as an Agent Client Protocol agent over stdio, for editors
//! (docs/editors.md). stdout carries the protocol only; everything else goes to stderr.

use crate::cli::ask::ProviderArgs;
use crate::cli::tools_cmd::parse_context;
use crate::cli::{CliResult, ContextArgs, Global, parse_caps};
use clap::Args;
use kiln::project::Seconds;
use kiln::{Grants, RunOptions};
use std::process::ExitCode;

/// `kiln acp` options.
#[derive(Args, Debug)]
pub struct AcpArgs {
    /// The agent that answers the editor's sessions.
    pub agent: String,
    /// Provider, model, base URL, request timeout, retries.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Grants (narrowing the agent's own), context and actor.
    #[command(flatten)]
    pub run: ContextArgs,
    /// Tool rounds allowed in one prompt before it stops (`stopReason: max_turn_requests`).
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Give up on a prompt after this long (`90s`, `5m`; a bare number is seconds).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Seconds>,
}

/// Serves the agent over stdin and stdout until the editor closes stdin.
pub fn acp(g: &Global, a: AcpArgs) -> CliResult<ExitCode> {
    let (host, _db) = g.host_with_db()?;
    for e in &host.registry().errors {
        crate::cli::output::error(&e.to_string());
    }
    let agent = host.agent(&a.agent)?;
    let caps = (!a.run.caps.is_empty())
        .then(|| parse_caps(&a.run.caps))
        .transpose()?;
    let run = RunOptions {
        overrides: a.provider.overrides(),
        // `--caps` narrows the agent's own grants; `--needs-approval` marks either as asking.
        grants: Some(g.mark_ask(Grants::effective(&[Some(&agent.grants), caps.as_ref()]))),
        context: parse_context(&a.run.context)?,
        actor_id: a.run.actor.clone(),
        max_iterations: a.max_iterations,
        timeout: a.timeout.and_then(Seconds::nonzero),
        ..RunOptions::default()
    };
    let options = kiln_acp::Options {
        agent: a.agent,
        run,
    };
    // Calls that wait for the editor's answer park their own thread; the connection goes on.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(kiln_acp::serve_stdio(host, options))?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}
