//! What an eval costs kiln itself: 100 cases × 2 models × 3 repeats (600 one-round agent runs)
//! through `kiln_eval::run::run` (run, scored by two evaluators, summarized), against the same
//! 600 runs made directly with `Host::run` at the same concurrency, without the eval layer. The
//! model is the real `kiln mock` in its own process (a `by_round` scenario answering each case
//! by its `user` text, "weak" 20 cases wrong, "good" all right), so its CPU is not counted.
//! Also what rendering the 600-run report costs (table, JUnit, HTML) against its JSON alone.
//!
//! `cargo bench --bench eval` measures (median of 7); under `cargo test`, or with
//! `KILN_BENCH_QUICK` set, it runs once over 10 cases and 1 repeat as a smoke test.

mod support;

use kiln::model::ProviderOverrides;
use kiln::{Host, RunOptions};
use kiln_eval::eval_spec::EvalSpec;
use kiln_eval::report::Report;
use kiln_eval::run::EvalOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{median, ratio, show, start_mock, table};

const MODELS: [&str; 2] = ["openai:good", "openai:weak"];
const CONCURRENCY: usize = 8;

/// The sizes of one measured eval.
#[derive(Clone, Copy)]
struct Size {
    cases: usize,
    repeat: u32,
    samples: usize,
}

impl Size {
    fn runs(self) -> usize {
        self.cases * MODELS.len() * self.repeat as usize
    }
}

/// Case `i`'s marker in its prompt (unique: no marker contains another).
fn marker(i: usize) -> String {
    format!("q{i:03}:")
}

/// Case `i`'s expected answer.
fn expected(i: usize) -> String {
    format!("A{i:03}")
}

/// Whether "weak" answers case `i` wrong: every fifth case, 20% of them.
fn weak_misses(i: usize) -> bool {
    i.is_multiple_of(5)
}

/// The mock's scenario: per case, weak's wrong answer (when it misses) before the right one.
fn scenario(cases: usize) -> Value {
    let usage = json!({"input_tokens": 50, "output_tokens": 10});
    let mut turns = Vec::new();
    for i in 0..cases {
        if weak_misses(i) {
            let wrong = "I do not know.";
            turns.push(json!({"model": "weak", "user": marker(i), "text": wrong, "usage": usage}));
        }
        let right = format!("The code is {}.", expected(i));
        turns.push(json!({"user": marker(i), "text": right, "usage": usage}));
    }
    json!({"by_round": true, "require_auth": false, "record": false, "turns": turns})
}

/// The scripts: an OpenAI agent and the evaluation over its cases (in cases.jsonl).
fn write_scripts(dir: &std::path::Path, base: &str, cases: usize) {
    let lines: Vec<String> = (0..cases)
        .map(|i| {
            json!({"name": format!("case-{i:03}"), "input": prompt(i), "expected": expected(i)})
                .to_string()
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), lines.join("\n") + "\n").expect("write cases");
    std::fs::write(
        dir.join("bench.rhai"),
        format!(
            r#"agent("bench").provider("openai").model("good").base_url("{base}/v1");
evaluation("bench")
    .agent("bench")
    .cases("cases.jsonl")
    .evaluator(answer_contains())
    .evaluator("short", |c, run| run.answer.len() < 200);
"#
        ),
    )
    .expect("write script");
}

fn prompt(i: usize) -> String {
    format!("Question {} what is the code?", marker(i))
}

/// This process's user + sys CPU time so far (every thread, the finished ones included).
fn rusage() -> Duration {
    // SAFETY: getrusage only writes the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Wall and CPU time of `f`.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration, Duration) {
    let (wall, cpu) = (Instant::now(), rusage());
    let out = f.await;
    (out, wall.elapsed(), rusage().saturating_sub(cpu))
}

/// The eval: every case on both models, `repeat` times, scored and summarized.
async fn eval(host: &Arc<Host>, spec: &Arc<EvalSpec>, base: &str, size: Size) -> Report {
    let opts = EvalOptions {
        models: MODELS.iter().map(|m| m.to_string()).collect(),
        repeat: Some(size.repeat),
        concurrency: Some(CONCURRENCY),
        base_url: Some(format!("{base}/v1")),
        ..EvalOptions::default()
    };
    kiln_eval::run::run(host, spec, opts).await.expect("eval")
}

/// The baseline: the same runs with `Host::run`, at most [`CONCURRENCY`] at once; how many
/// answers held their case's expected text.
async fn bare(host: &Arc<Host>, base: &str, size: Size) -> usize {
    let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut set = tokio::task::JoinSet::new();
    for model in MODELS {
        for case in 0..size.cases {
            for _ in 0..size.repeat {
                let permit = gate.clone().acquire_owned().await.expect("semaphore");
                let (host, base) = (host.clone(), base.to_string());
                set.spawn(async move {
                    let _permit = permit;
                    let (provider, name) = model.split_once(':').expect("provider:model");
                    let opts = RunOptions {
                        overrides: ProviderOverrides {
                            provider: Some(provider.into()),
                            model: Some(name.into()),
                            base_url: Some(format!("{base}/v1")),
                            ..ProviderOverrides::default()
                        },
                        ..RunOptions::default()
                    };
                    let report = host.run("bench", &prompt(case), opts).await.expect("run");
                    report.answer.contains(&expected(case))
                });
            }
        }
    }
    let mut right = 0;
    while let Some(joined) = set.join_next().await {
        right += usize::from(joined.expect("task"));
    }
    right
}

/// The report holds every run, scored as the scenario answers.
fn check(report: &Report, size: Size) {
    assert_eq!(
        report.results.len(),
        size.runs(),
        "every run is in the report"
    );
    assert!(
        report.results.iter().all(|r| r.run.error.is_none()),
        "no run failed"
    );
    assert_eq!(report.evaluators, ["answer_contains", "short"]);
    let rate = |model: &str| {
        let s = report
            .summary
            .iter()
            .find(|s| s.model == model)
            .expect("summary row");
        assert_eq!(s.runs as usize, size.runs() / MODELS.len());
        assert_eq!(
            s.usage.tokens(),
            60 * s.runs as u64,
            "every turn's usage is counted"
        );
        s.pass_rate
    };
    assert_eq!(rate("openai:good"), 1.0);
    assert!((rate("openai:weak") - 0.8).abs() < 1e-9, "weak misses 20%");
}

/// Right answers the baseline's runs must give: all of good's, 80% of weak's.
fn right_answers(size: Size) -> usize {
    let per_model = size.cases * size.repeat as usize;
    per_model + per_model * 4 / 5
}

fn main() {
    set_key();
    let quick = !support::measuring() || std::env::var_os("KILN_BENCH_QUICK").is_some();
    let size = match quick {
        true => Size {
            cases: 10,
            repeat: 1,
            samples: 1,
        },
        false => Size {
            cases: 100,
            repeat: 3,
            samples: 7,
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("scripts dir");
    let (mut mock, base) = start_mock(&scenario(size.cases), dir.path());
    write_scripts(&scripts, &base, size.cases);
    let host = Host::builder()
        .scripts(&scripts)
        .database(dir.path().join("kiln.db"))
        .build()
        .expect("host");
    assert!(
        host.registry().errors.is_empty(),
        "{:?}",
        host.registry().errors
    );
    let spec = host
        .registry()
        .eval("bench")
        .expect("the evaluation is loaded");
    assert_eq!(spec.cases.len(), size.cases);
    let (bare_t, eval_t, report) = runtime.block_on(measure(&host, &spec, &base, size));
    let _ = mock.kill();
    print_eval(size, bare_t, eval_t);
    rendering(&report, size);
}

/// Wall and CPU time, medians.
type Times = (Duration, Duration);

/// The baseline and the eval, interleaved, `size.samples` times each; their medians and the
/// last eval's report.
async fn measure(
    host: &Arc<Host>,
    spec: &Arc<EvalSpec>,
    base: &str,
    size: Size,
) -> (Times, Times, Report) {
    // Warm up: connections, the run log, the scripts' first calls.
    bare(host, base, Size { repeat: 1, ..size }).await;
    let (mut bare_t, mut eval_t, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..size.samples {
        let (right, wall, cpu) = timed(bare(host, base, size)).await;
        assert_eq!(right, right_answers(size));
        bare_t.push((wall, cpu));
        let (report, wall, cpu) = timed(eval(host, spec, base, size)).await;
        check(&report, size);
        eval_t.push((wall, cpu));
        last = Some(report);
    }
    let med = |v: &[Times]| {
        let mut wall: Vec<Duration> = v.iter().map(|t| t.0).collect();
        let mut cpu: Vec<Duration> = v.iter().map(|t| t.1).collect();
        (median(&mut wall), median(&mut cpu))
    };
    (med(&bare_t), med(&eval_t), last.expect("a sample"))
}

/// The eval's table, against the baseline.
fn print_eval(size: Size, bare_t: Times, eval_t: Times) {
    let per_run = |d: Duration| d / size.runs() as u32;
    let row = |name: &str, t: (Duration, Duration)| {
        vec![
            name.to_string(),
            show(t.0),
            show(t.1),
            show(per_run(t.1)),
            ratio(t.0, bare_t.0),
            ratio(t.1, bare_t.1),
        ]
    };
    table(
        &format!(
            "Eval: {} cases × {} models × {} repeats = {} one-round agent runs against \
             `kiln mock` (its own process, not counted), {CONCURRENCY} at once, SQLite run log \
             on; CPU is this process's user + sys (getrusage), median of {}:",
            size.cases,
            MODELS.len(),
            size.repeat,
            size.runs(),
            size.samples
        ),
        &[
            "variant",
            "wall",
            "CPU",
            "CPU per run",
            "wall vs baseline",
            "CPU vs baseline",
        ],
        &[
            row(&format!("{} `Host::run`s (baseline)", size.runs()), bare_t),
            row("`kiln_eval::run::run` (2 evaluators, summary)", eval_t),
        ],
    );
    println!(
        "\nThe eval layer: {} of CPU per run.",
        show(per_run(eval_t.1.saturating_sub(bare_t.1)))
    );
}

/// What rendering the report costs, against its JSON alone (`--json`).
fn rendering(report: &Report, size: Size) {
    let samples = if size.samples > 1 { 11 } else { 1 };
    let json = || serde_json::to_string_pretty(report).expect("json").len();
    let outputs: [(&str, &dyn Fn() -> usize); 4] = [
        ("JSON (`--json`, baseline)", &json),
        ("table", &|| kiln_eval::render::table::render(report).len()),
        ("JUnit (`--junit`)", &|| {
            kiln_eval::render::junit::render(report).len()
        }),
        ("HTML (`--html`)", &|| {
            kiln_eval::render::html::render(report).len()
        }),
    ];
    let all = || outputs.iter().map(|(_, f)| f()).sum::<usize>();
    let mut measured = Vec::new();
    for (name, f) in outputs
        .iter()
        .map(|(n, f)| (n.to_string(), *f))
        .chain([("all four".to_string(), &all as &dyn Fn() -> usize)])
    {
        let bytes = f();
        let t = support::per_iter(samples, 1, || {
            std::hint::black_box(f());
        });
        measured.push((name, bytes, t));
    }
    let base = measured[0].2;
    let rows: Vec<Vec<String>> = measured
        .into_iter()
        .map(|(name, bytes, t)| {
            let kb = format!("{:.1} KB", bytes as f64 / 1024.0);
            vec![name, kb, show(t), ratio(t, base)]
        })
        .collect();
    table(
        &format!(
            "Rendering the {}-run report, median of {samples} (one thread):",
            size.runs()
        ),
        &["output", "size", "time", "vs JSON"],
        &rows,
    );
}

/// The agent's provider wants a key in the environment (the mock does not check it).
fn set_key() {
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        // SAFETY: called at the start of `main`, before any other thread exists.
        unsafe { std::env::set_var("OPENAI_API_KEY", "bench-key") };
    }
}
