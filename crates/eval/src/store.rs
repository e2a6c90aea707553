//! Reports kept in the workspace: every eval run's report under `.kiln/evals/ID.json` (what
//! `--rescore ID` and `--cache` read), and named baselines under `.kiln/evals/baselines/`
//! (`--save NAME`, `--baseline NAME`).

use super::report::{Report, SCHEMA_VERSION};
use std::path::{Path, PathBuf};

/// What went wrong reading or writing a kept report.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No report of that id or name.
    #[error("no {what} \"{name}\" in {dir} ({hint})")]
    Missing {
        /// `eval run` or `baseline`.
        what: &'static str,
        /// The id or name asked for.
        name: String,
        /// Where it was looked for.
        dir: String,
        /// What to do.
        hint: &'static str,
    },
    /// A name that is not a plain file name.
    #[error("\"{0}\" is not a usable name: letters, digits, `-`, `_` and `.` only")]
    BadName(String),
    /// The file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// The file is not a report of this version.
    #[error("{path}: not a kiln eval report of schema version {SCHEMA_VERSION}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// Where a workspace keeps its eval reports.
pub fn dir(workspace: &Path) -> PathBuf {
    workspace.join(kiln_core::defaults::STATE_DIR).join("evals")
}

fn checked(name: &str) -> Result<&str, StoreError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then_some(name)
        .ok_or_else(|| StoreError::BadName(name.to_string()))
}

fn write(path: &Path, report: &Report) -> Result<(), StoreError> {
    let io = |e: std::io::Error| StoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(report).map_err(|e| StoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    // Written whole then renamed, so a reader never sees half a report.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn read(path: &Path) -> Result<Report, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|e| StoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let report: Report = serde_json::from_str(&text).map_err(|e| StoreError::Invalid {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    if report.schema_version != SCHEMA_VERSION {
        return Err(StoreError::Invalid {
            path: path.display().to_string(),
            message: format!("it is version {}", report.schema_version),
        });
    }
    Ok(report)
}

/// Keeps an eval run's report under its id.
pub fn keep(workspace: &Path, report: &Report) -> Result<PathBuf, StoreError> {
    let path = dir(workspace).join(format!("{}.json", checked(&report.id)?));
    write(&path, report).map(|()| path)
}

/// The report of eval run `id`.
pub fn load(workspace: &Path, id: &str) -> Result<Report, StoreError> {
    let path = dir(workspace).join(format!("{}.json", checked(id)?));
    if !path.exists() {
        return Err(StoreError::Missing {
            what: "eval run",
            name: id.to_string(),
            dir: dir(workspace).display().to_string(),
            hint: "each `kiln eval` prints its run's id",
        });
    }
    read(&path)
}

/// Saves `report` as baseline `name`.
pub fn save_baseline(workspace: &Path, name: &str, report: &Report) -> Result<PathBuf, StoreError> {
    let path = dir(workspace)
        .join("baselines")
        .join(format!("{}.json", checked(name)?));
    write(&path, report).map(|()| path)
}

/// Baseline `name`.
pub fn load_baseline(workspace: &Path, name: &str) -> Result<Report, StoreError> {
    let path = dir(workspace)
        .join("baselines")
        .join(format!("{}.json", checked(name)?));
    if !path.exists() {
        return Err(StoreError::Missing {
            what: "baseline",
            name: name.to_string(),
            dir: dir(workspace).join("baselines").display().to_string(),
            hint: "save one with `kiln eval --save NAME`",
        });
    }
    read(&path)
}

/// The latest kept report of eval `name` that is not a re-score (for `--cache`): files are
/// read newest first and reading stops at the first that fits, so a workspace with many kept
/// reports is not parsed whole on every run.
pub fn latest(workspace: &Path, name: &str) -> Option<Report> {
    let entries = std::fs::read_dir(dir(workspace)).ok()?;
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    files
        .into_iter()
        .filter_map(|(_, p)| read(&p).ok())
        .find(|r| r.eval == name && r.rescored_from.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_baselines_round_trip_and_names_stay_in_their_folder() {
        let ws = tempfile::tempdir().unwrap();
        let report = Report {
            schema_version: SCHEMA_VERSION,
            id: "ev_1".into(),
            eval: "e".into(),
            finished_at: "2026-01-01T00:00:00Z".into(),
            ..Report::default()
        };
        keep(ws.path(), &report).unwrap();
        assert_eq!(load(ws.path(), "ev_1").unwrap(), report);
        save_baseline(ws.path(), "main", &report).unwrap();
        assert_eq!(load_baseline(ws.path(), "main").unwrap(), report);
        assert_eq!(latest(ws.path(), "e").unwrap().id, "ev_1");
        assert!(matches!(
            load_baseline(ws.path(), "../x"),
            Err(StoreError::BadName(_))
        ));
        let e = load_baseline(ws.path(), "nope").unwrap_err().to_string();
        assert!(e.contains("kiln eval --save NAME"), "{e}");
    }
}
