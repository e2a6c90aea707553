//! Runs an evaluation: every case on every model, `repeat` times, at most `concurrency` at
//! once, each run tagged with the eval run's id in the run log and traced under an `eval`
//! span; then scores each run and sums the report up. A budget stops it cleanly: runs not
//! started are left out and the report says why.

use super::report::{CaseRun, Report, RunRecord, SCHEMA_VERSION, Usage};
use super::{cache, record, scoring, stats};
use kiln_agent::RunOptions;
use kiln_agent::connect::ProviderOverrides;
use kiln_host::{CallOptions, Host};
use kiln_registry::eval_spec::{Case, EvalSpec, EvalTarget};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The model row of a target run on its own provider and model.
pub const DEFAULT_MODEL: &str = "default";

/// How an evaluation runs (the command line's flags over the script's settings).
#[derive(Clone, Default)]
pub struct EvalOptions {
    /// Models instead of the script's (`provider:model`; `provider` alone keeps the model).
    pub models: Vec<String>,
    /// Runs per case and model instead of the script's (default 1).
    pub repeat: Option<u32>,
    /// Runs at once instead of the script's (default 4).
    pub concurrency: Option<usize>,
    /// Stop starting runs once this many dollars are spent (runs and judges).
    pub max_cost: Option<f64>,
    /// Stop starting runs once this many tokens are spent (runs and judges).
    pub max_tokens: Option<u64>,
    /// Where the models' requests go (any OpenAI-compatible server, `kiln mock`).
    pub base_url: Option<String>,
    /// Deadline of each run.
    pub timeout: Option<Duration>,
    /// Replay an unchanged request's recorded answer instead of asking the model.
    pub cache: bool,
    /// How judges are reached.
    pub judge: crate::score::judge::JudgeSettings,
    /// Told after each run.
    pub progress: Option<ProgressFn>,
    /// Stops the evaluation (Ctrl-C): runs under way are cancelled, none start.
    pub cancel: CancellationToken,
    /// Only these cases (by name), when given.
    pub only: Vec<String>,
}

/// What is told where an evaluation is, after each run (a progress bar).
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Where an evaluation is, after each run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Runs finished.
    pub done: usize,
    /// Runs planned.
    pub total: usize,
    /// Of the finished, those that passed.
    pub passed: usize,
}

/// What stops an evaluation before it runs.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Its target is not loaded.
    #[error("evaluation \"{eval}\": {kind} \"{name}\" is not loaded")]
    NoTarget {
        /// The evaluation.
        eval: String,
        /// agent, tool or pipeline.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// `--case` names no case of it.
    #[error("evaluation \"{eval}\" has no case named \"{case}\"")]
    NoCase {
        /// The evaluation.
        eval: String,
        /// The name given.
        case: String,
    },
    /// A report could not be read or written.
    #[error("{0}")]
    Store(String),
}

/// One planned run.
#[derive(Clone)]
struct Job {
    model: usize,
    case: usize,
    repeat: u32,
}

/// What every run shares.
struct Shared {
    host: Arc<Host>,
    spec: Arc<EvalSpec>,
    opts: EvalOptions,
    id: String,
    models: Vec<String>,
    cases: Vec<Case>,
    spent: Mutex<Usage>,
    stopped: Mutex<Option<String>>,
    progress: Mutex<Progress>,
    replays: cache::Replays,
}

/// Runs `spec` on `host`, returning its report (not yet compared or saved).
pub async fn run(
    host: &Arc<Host>,
    spec: &Arc<EvalSpec>,
    opts: EvalOptions,
) -> Result<Report, EvalError> {
    check_target(host, spec)?;
    let cases = chosen_cases(spec, &opts.only)?;
    let models = models_of(spec, &opts);
    let repeat = opts.repeat.or(spec.repeat).unwrap_or(1).max(1);
    let id = new_id();
    let replays = match opts.cache {
        true => cache::Replays::load(host, &spec.name),
        false => cache::Replays::default(),
    };
    let started_at = kiln_script::math::now_iso();
    let mut jobs = Vec::new();
    for model in 0..models.len() {
        for case in 0..cases.len() {
            for r in 0..repeat {
                jobs.push(Job {
                    model,
                    case,
                    repeat: r,
                });
            }
        }
    }
    let concurrency = opts.concurrency.or(spec.concurrency).unwrap_or(4).max(1);
    let shared = Arc::new(Shared {
        host: host.clone(),
        spec: spec.clone(),
        progress: Mutex::new(Progress {
            total: jobs.len(),
            ..Progress::default()
        }),
        opts,
        id: id.clone(),
        models: models.clone(),
        cases: cases.clone(),
        spent: Mutex::new(Usage::default()),
        stopped: Mutex::new(None),
        replays,
    });
    let results = run_jobs(&shared, jobs, concurrency).await;
    let stopped = lock(&shared.stopped).clone();
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        id,
        eval: spec.name.clone(),
        target: Some(spec.target.clone()),
        started_at,
        finished_at: kiln_script::math::now_iso(),
        summary: stats::summarize(&models, repeat, &results),
        per_case: stats::per_case(&models, &results),
        models,
        repeat,
        evaluators: spec.evaluators.iter().map(|e| e.name.clone()).collect(),
        cases,
        results,
        stopped,
        rescored_from: None,
        comparison: None,
    })
}

/// Runs the jobs, at most `concurrency` at once, and returns their results in plan order.
async fn run_jobs(shared: &Arc<Shared>, jobs: Vec<Job>, concurrency: usize) -> Vec<CaseRun> {
    let gate = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut set = tokio::task::JoinSet::new();
    for (i, job) in jobs.into_iter().enumerate() {
        let Ok(permit) = gate.clone().acquire_owned().await else {
            break;
        };
        if shared.opts.cancel.is_cancelled() || budget_reached(shared) {
            break;
        }
        let shared = shared.clone();
        set.spawn(async move {
            let _permit = permit;
            (i, run_job(&shared, &job).await)
        });
    }
    let mut done: Vec<(usize, CaseRun)> = Vec::new();
    while let Some(joined) = set.join_next().await {
        if let Ok(pair) = joined {
            done.push(pair);
        }
    }
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Whether the spend reached a budget; the first time, records why the eval stopped.
fn budget_reached(shared: &Shared) -> bool {
    let spent = *lock(&shared.spent);
    let why = match (shared.opts.max_cost, shared.opts.max_tokens) {
        (Some(max), _) if spent.cost_usd.unwrap_or(0.0) >= max => Some(format!(
            "--max-cost {max} reached (spent ${:.4})",
            spent.cost_usd.unwrap_or(0.0)
        )),
        (_, Some(max)) if spent.tokens() >= max => Some(format!(
            "--max-tokens {max} reached (spent {} tokens)",
            spent.tokens()
        )),
        _ => None,
    };
    let Some(why) = why else { return false };
    lock(&shared.stopped).get_or_insert(why);
    true
}

/// One run of one case on one model, scored.
async fn run_job(shared: &Arc<Shared>, job: &Job) -> CaseRun {
    let case = &shared.cases[job.case];
    let model = &shared.models[job.model];
    let span = tracing::info_span!(
        "eval",
        eval.name = %shared.spec.name,
        eval.id = %shared.id,
        eval.case = %case.name,
        eval.model = %model,
        eval.repeat = i64::from(job.repeat),
    );
    let (run, cached) = target_run(shared, case, model, job.repeat)
        .instrument(span)
        .await;
    let scored = scoring::score(&shared.spec, case, &run, &shared.opts.judge).await;
    let mut spent = run.usage;
    spent.add(&scored.judge_usage);
    lock(&shared.spent).add(&spent);
    let passed = run.error.is_none() && scored.verdicts.iter().all(|v| v.verdict.passed);
    let result = CaseRun {
        case: case.name.clone(),
        model: model.clone(),
        repeat: job.repeat,
        passed,
        score: if run.error.is_some() {
            0.0
        } else {
            scored.mean
        },
        run,
        verdicts: scored.verdicts,
        judge_usage: scored.judge_usage,
        cached,
    };
    let snapshot = {
        let mut p = lock(&shared.progress);
        p.done += 1;
        p.passed += usize::from(passed);
        *p
    };
    if let Some(report) = &shared.opts.progress {
        report(&snapshot);
    }
    result
}

/// Runs the target on the case: a replayed run when `--cache` has one that still fits.
async fn target_run(shared: &Shared, case: &Case, model: &str, repeat: u32) -> (RunRecord, bool) {
    match &shared.spec.target {
        EvalTarget::Agent(agent) => {
            let prompt = prompt_of(&case.input);
            if let Some(run) = shared
                .replays
                .replay(
                    &shared.host,
                    agent,
                    &prompt,
                    (&case.name, model, repeat),
                    run_options(shared, model),
                )
                .await
            {
                return (run, true);
            }
            (agent_run(shared, agent, &prompt, model).await, false)
        }
        EvalTarget::Tool(name) | EvalTarget::Pipeline(name) => {
            (tool_run(shared, name, case).await, false)
        }
    }
}

/// The options of one run of the target agent on `model`.
fn run_options(shared: &Shared, model: &str) -> RunOptions {
    let mut overrides = ProviderOverrides {
        base_url: shared.opts.base_url.clone(),
        ..ProviderOverrides::default()
    };
    if model != DEFAULT_MODEL {
        let (provider, name) = split_model(model);
        overrides.provider = Some(provider.to_string());
        overrides.model = name.map(str::to_string);
    }
    RunOptions {
        overrides,
        timeout: shared.opts.timeout,
        cancel: shared.opts.cancel.child_token(),
        eval_id: Some(shared.id.clone()),
        ..RunOptions::default()
    }
}

async fn agent_run(shared: &Shared, agent: &str, prompt: &str, model: &str) -> RunRecord {
    let opts = run_options(shared, model);
    let version = cache::agent_version(&shared.host, agent, &opts.overrides);
    let started = Instant::now();
    let result = shared.host.run(agent, prompt, opts).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let run = match result {
        Ok(report) => record::of_run(&report, None, ms),
        Err(e) => record::of_run(
            &e.report,
            Some(format!("{}: {}", e.kind.name(), e.kind)),
            ms,
        ),
    };
    RunRecord {
        agent_version: version,
        ..run
    }
}

async fn tool_run(shared: &Shared, name: &str, case: &Case) -> RunRecord {
    let opts = CallOptions {
        timeout: shared.opts.timeout,
        cancel: Some(shared.opts.cancel.child_token()),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let result = shared.host.call(name, case.input.clone(), opts).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match result {
        Ok(outcome) => record::of_call(&outcome, ms),
        Err(e) => RunRecord {
            error: Some(e.to_string()),
            duration_ms: ms,
            ..RunRecord::default()
        },
    }
}

/// An agent's prompt from a case's input: a string as itself, anything else as JSON.
pub fn prompt_of(input: &serde_json::Value) -> String {
    match input {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `provider:model` split; `provider` alone keeps the agent's model.
pub fn split_model(model: &str) -> (&str, Option<&str>) {
    match model.split_once(':') {
        Some((p, m)) if !m.is_empty() => (p, Some(m)),
        Some((p, _)) => (p, None),
        None => (model, None),
    }
}

fn models_of(spec: &EvalSpec, opts: &EvalOptions) -> Vec<String> {
    let chosen = if opts.models.is_empty() {
        &spec.models
    } else {
        &opts.models
    };
    match chosen.is_empty() || !matches!(spec.target, EvalTarget::Agent(_)) {
        true => vec![DEFAULT_MODEL.to_string()],
        false => chosen.clone(),
    }
}

fn chosen_cases(spec: &EvalSpec, only: &[String]) -> Result<Vec<Case>, EvalError> {
    if let Some(missing) = only
        .iter()
        .find(|n| !spec.cases.iter().any(|c| &c.name == *n))
    {
        return Err(EvalError::NoCase {
            eval: spec.name.clone(),
            case: missing.clone(),
        });
    }
    Ok(spec
        .cases
        .iter()
        .filter(|c| only.is_empty() || only.contains(&c.name))
        .cloned()
        .collect())
}

fn check_target(host: &Host, spec: &EvalSpec) -> Result<(), EvalError> {
    let found = match &spec.target {
        EvalTarget::Agent(n) => host.agent(n).is_ok(),
        EvalTarget::Tool(n) => host.tool(n).is_ok(),
        EvalTarget::Pipeline(n) => host.registry().pipeline(n).is_some(),
    };
    match found {
        true => Ok(()),
        false => Err(EvalError::NoTarget {
            eval: spec.name.clone(),
            kind: spec.target.kind(),
            name: spec.target.name().to_string(),
        }),
    }
}

/// A fresh eval run id: `ev_` and 16 hex digits of time and process.
pub fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 40);
    format!("ev_{mixed:016x}")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
