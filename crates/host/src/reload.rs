//! Hot reload: watch the scripts folders, recompile changed `*.rhai` files and swap the registry
//! atomically. Folders are watched (not files) so editors that save by rename work.

use kiln_core::error::{HostError, LoadError};
use kiln_script::imports::canonical;
use kiln_script::loader::LoadedFile;
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long file events are gathered before a reload.
pub const DEBOUNCE: Duration = Duration::from_millis(40);
/// How long an emptied file must stay empty before its tools are dropped.
pub const EMPTY_SETTLE: Duration = Duration::from_millis(250);

/// What one reload did.
#[derive(Debug, Clone)]
pub struct ReloadReport {
    /// The file.
    pub path: String,
    /// Tools new in this version.
    pub added: usize,
    /// Tools present before and after.
    pub changed: usize,
    /// Tools gone.
    pub removed: usize,
    /// The file was deleted.
    pub deleted: bool,
    /// Why the file did not load (the last good version stays live).
    pub errors: Vec<LoadError>,
    /// Time to load and swap.
    pub elapsed: Duration,
    /// The file read empty and nothing changed yet; it is looked at again later.
    pub deferred: bool,
    /// Why a file that did not change was reloaded: it imports `via[0]`, which imports
    /// `via[1]`, ...; the last one changed. Empty for the changed file itself.
    pub via: Vec<String>,
    /// MCP servers started or stopped because their `mcp_server(...)` declarations changed.
    pub mcp: Vec<String>,
    /// What the file serves besides tools now (`2 resources, 1 prompt`), if anything.
    pub served: Option<String>,
}

impl ReloadReport {
    fn base(path: String, started: Instant) -> Self {
        ReloadReport {
            path,
            added: 0,
            changed: 0,
            removed: 0,
            deleted: false,
            errors: Vec::new(),
            elapsed: started.elapsed(),
            deferred: false,
            via: Vec::new(),
            mcp: Vec::new(),
            served: None,
        }
    }

    /// A file (re)loaded: what its definitions gained, changed and lost.
    pub fn loaded(
        path: String,
        added: usize,
        changed: usize,
        removed: usize,
        started: Instant,
    ) -> Self {
        ReloadReport {
            added,
            changed,
            removed,
            ..Self::base(path, started)
        }
    }

    /// A file deleted: its definitions are gone.
    pub fn removed(path: String, removed: usize, started: Instant) -> Self {
        ReloadReport {
            removed,
            deleted: true,
            ..Self::base(path, started)
        }
    }

    /// A file that failed to load: its last good version stays live.
    pub fn failed(path: String, errors: Vec<LoadError>, started: Instant) -> Self {
        ReloadReport {
            errors,
            ..Self::base(path, started)
        }
    }

    /// True when the new version is live.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// ` (imports a.rhai, which imports b.rhai)`, or nothing for a file that changed itself.
    fn cause(&self) -> String {
        if self.via.is_empty() {
            return String::new();
        }
        format!(" (imports {})", self.via.join(", which imports "))
    }
}

impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.elapsed.as_secs_f64() * 1000.0;
        if !self.errors.is_empty() {
            let errs: Vec<String> = self.errors.iter().map(|e| e.to_string()).collect();
            let cause = match self.cause() {
                c if c.is_empty() => c,
                c => format!("; reloaded {}{c}", self.path),
            };
            return write!(
                f,
                "error: {} (the last good version stays live{cause})",
                errs.join("; ")
            );
        }
        let verb = if self.deleted { "removed" } else { "reloaded" };
        write!(
            f,
            "{verb} {}{}: +{} ~{} -{} tools ({ms:.1} ms)",
            self.path,
            self.cause(),
            self.added,
            self.changed,
            self.removed
        )?;
        if let Some(served) = &self.served {
            write!(f, "; serves {served}")?;
        }
        for line in &self.mcp {
            write!(f, "; {line}")?;
        }
        Ok(())
    }
}

/// The files that import `changed`, directly or through other modules, in breadth-first
/// order, each with the chain of imports that leads to it (see [`ReloadReport::via`]).
pub fn importers(
    files: &BTreeMap<String, Arc<LoadedFile>>,
    changed: &Path,
) -> Vec<(String, Vec<String>)> {
    let Some(start) = canonical(changed) else {
        return Vec::new();
    };
    let graph: Vec<(&String, PathBuf, &[PathBuf])> = files
        .iter()
        .filter(|(_, f)| !f.imports.is_empty())
        .filter_map(|(shown, f)| Some((shown, canonical(Path::new(shown))?, &f.imports[..])))
        .collect();
    let mut seen = vec![start.clone()];
    let mut queue = VecDeque::from([(start, vec![changed.to_string_lossy().to_string()])]);
    let mut out = Vec::new();
    while let Some((module, chain)) = queue.pop_front() {
        for (shown, path, imports) in &graph {
            if seen.contains(path) || !imports.contains(&module) {
                continue;
            }
            seen.push(path.clone());
            out.push(((*shown).clone(), chain.clone()));
            let mut next = vec![(*shown).clone()];
            next.extend(chain.iter().cloned());
            queue.push_back((path.clone(), next));
        }
    }
    out
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// A running watcher; dropping it stops watching.
pub struct Watcher {
    _debouncer: Box<dyn std::any::Any + Send>,
}

/// Maps an absolute event path back to the path the user gave (`scripts/a.rhai`).
fn shown_path(roots: &[(PathBuf, PathBuf)], event_path: &Path) -> PathBuf {
    for (given, canonical) in roots {
        if let Ok(rel) = event_path.strip_prefix(canonical) {
            return given.join(rel);
        }
    }
    event_path.to_path_buf()
}

/// What the watcher reloads (the host implements it).
pub trait Reload: Send + Sync {
    /// The scripts folders to watch, as the user gave them.
    fn folders(&self) -> Vec<PathBuf>;
    /// Reloads a changed file and every file importing it.
    fn reload_path(&self, path: &Path) -> Vec<ReloadReport>;
    /// As [`Reload::reload_path`], but a file found empty is deferred (an editor may be
    /// writing it) rather than dropped.
    fn reload_path_settling(&self, path: &Path) -> Vec<ReloadReport>;
    /// Reloads the scripts that read `path` at load (a tool's page, `.ui(#{ file })`), not
    /// itself: it is no script.
    fn reload_readers(&self, _path: &Path) -> Vec<ReloadReport> {
        Vec::new()
    }
}

/// Watches the host's scripts folders and reloads changed files, reporting each reload.
pub fn watch(
    host: Arc<dyn Reload>,
    on_report: impl Fn(ReloadReport) + Send + Sync + 'static,
) -> Result<Watcher, notify::Error> {
    let roots: Vec<(PathBuf, PathBuf)> = host
        .folders()
        .iter()
        .filter_map(|g| g.canonicalize().ok().map(|c| (g.clone(), c)))
        .collect();
    let watched: Vec<PathBuf> = roots.iter().map(|(_, c)| c.clone()).collect();
    let on_report = Arc::new(on_report);
    // Weak: a host may keep its own watcher (HostBuilder::watch) without keeping itself alive.
    let host = Arc::downgrade(&host);
    let handler = move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let Some(host) = host.upgrade() else { return };
        let (mut paths, mut read) = (BTreeSet::new(), BTreeSet::new());
        // Reading a file raises access events; only changes count (or a reload would loop).
        for ev in events
            .iter()
            .filter(|e| !matches!(e.kind, notify::EventKind::Access(_)))
        {
            for p in &ev.paths {
                if p.extension().is_some_and(|e| e == "rhai") && !kiln_script::is_test_file(p) {
                    paths.insert(shown_path(&roots, p));
                } else if p.is_file() {
                    read.insert(p.clone());
                }
            }
        }
        for p in read {
            host.reload_readers(&p)
                .into_iter()
                .for_each(|r| on_report(r));
        }
        for p in paths {
            let reports = host.reload_path_settling(&p);
            if !reports.iter().any(|r| r.deferred) {
                reports.into_iter().for_each(|r| on_report(r));
                continue;
            }
            // Drop the tools only if the file stays empty and untouched; a newer write raises
            // its own event and reload.
            let (host, on_report) = (host.clone(), on_report.clone());
            let stamp = modified(&p);
            std::thread::spawn(move || {
                std::thread::sleep(EMPTY_SETTLE);
                if modified(&p) == stamp {
                    host.reload_path(&p).into_iter().for_each(|r| on_report(r));
                }
            });
        }
    };
    let mut debouncer = new_debouncer(DEBOUNCE, Some(DEBOUNCE / 4), handler)?;
    for dir in watched {
        debouncer.watch(&dir, RecursiveMode::Recursive)?;
    }
    Ok(Watcher {
        _debouncer: Box::new(debouncer),
    })
}

/// The `*.rhai` files of a folder (recursively), sorted; a missing default folder is empty.
pub fn script_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    rhai_files(dir, |p| !kiln_script::is_test_file(p))
}

/// The test files (`*.test.rhai`) of a folder (recursively), sorted.
pub fn test_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    rhai_files(dir, kiln_script::is_test_file)
}

/// The `*.rhai` files of `dir` (recursively) that `keep` keeps, sorted.
fn rhai_files(dir: &Path, keep: fn(&Path) -> bool) -> Result<Vec<PathBuf>, HostError> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| HostError::ScriptsFolder {
            path: d.display().to_string(),
            source: e,
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rhai") && keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
