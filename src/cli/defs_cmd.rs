//! `kiln definitions`: a `.d.rhai` file describing the DSL and host functions, for editors.

use super::{CliResult, Global};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `kiln definitions` options.
#[derive(Args, Debug)]
pub struct DefsArgs {
    /// Where to write the definitions.
    #[arg(long, short = 'o', default_value = "kiln.d.rhai")]
    pub out: PathBuf,
}

/// Writes the definitions file.
pub fn definitions(g: &Global, a: DefsArgs) -> CliResult<ExitCode> {
    let host = g.host()?;
    let text = host.definitions();
    std::fs::write(&a.out, text).map_err(|e| format!("cannot write {}: {e}", a.out.display()))?;
    println!("wrote {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
