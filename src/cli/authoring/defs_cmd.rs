//! What editors get: `kiln definitions` (a `.d.rhai` file describing the DSL and host
//! functions) and `kiln lsp` (a language server).

use crate::cli::{CliResult, Global, output};
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
    let host = g.reading_host("kiln definitions")?;
    write(&host, &a.out)?;
    output::outln!("wrote {}", a.out.display())?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the definitions of `host` (its engine and the application's functions), and of
/// what test files add, to `out`.
pub fn write(host: &kiln::Host, out: &std::path::Path) -> CliResult<()> {
    let mut tests = rhai::Engine::new_raw();
    kiln_testing::register(&mut tests);
    let text = format!(
        "{}\n// In *.test.rhai files (`kiln test`), also:\n\n{}",
        host.definitions(),
        // One file, one `module static;` header.
        kiln::engine_definitions(&tests).replacen("module static;\n", "", 1)
    );
    std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(())
}

/// `kiln lsp`: serves one editor over stdio until it shuts down.
pub fn lsp(g: &Global) -> CliResult<ExitCode> {
    let options = kiln_lsp::Options {
        scripts: g.scripts.clone(),
        stdlib: !g.no_stdlib,
    };
    kiln_lsp::run_stdio(options).map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
