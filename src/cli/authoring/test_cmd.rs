//! `kiln test`: run `*.test.rhai` files, print `test NAME ... ok|FAILED`, the failures and
//! `N passed, M failed`; `--json`, `--junit FILE`, `--watch`.

use crate::cli::{CliResult, Global, output};
use clap::Args;
use kiln::project::Seconds;
use kiln_testing::runner::{TestFile, discover};
use kiln_testing::watch::{Rerun, rerun_for};
use kiln_testing::{Outcome, RunConfig, TestResult, Tests, report};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `kiln test` options.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Test files or folders to search for `*.test.rhai` (default: the scripts folders).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Only tests whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Re-run the tests of a file when it, or any script, changes (Ctrl-C to stop).
    #[arg(long)]
    pub watch: bool,
    /// Print the results as one JSON document instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Also write JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Deadline of each test (`500ms`, `10s`; a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(kiln_testing::runner::DEFAULT_TIMEOUT))]
    pub timeout: Seconds,
    /// Tests run at once (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
}

fn print_failures(results: &[TestResult]) -> CliResult<()> {
    let failed: Vec<&TestResult> = results.iter().filter(|r| !r.passed()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    output::outln!("\nfailures:\n")?;
    for r in failed {
        if let Outcome::Failed(m) = &r.outcome {
            output::outln!("---- {} ({}:{}) ----\n{m}", r.name, r.file, r.line)?;
            if !r.output.is_empty() {
                output::outln!("printed:\n{}", r.output.trim_end())?;
            }
            output::outln!()?;
        }
    }
    Ok(())
}

/// Runs `files`, printing as it goes (lines or, with --json, one document at the end).
fn run_files(tests: &Tests, files: &[TestFile], a: &TestArgs) -> CliResult<bool> {
    let json = a.json;
    let results = tests.run(files, &|r: &TestResult| {
        if !json {
            let status = if r.passed() { "ok" } else { "FAILED" };
            // A closed stdout ends the command once the run returns; the tests still finish.
            let _ = output::outln!("test {} ... {status}", r.name);
            let _ = std::io::stdout().flush();
        }
    });
    if json {
        output::outln!("{}", output::json(&report::json(&results)))?;
    } else {
        print_failures(&results)?;
        output::outln!("{}", report::summary(&results))?;
    }
    if let Some(path) = &a.junit {
        std::fs::write(path, report::junit(&results))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    std::io::stdout().flush()?;
    Ok(results.iter().all(TestResult::passed))
}

/// `kiln test`.
pub fn test(g: &Global, a: TestArgs) -> CliResult<ExitCode> {
    if a.timeout.0.is_zero() {
        return Err(format!("--timeout {}: expected a positive duration", a.timeout).into());
    }
    let search = if a.paths.is_empty() {
        g.config().scripts
    } else {
        a.paths.clone()
    };
    let mut config = RunConfig {
        scripts: g.scripts.clone(),
        stdlib: !g.no_stdlib,
        filter: a.filter.clone(),
        timeout: a.timeout.0,
        ..RunConfig::default()
    };
    if let Some(j) = a.jobs {
        config.jobs = j.max(1);
    }
    if a.paths.is_empty() {
        config.scripts = search.clone();
    }
    let mut roots: Vec<PathBuf> = search
        .iter()
        .map(|p| {
            if p.is_file() {
                p.parent().map(PathBuf::from).unwrap_or_default()
            } else {
                p.clone()
            }
        })
        .collect();
    roots.extend(config.scripts.iter().cloned());
    let tests = Tests::new(config, roots.clone())?;
    let paths = discover(&search)?;
    if paths.is_empty() && !a.watch {
        output::warning(&format!(
            "no *.test.rhai files under {}",
            search
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let files: Vec<TestFile> = paths.iter().map(|p| tests.load(p)).collect();
    let ok = run_files(&tests, &files, &a)?;
    if !a.watch {
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    watch_and_rerun(&tests, &search, &roots, &a)
}

/// `kiln test --watch`, after the first pass: reruns the test files a change concerns, until
/// the watcher stops.
fn watch_and_rerun(
    tests: &Tests,
    search: &[PathBuf],
    roots: &[PathBuf],
    a: &TestArgs,
) -> CliResult<ExitCode> {
    let folders: Vec<PathBuf> = roots
        .iter()
        .filter(|p| p.is_dir())
        .filter_map(|p| p.canonicalize().ok())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let watcher = kiln_testing::watch::watch(&folders)?;
    output::outln!("watching for changes; Ctrl-C to stop")?;
    std::io::stdout().flush()?;
    while let Ok(changed) = watcher.changes.recv() {
        let Some(rerun) = rerun_for(&changed) else {
            continue;
        };
        // Test files may have appeared or gone; look again, then pick what to run.
        let current = discover(search)?;
        let loaded: Vec<TestFile> = current.iter().map(|p| tests.load(p)).collect();
        let chosen: Vec<TestFile> = match rerun {
            Rerun::All => loaded,
            Rerun::Files(list) => loaded
                .into_iter()
                .filter(|f| f.path.canonicalize().is_ok_and(|c| list.contains(&c)))
                .collect(),
        };
        output::outln!(
            "\n-- {} changed; running {} test file(s)",
            changed
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            chosen.len()
        )?;
        run_files(tests, &chosen, a)?;
    }
    Ok(ExitCode::SUCCESS)
}
