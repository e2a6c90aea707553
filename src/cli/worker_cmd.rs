//! `kiln worker --restate --bind ADDR` (a Restate service endpoint running agents durably, without
//! the HTTP API: `kiln serve --restate` is the same worker with it) and `kiln restate register`.

use super::ask::ProviderArgs;
use super::{CliResult, Global, output};
use clap::{Args, Subcommand};
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

/// `kiln worker` options.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// Serve the agent loop as Restate handlers (KilnSession, KilnRun); the only engine so far.
    #[arg(long)]
    pub restate: bool,
    /// Address to listen on (Restate calls the worker here, over HTTP/2).
    #[arg(long, value_name = "ADDR", default_value = kiln::project::defaults::RESTATE_BIND)]
    pub bind: SocketAddr,
    /// Provider, model, base URL, request timeout (it sets Restate's timeouts), retries.
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// `kiln restate` subcommands.
#[derive(Args, Debug)]
pub struct RestateArgs {
    #[command(subcommand)]
    pub command: RestateCommand,
}

/// What `kiln restate` does.
#[derive(Subcommand, Debug)]
pub enum RestateCommand {
    /// Register a worker address (one address in front of all workers) with Restate.
    Register {
        /// Restate's admin API, e.g. http://127.0.0.1:9070
        #[arg(long, value_name = "URL")]
        admin: String,
        /// The address Restate calls the workers at, e.g. http://127.0.0.1:9080
        #[arg(long, value_name = "URL")]
        endpoint: String,
        /// Register the same address again as a new revision even if its handlers changed
        /// (Restate refuses an incompatible change without it).
        #[arg(long)]
        force: bool,
    },
}

fn runtime() -> CliResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs `kiln worker` until Ctrl-C or SIGTERM (running requests get a few seconds to finish).
pub fn worker(g: &Global, a: WorkerArgs) -> CliResult<ExitCode> {
    if !a.restate {
        return Err("kiln worker needs --restate (the durable engine it serves)".into());
    }
    let (host, _db) = g.host_with_checked_db(super::db_cmd::DbCheck::Always)?;
    for e in &host.registry().errors {
        output::error(&e.to_string());
    }
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(a.bind)
            .await
            .map_err(|e| format!("--bind {}: {e}", a.bind))?;
        // Scripts are reloaded as they change, as under `kiln serve`: a step runs the tool
        // version current when it runs, and the run log records which. Watching starts before
        // the address is announced, so an edit made from then on is seen.
        let mut reloads = match host.config().scripts.is_empty() {
            true => None,
            false => Some(host.watch()?),
        };
        let watching = tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some(report) = match reloads.as_mut() {
                Some(r) => r.next().await,
                None => None,
            } {
                tracing::info!("{report}");
            }
        });
        // Before announcing the address: a stop requested from then on must be handled.
        let stop = stop_signal()?;
        println!(
            "kiln worker (restate) listening on http://{}",
            listener.local_addr()?
        );
        std::io::stdout().flush()?;
        let options = kiln::durable::WorkerOptions {
            overrides: a.provider.overrides(),
            ..Default::default()
        };
        let endpoint = kiln::durable::endpoint(host, options)?;
        kiln::durable::serve(endpoint, listener, stop).await;
        watching.abort();
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A future completing on Ctrl-C or SIGTERM (what a process manager sends to stop a worker);
/// the handlers are installed now, not when the future is first polled.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (mut int, mut term) = (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        );
        Ok(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// Runs `kiln restate ...`.
pub fn restate(a: RestateArgs) -> CliResult<ExitCode> {
    match a.command {
        RestateCommand::Register {
            admin,
            endpoint,
            force,
        } => {
            let reply = runtime()?.block_on(kiln::durable::register(&admin, &endpoint, force))?;
            println!("{}", serde_json::to_string_pretty(&reply)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
