//! `kiln watch`: print one line per reload, for editors and CI logs.

use crate::cli::output::{self, outln};
use crate::cli::{CliResult, Global};
use std::process::ExitCode;

/// Runs `kiln watch` until Ctrl-C.
pub fn watch(g: &Global) -> CliResult<ExitCode> {
    let host = g.host()?;
    let reg = host.registry();
    for e in &reg.errors {
        output::error(&e.to_string());
    }
    // A report that cannot be written ends the command: `None` when the reader is gone.
    let (failed, mut write_failures) = tokio::sync::mpsc::unbounded_channel::<Option<String>>();
    let _watcher = kiln::reload::watch(host.clone(), move |report| {
        if let Err(e) = outln!("{report}") {
            let closed = output::is_closed_stdout(e.as_ref());
            let _ = failed.send((!closed).then(|| e.to_string()));
        }
    })?;
    outln!(
        "watching {} ({} tools, {} agents); Ctrl-C to stop",
        g.config()
            .scripts
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        reg.all().count(),
        reg.agents().count()
    )?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        tokio::select! {
            stopped = tokio::signal::ctrl_c() => stopped.map_err(Into::into),
            Some(failure) = write_failures.recv() => match failure {
                None => Err(Box::new(output::StdoutClosed) as Box<dyn std::error::Error>),
                Some(message) => Err(message.into()),
            },
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
