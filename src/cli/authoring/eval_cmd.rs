//! `kiln eval [NAME]`: run an evaluation declared with `evaluation(NAME)` over its models,
//! cases and repeats, with a live progress bar; print a table per model (or `--json`), write
//! `--junit` and `--html` reports, keep the report (`.kiln/evals/ID.json`), save it as a
//! baseline or compare with one (exit 1 on a regression), re-score a kept run without a model.

use crate::cli::{CliResult, Global, output};
use clap::Args;
use kiln::eval::render::{html, junit, table};
use kiln::eval::report::Report;
use kiln::eval::run::{EvalOptions, Progress};
use kiln::eval::{compare, rescore, store};
use kiln::project::Seconds;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `kiln eval` options.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The evaluation to run (`evaluation("NAME")` in a script); may be left out when the
    /// scripts declare only one.
    pub name: Option<String>,
    /// List the evaluations the scripts declare and exit.
    #[arg(long)]
    pub list: bool,
    /// Models to run every case on, instead of the script's `.models([...])`:
    /// `provider:model`, comma-separated or repeated (`--model openai:gpt-5-mini,anthropic:claude-haiku-4-5`).
    #[arg(long, value_name = "MODELS", value_delimiter = ',')]
    pub model: Vec<String>,
    /// Runs per case and model (pass@k and pass^k are over them); default: the script's, else 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Runs at once (default: the script's, else 4).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: Option<u32>,
    /// Only this case (repeatable).
    #[arg(long, value_name = "NAME")]
    pub case: Vec<String>,
    /// Stop starting runs once this many dollars are spent (runs and judges); what finished is
    /// reported.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop starting runs once this many tokens are spent (runs and judges).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// Send the models' requests here (an OpenAI-compatible server, a local Ollama, kiln mock).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Deadline of each run (`90s`, `5m`; a bare number is seconds).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Seconds>,
    /// Print the report as JSON (docs/eval-report.schema.json) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write JUnit XML to FILE (a test suite per model, a test case per run).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a self-contained HTML report to FILE (the matrix, charts, every run).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Save this report as baseline NAME (`.kiln/evals/baselines/NAME.json`).
    #[arg(long, value_name = "NAME")]
    pub save: Option<String>,
    /// Compare with baseline NAME case by case; exit 1 when a case's pass rate fell by more
    /// than --tolerance.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// The largest drop of a case's pass rate (0..1) that is not a regression.
    #[arg(long, value_name = "RATE", default_value_t = 0.0)]
    pub tolerance: f64,
    /// Score the runs eval run ID recorded with the evaluators as they are now, without asking
    /// the models again.
    #[arg(long, value_name = "ID")]
    pub rescore: Option<String>,
    /// Replay a case's recorded answers from the last eval run when the agent still sends the
    /// same requests (strict replay); only changed cases ask the model.
    #[arg(long)]
    pub cache: bool,
    /// Re-run on every script change: an edit of the evaluation's own file re-scores the last
    /// run, any other edit re-runs it (Ctrl-C to stop).
    #[arg(long)]
    pub watch: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Runs `kiln eval`.
pub fn eval(g: &Global, a: EvalArgs) -> CliResult<ExitCode> {
    if !(0.0..=1.0).contains(&a.tolerance) {
        return Err(format!(
            "--tolerance {}: a pass rate difference in 0..1",
            a.tolerance
        )
        .into());
    }
    if a.list {
        let host = g.reading_host("kiln eval --list")?;
        for e in &host.registry().errors {
            output::error(&e.to_string());
        }
        return list(&host);
    }
    let (host, _db) = g.host_with_db()?;
    for e in &host.registry().errors {
        output::error(&e.to_string());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    crate::cli::ask::cancel_on_ctrl_c(&cancel);
    if a.watch {
        return watch(&host, &a, &runtime, &cancel);
    }
    let report = runtime.block_on(once(&host, &a, &cancel, Pass::Fresh))?;
    finish(&host, &a, report)
}

/// The evaluation to run: the one named, or the only one.
pub(crate) fn chosen(
    host: &kiln::Host,
    name: Option<&str>,
) -> CliResult<Arc<kiln::eval::eval_spec::EvalSpec>> {
    let reg = host.registry();
    let names: Vec<String> = reg.evals().map(|e| e.name.clone()).collect();
    match name {
        Some(n) => reg.eval(n).ok_or_else(|| {
            let known = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            format!("no evaluation \"{n}\" (the scripts declare: {known})").into()
        }),
        None => match names.as_slice() {
            [one] => reg
                .eval(one)
                .ok_or_else(|| "the evaluation went away".into()),
            [] => Err(
                "the scripts declare no evaluation: add evaluation(\"NAME\")... (docs/eval.md)"
                    .into(),
            ),
            many => Err(format!("name the evaluation to run: {}", many.join(", ")).into()),
        },
    }
}

fn list(host: &kiln::Host) -> CliResult<ExitCode> {
    for e in host.registry().evals() {
        let about = e.description.as_deref().unwrap_or("");
        output::outln!(
            "{}\t{} {}\t{} cases\t{}",
            e.name,
            e.target.kind(),
            e.target.name(),
            e.cases.len(),
            about
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// How one pass of `kiln eval` goes.
#[derive(Clone, Copy)]
pub(crate) enum Pass<'a> {
    /// As the flags say.
    Fresh,
    /// A watch's re-run: the cases nothing changed for replay their recorded runs (as with
    /// `--cache`), so only the cases an edit affects ask the model.
    Replaying,
    /// A watch's re-score of its last report (only the evaluators changed).
    Rescore(&'a Report),
}

/// One run (or re-score) of the evaluation, compared with the baseline; `last` is the
/// previous report of a watch, re-scored instead of re-run when given.
pub(crate) async fn once(
    host: &Arc<kiln::Host>,
    a: &EvalArgs,
    cancel: &CancellationToken,
    pass: Pass<'_>,
) -> CliResult<Report> {
    let spec = chosen(host, a.name.as_deref())?;
    let shelf = store::Shelf::of(&host.config().workspace, host.database().map(|db| &**db));
    let judges = kiln::eval::score::judge::JudgeSettings {
        timeout: a.timeout.map(|s| s.0),
        defaults: host.config().providers.clone(),
        cancel: cancel.clone(),
    };
    let last = match pass {
        Pass::Rescore(last) => Some(last),
        _ => None,
    };
    let mut report = match (a.rescore.as_deref(), last) {
        (_, Some(last)) => rescore::rescore(&spec, last, &judges).await,
        (Some(id), None) => {
            let recorded = store::load(shelf, id)?;
            if recorded.eval != spec.name {
                let e = format!(
                    "eval run {id} is of evaluation \"{}\", not \"{}\"",
                    recorded.eval, spec.name
                );
                return Err(e.into());
            }
            rescore::rescore(&spec, &recorded, &judges).await
        }
        (None, None) => {
            let mut opts = options(a, cancel.clone(), judges);
            opts.cache |= matches!(pass, Pass::Replaying);
            kiln::eval::run::run(host, &spec, opts).await?
        }
    };
    if let Some(name) = &a.baseline {
        let baseline = store::load_baseline(shelf, name)?;
        report.comparison = Some(compare::compare(&report, &baseline, name, a.tolerance));
    }
    store::keep(shelf, &report)?;
    Ok(report)
}

fn options(
    a: &EvalArgs,
    cancel: CancellationToken,
    judge: kiln::eval::score::judge::JudgeSettings,
) -> EvalOptions {
    let live = std::io::stderr().is_terminal() && !a.quiet;
    EvalOptions {
        models: a
            .model
            .iter()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect(),
        repeat: a.repeat,
        concurrency: a.concurrency.map(|n| n as usize),
        max_cost: a.max_cost,
        max_tokens: a.max_tokens,
        base_url: a.base_url.clone(),
        timeout: a.timeout.map(|s| s.0),
        cache: a.cache,
        judge,
        progress: live.then(|| Arc::new(draw_progress) as kiln::eval::run::ProgressFn),
        cancel,
        only: a.case.clone(),
    }
}

/// The live bar on stderr: `[#####.....] 12/60  ✓ 10  ✗ 2`.
fn draw_progress(p: &Progress) {
    const WIDTH: usize = 30;
    let filled = (p.done * WIDTH).checked_div(p.total).unwrap_or(WIDTH);
    let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled));
    let failed = p.done - p.passed;
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{bar}] {}/{}  ✓ {}  ✗ {failed}",
        p.done, p.total, p.passed
    );
    if p.done == p.total {
        let _ = writeln!(err);
    }
    let _ = err.flush();
}

/// Writes the outputs of `report` and says how the run ends: 1 on a regression.
pub(crate) fn finish(host: &kiln::Host, a: &EvalArgs, report: Report) -> CliResult<ExitCode> {
    let workspace = &host.config().workspace;
    if let Some(path) = &a.junit {
        std::fs::write(path, junit::render(&report))
            .map_err(|e| format!("--junit {}: {e}", path.display()))?;
    }
    if let Some(path) = &a.html {
        std::fs::write(path, html::render(&report))
            .map_err(|e| format!("--html {}: {e}", path.display()))?;
    }
    if let Some(name) = &a.save {
        let shelf = store::Shelf::of(workspace, host.database().map(|db| &**db));
        let place = store::save_baseline(shelf, name, &report)?;
        output::errln!("saved as baseline \"{name}\" ({place})");
    }
    if a.json {
        output::outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        output::outln!("{}", table::render(&report).trim_end())?;
    }
    output::errln!(
        "eval run {} (kiln logs --eval {}; kiln eval --rescore {})",
        report.id,
        report.id,
        report.id
    );
    let regressed = report.comparison.as_ref().is_some_and(compare::regressed);
    Ok(if regressed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--watch`: runs once, then again on every reload until Ctrl-C. An edit of the evaluation's
/// own file (its evaluators, when the target lives elsewhere) re-scores the last run; any other
/// edit, or one of its cases files, re-runs it with the unaffected cases replayed from their
/// recordings. A broken script keeps its last good version and waits for the fix.
fn watch(
    host: &Arc<kiln::Host>,
    a: &EvalArgs,
    runtime: &tokio::runtime::Runtime,
    cancel: &CancellationToken,
) -> CliResult<ExitCode> {
    let (tx, rx) = std::sync::mpsc::channel::<kiln::reload::ReloadReport>();
    let _watcher = kiln::reload::watch(host.clone(), move |r| {
        let _ = tx.send(r);
    })?;
    let mut last = runtime.block_on(once(host, a, cancel, Pass::Fresh))?;
    finish(host, a, last.clone())?;
    output::errln!("watching the scripts and cases files (Ctrl-C to stop)");
    let mut stamps = case_file_stamps(host, a);
    while let Some(change) = next_change(&rx, cancel, host, a, &mut stamps) {
        let pass = match change {
            Change::Reload(r) if !r.errors.is_empty() => {
                output::errln!("{r}");
                output::errln!("kept the last good version; fix the file to go on");
                continue;
            }
            Change::Reload(r) => {
                output::errln!("{r}");
                match only_evaluators_changed(host, a, &r.path) {
                    true => Pass::Rescore(&last),
                    false => Pass::Replaying,
                }
            }
            Change::Cases(path) => {
                output::errln!("{} changed", path.display());
                Pass::Replaying
            }
        };
        match runtime.block_on(once(host, a, cancel, pass)) {
            Ok(report) => {
                finish(host, a, report.clone())?;
                last = report;
            }
            Err(e) => output::error(&e.to_string()),
        }
        stamps = case_file_stamps(host, a);
    }
    Ok(ExitCode::SUCCESS)
}

/// What a watch saw change.
enum Change {
    /// A script reloaded.
    Reload(kiln::reload::ReloadReport),
    /// A cases file of the evaluation, reloaded with its script.
    Cases(PathBuf),
}

/// When each cases file of the evaluation was last written.
fn case_file_stamps(
    host: &kiln::Host,
    a: &EvalArgs,
) -> Vec<(PathBuf, Option<std::time::SystemTime>)> {
    let files = chosen(host, a.name.as_deref())
        .map(|s| s.case_files.clone())
        .unwrap_or_default();
    files
        .into_iter()
        .map(|p| {
            let stamp = std::fs::metadata(&p).and_then(|m| m.modified()).ok();
            (p, stamp)
        })
        .collect()
}

/// The next change (the last reload of a burst, or a cases file written), or None once
/// Ctrl-C was pressed. A cases file is not a script, so the watcher does not see it: its
/// write time is looked at here, and its script reloaded.
fn next_change(
    rx: &std::sync::mpsc::Receiver<kiln::reload::ReloadReport>,
    cancel: &CancellationToken,
    host: &kiln::Host,
    a: &EvalArgs,
    stamps: &mut Vec<(PathBuf, Option<std::time::SystemTime>)>,
) -> Option<Change> {
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        match rx.recv_timeout(std::time::Duration::from_millis(200)) {
            Ok(mut r) => {
                while let Ok(more) = rx.try_recv() {
                    r = more;
                }
                return Some(Change::Reload(r));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
        let now = case_file_stamps(host, a);
        if let Some((path, _)) = now
            .iter()
            .zip(stamps.iter())
            .find(|(n, o)| n.1 != o.1)
            .map(|(n, _)| n.clone())
        {
            *stamps = now;
            let script = chosen(host, a.name.as_deref()).map(|s| s.loc.path.clone());
            if let Ok(script) = script {
                let reports = host.reload_path(std::path::Path::new(&script));
                if let Some(broken) = reports.into_iter().find(|r| !r.errors.is_empty()) {
                    return Some(Change::Reload(broken));
                }
            }
            return Some(Change::Cases(path));
        }
    }
}

/// Whether the edit of `path` can only have changed the evaluators: the file declares the
/// evaluation and not its target.
fn only_evaluators_changed(host: &kiln::Host, a: &EvalArgs, path: &str) -> bool {
    let Ok(spec) = chosen(host, a.name.as_deref()) else {
        return false;
    };
    let same = |p: &str| {
        let canon = |x: &str| std::fs::canonicalize(x).unwrap_or_else(|_| PathBuf::from(x));
        canon(p) == canon(path)
    };
    let target_file = match &spec.target {
        kiln::eval::eval_spec::EvalTarget::Agent(n) => {
            host.agent(n).ok().map(|s| s.loc.path.clone())
        }
        kiln::eval::eval_spec::EvalTarget::Tool(n)
        | kiln::eval::eval_spec::EvalTarget::Pipeline(n) => {
            host.tool(n).ok().map(|t| t.loc.path.clone())
        }
    };
    same(&spec.loc.path) && !target_file.is_some_and(|t| same(&t))
}
