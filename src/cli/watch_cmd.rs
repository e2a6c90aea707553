//! `kiln watch`: print one line per reload, for editors and CI logs.

use super::{CliResult, Global, output};
use std::io::Write;
use std::process::ExitCode;

/// Runs `kiln watch` until Ctrl-C.
pub fn watch(g: &Global) -> CliResult<ExitCode> {
    let host = g.host()?;
    let reg = host.registry();
    for e in &reg.errors {
        output::error(&e.to_string());
    }
    let _watcher = crate::reload::watch(host.clone(), |report| {
        println!("{report}");
        let _ = std::io::stdout().flush();
    })?;
    println!(
        "watching {} ({} tools, {} agents); Ctrl-C to stop",
        g.config()
            .scripts
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        reg.all().count(),
        reg.agents().count()
    );
    std::io::stdout().flush()?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(tokio::signal::ctrl_c())?;
    Ok(ExitCode::SUCCESS)
}
