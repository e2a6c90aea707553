//! The `kiln` command line: parses arguments, calls the library, renders errors once.

mod cli;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

// A server's runs allocate from many threads at once, where glibc's malloc spends a fifth of
// `kiln serve`'s CPU (BENCHMARKS.md); the library leaves the choice to its embedder. Counted,
// so a script that holds more than its memory budget stops with a `limit` error instead of
// exhausting the process's memory (kiln_budget).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: kiln::budget::Counting<mimalloc::MiMalloc> =
    kiln::budget::Counting(mimalloc::MiMalloc);

// The system's allocator, for heap profilers that see only malloc (DHAT, heaptrack):
// `--features system-allocator`. Still counted, so the memory budget holds.
#[cfg(feature = "system-allocator")]
#[global_allocator]
static ALLOCATOR: kiln::budget::Counting<std::alloc::System> =
    kiln::budget::Counting(std::alloc::System);

fn main() -> ExitCode {
    // A code-mode program's worker process (started by this binary's pool, never by hand).
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(kiln::programs::WORKER_ARG) {
        return ExitCode::from(kiln::programs::serve_worker(&argv[1..]).clamp(0, 255) as u8);
    }
    let matches = cli::Cli::command().get_matches();
    let mut args = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // kiln.toml fills what the flags left unset (before logging: it may set the log format).
    if let Err(e) = cli::apply_project(&mut args, &matches) {
        cli::output::error(&format!("{e:#}"));
        // The language server goes on without it and shows the error on the file itself.
        if matches.subcommand_name() != Some("lsp") {
            return ExitCode::from(2);
        }
    }
    let traces = cli::init_logging(&args);
    cli::programs::install_program_pool(&args.global);
    let outcome = cli::run(args);
    if let Some(exporter) = traces {
        exporter.shutdown();
    }
    match outcome {
        Ok(code) => code,
        // The reader of stdout went away (`kiln logs | head`): a normal end.
        Err(e) if cli::output::is_closed_stdout(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            cli::output::error(&format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}
