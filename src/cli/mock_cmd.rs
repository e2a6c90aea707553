//! `kiln mock SCENARIO`: serve the fake provider.

use super::CliResult;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// `kiln mock` options.
#[derive(Args, Debug)]
pub struct MockArgs {
    /// Scenario file (JSON): {"turns": [{"text": ...}, {"tool_calls": [...]}, {"fault": {...}}, ...]}
    pub scenario: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, short = 'p', default_value_t = 0)]
    pub port: u16,
}

/// Runs `kiln mock` until Ctrl-C.
pub fn mock(a: MockArgs) -> CliResult<ExitCode> {
    let text = std::fs::read_to_string(&a.scenario)
        .map_err(|e| format!("cannot read scenario {}: {e}", a.scenario.display()))?;
    let scenario: kiln_mock::scenario::Scenario = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: {e}", a.scenario.display(), e.line(), e.column()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (addr, server) =
            kiln_mock::bind(scenario, SocketAddr::from(([127, 0, 0, 1], a.port))).await?;
        super::output::outln!("kiln mock listening on http://{addr}")?;
        tokio::select! {
            r = server => r?,
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
