//! Finding test files, loading them (their top level declares the tests) and running the tests
//! in parallel, each with a fresh `TestEnv` (env.rs) and under a deadline.

use super::agent;
use super::api::{self, Declared};
use super::env::{self, TestEnv};
use super::error::TestError;
use kiln_script::is_test_file;
use kiln_script::sandbox::{self, Limits};
use rhai::{AST, Dynamic, Engine, EvalAltResult};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default deadline of one test: the same as a tool call's default.
pub const DEFAULT_TIMEOUT: Duration = kiln_core::tool::DEFAULT_TIMEOUT;
/// How long a test file's top level may run while its tests are declared.
const LOAD_DEADLINE: Duration = Duration::from_secs(10);
/// Stack of a test thread (Rhai recursion is deep; the main thread's default is 8 MiB).
const STACK: usize = 8 * 1024 * 1024;

/// How tests are run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Scripts folders the tools and agents load from; empty: each test file's own folder.
    pub scripts: Vec<PathBuf>,
    /// Load the stdlib tools too.
    pub stdlib: bool,
    /// Only tests whose name contains this text.
    pub filter: Option<String>,
    /// Deadline of each test.
    pub timeout: Duration,
    /// Tests run at once.
    pub jobs: usize,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            scripts: Vec::new(),
            stdlib: true,
            filter: None,
            timeout: DEFAULT_TIMEOUT,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// How a test ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// Why it failed (an assertion's diff, an error, the deadline).
    Failed(String),
}

/// One test's result.
#[derive(Debug, Clone)]
pub struct TestResult {
    /// The test's name (for a file that does not load: the file).
    pub name: String,
    /// The test file as shown.
    pub file: String,
    /// Line of its `test(...)` call.
    pub line: usize,
    /// Passed or why not.
    pub outcome: Outcome,
    /// Time taken.
    pub duration: Duration,
    /// What the test printed.
    pub output: String,
}

impl TestResult {
    /// True when it passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }
}

/// A loaded test file.
pub struct TestFile {
    /// Its path.
    pub path: PathBuf,
    /// The path as shown.
    pub shown: String,
    ast: AST,
    tests: Vec<Declared>,
    /// Why it did not load.
    error: Option<String>,
}

thread_local! {
    /// What the running test printed.
    static OUTPUT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The engine, runtime and settings shared by every test of a run.
pub struct Tests {
    engine: Arc<Engine>,
    runtime: tokio::runtime::Runtime,
    config: RunConfig,
}

impl Tests {
    /// Sets up a run; `roots` are the folders test files may import modules from.
    pub fn new(config: RunConfig, roots: Vec<PathBuf>) -> Result<Tests, TestError> {
        let sink: sandbox::PrintSink = Arc::new(|s: &str| {
            OUTPUT.with(|o| {
                let mut o = o.borrow_mut();
                o.push_str(s);
                o.push('\n');
            })
        });
        let mut engine = kiln_script::engine(&Limits::default(), roots, Some(sink));
        register(&mut engine);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kiln-test")
            .enable_all()
            .build()
            .map_err(TestError::Runtime)?;
        Ok(Tests {
            engine: Arc::new(engine),
            runtime,
            config,
        })
    }

    /// Loads one test file: compiles it and runs its top level, collecting its tests.
    pub fn load(&self, path: &Path) -> TestFile {
        let shown = path.display().to_string();
        let failed = |error: String| TestFile {
            path: path.to_path_buf(),
            shown: shown.clone(),
            ast: AST::empty(),
            tests: Vec::new(),
            error: Some(error),
        };
        let source = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => return failed(format!("{shown}: cannot read: {e}")),
        };
        let mut ast = match self.engine.compile(&source) {
            Ok(a) => a,
            Err(e) => return failed(format!("{shown}{}: {}", position(e.position()), e.0)),
        };
        ast.set_source(shown.clone());
        let deadline = Some(Instant::now() + LOAD_DEADLINE);
        let (result, tests) =
            api::collect(|| sandbox::with_watch(deadline, None, || self.engine.run_ast(&ast)));
        if let Err(e) = result {
            return failed(describe(&e, &shown, LOAD_DEADLINE));
        }
        TestFile {
            path: path.to_path_buf(),
            shown,
            ast,
            tests,
            error: None,
        }
    }

    /// The scripts folders of a test file's host.
    fn scripts_for(&self, file: &TestFile) -> Vec<PathBuf> {
        if !self.config.scripts.is_empty() {
            return self.config.scripts.clone();
        }
        vec![
            file.path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        ]
    }

    fn run_one(&self, file: &TestFile, test: &Declared) -> TestResult {
        let started = Instant::now();
        let deadline = started + self.config.timeout;
        OUTPUT.with(|o| o.borrow_mut().clear());
        let outcome = match TestEnv::new(
            &self.scripts_for(file),
            self.config.stdlib,
            &file.path,
            deadline,
            self.runtime.handle().clone(),
        ) {
            Err(e) => Outcome::Failed(e),
            Ok(test_env) => {
                let result = env::with_env(Arc::new(test_env), || {
                    sandbox::with_watch(Some(deadline), None, || {
                        test.body.call::<Dynamic>(&self.engine, &file.ast, ())
                    })
                });
                match result {
                    Ok(_) => Outcome::Passed,
                    Err(e) => Outcome::Failed(describe(&e, &file.shown, self.config.timeout)),
                }
            }
        };
        TestResult {
            name: test.name.clone(),
            file: file.shown.clone(),
            line: test.line,
            outcome,
            duration: started.elapsed(),
            output: OUTPUT.with(|o| std::mem::take(&mut *o.borrow_mut())),
        }
    }

    /// Runs the tests of `files` (filtered) in parallel, handing each result to `on_result`
    /// as it ends; returns them all in file and declaration order.
    pub fn run(
        &self,
        files: &[TestFile],
        on_result: &(dyn Fn(&TestResult) + Sync),
    ) -> Vec<TestResult> {
        let mut results: Vec<(usize, TestResult)> = Vec::new();
        let mut queue: Vec<(usize, &TestFile, &Declared)> = Vec::new();
        for file in files {
            if let Some(error) = &file.error {
                let r = TestResult {
                    name: file.shown.clone(),
                    file: file.shown.clone(),
                    line: 0,
                    outcome: Outcome::Failed(error.clone()),
                    duration: Duration::ZERO,
                    output: String::new(),
                };
                on_result(&r);
                results.push((results.len() + queue.len(), r));
                continue;
            }
            for t in &file.tests {
                if self
                    .config
                    .filter
                    .as_deref()
                    .is_none_or(|f| t.name.contains(f))
                {
                    queue.push((results.len() + queue.len(), file, t));
                }
            }
        }
        let next = AtomicUsize::new(0);
        let done = Mutex::new(results);
        let workers = self.config.jobs.clamp(1, queue.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                let worker = || {
                    while let Some((order, file, test)) =
                        queue.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let r = self.run_one(file, test);
                        if let Ok(mut d) = done.lock() {
                            on_result(&r);
                            d.push((*order, r));
                        }
                    }
                };
                if let Err(e) = std::thread::Builder::new()
                    .name("kiln-test".into())
                    .stack_size(STACK)
                    .spawn_scoped(s, worker)
                {
                    tracing::warn!("cannot start a test thread: {e}");
                }
            }
        });
        let mut all = done.into_inner().unwrap_or_else(|e| e.into_inner());
        all.sort_by_key(|(order, _)| *order);
        all.into_iter().map(|(_, r)| r).collect()
    }
}

/// The test files under `paths` (files as given, folders searched recursively), sorted.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, TestError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() {
            out.push(p.clone());
            continue;
        }
        if !p.is_dir() {
            return Err(TestError::NoSuchPath(p.display().to_string()));
        }
        let mut stack = vec![p.clone()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|source| TestError::Read {
                path: dir.display().to_string(),
                source,
            })?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if is_test_file(&path) {
                    out.push(path);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// `:line:col` (or `:line`), empty when the position is unknown.
fn position(p: rhai::Position) -> String {
    match (p.line(), p.position()) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// A test's error as a message: the innermost error, where it happened (`file:line:col`),
/// and for a deadline the limit that stopped it.
fn describe(err: &EvalAltResult, file: &str, limit: Duration) -> String {
    use EvalAltResult as E;
    match err {
        E::ErrorInFunctionCall(_, _, inner, _) | E::ErrorInModule(_, inner, _) => {
            describe(inner, file, limit)
        }
        E::ErrorTerminated(token, pos) if token.to_string() == sandbox::CANCEL_TOKEN => {
            format!("cancelled\n  at {file}{}", position(*pos))
        }
        E::ErrorTerminated(_, pos) => format!(
            "the test ran past its deadline of {:.1}s and was stopped (raise it with --timeout)\n  at {file}{}",
            limit.as_secs_f64(),
            position(*pos)
        ),
        E::ErrorRuntime(value, pos) => format!("{value}\n  at {file}{}", position(*pos)),
        other => format!("{other}\n  in {file}"),
    }
}

/// Adds what test files call (`test`, the assertions, `call_tool` with grants, `run_agent`,
/// `fake_http`, ...) to an engine, e.g. one whose definitions are written for editors.
pub fn register(engine: &mut rhai::Engine) {
    api::register(engine);
    agent::register(engine);
}
