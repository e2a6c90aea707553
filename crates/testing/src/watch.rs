//! `kiln test --watch`: which test files to re-run when files change. A changed test file
//! re-runs its own tests; a changed script re-runs every test file (any of them may use it).

use super::{TestError, is_test_file};
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// What a batch of file changes asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Rerun {
    /// These test files (absolute paths).
    Files(Vec<PathBuf>),
    /// Every test file (a script changed).
    All,
}

/// Sorts changed paths into a re-run; `None` when no `.rhai` file changed.
pub fn rerun_for(changed: &[PathBuf]) -> Option<Rerun> {
    let rhai: Vec<&PathBuf> = changed
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rhai"))
        .collect();
    if rhai.is_empty() {
        return None;
    }
    if rhai.iter().any(|p| !is_test_file(p)) {
        return Some(Rerun::All);
    }
    let files: BTreeSet<PathBuf> = rhai.into_iter().cloned().collect();
    Some(Rerun::Files(files.into_iter().collect()))
}

/// A watcher over folders; dropping it stops watching.
pub struct Watcher {
    _debouncer: notify_debouncer_full::Debouncer<
        notify::RecommendedWatcher,
        notify_debouncer_full::RecommendedCache,
    >,
    /// Batches of changed paths.
    pub changes: mpsc::Receiver<Vec<PathBuf>>,
}

/// Watches `folders` (recursively), sending each debounced batch of changed paths.
pub fn watch(folders: &[PathBuf]) -> Result<Watcher, TestError> {
    let (tx, rx) = mpsc::channel();
    let handler = move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let paths: BTreeSet<PathBuf> = events
            .iter()
            .filter(|e| !matches!(e.kind, notify::EventKind::Access(_)))
            .flat_map(|e| e.paths.iter().cloned())
            .collect();
        if !paths.is_empty() {
            let _ = tx.send(paths.into_iter().collect());
        }
    };
    let failed = |path: &Path, e: &dyn std::fmt::Display| TestError::Watch {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut debouncer = new_debouncer(kiln_host::reload::DEBOUNCE, None, handler)
        .map_err(|e| failed(Path::new("."), &e))?;
    for f in folders {
        debouncer
            .watch(f, RecursiveMode::Recursive)
            .map_err(|e| failed(f, &e))?;
    }
    Ok(Watcher {
        _debouncer: debouncer,
        changes: rx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_change_reruns_everything_a_test_file_change_only_itself() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(rerun_for(&[p("/s/a.txt")]), None);
        assert_eq!(rerun_for(&[p("/s/tools.rhai")]), Some(Rerun::All));
        assert_eq!(
            rerun_for(&[p("/s/a.test.rhai"), p("/s/a.test.rhai")]),
            Some(Rerun::Files(vec![p("/s/a.test.rhai")]))
        );
    }
}
