//! Reports kept: every eval run's report (what `--rescore ID` and `--cache` read) and named
//! baselines (`--save NAME`, `--baseline NAME`), in the workspace's `.kiln/evals/ID.json` and
//! `.kiln/evals/baselines/`, or, when kiln shares a PostgreSQL database (`--db postgres://`),
//! in its `eval_reports` table, so every machine reads the same runs and baselines.

use super::report::{Report, SCHEMA_VERSION};
use kiln_db::{Db, args};
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
    /// The file (or the database) could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file, or the database.
        path: String,
        /// What failed.
        message: String,
    },
    /// The file is not a report of this version.
    #[error("{path}: not a kiln eval report of schema version {SCHEMA_VERSION}: {message}")]
    Invalid {
        /// The file, or the database's row.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// Where reports are kept.
#[derive(Clone, Copy)]
pub enum Shelf<'a> {
    /// The workspace's `.kiln/evals/` folder.
    Files(&'a Path),
    /// The `eval_reports` table of a database kiln processes share.
    Shared(&'a Db),
}

impl<'a> Shelf<'a> {
    /// The shelf of `workspace`, with `db` the database its kiln uses: the database when it
    /// is shared (PostgreSQL), else the workspace's files.
    pub fn of(workspace: &'a Path, db: Option<&'a Db>) -> Self {
        match db {
            Some(db) if db.is_postgres() => Shelf::Shared(db),
            _ => Shelf::Files(workspace),
        }
    }

    /// Where a kept run or baseline is looked for, as messages name it.
    fn place(&self, baselines: bool) -> String {
        match (self, baselines) {
            (Shelf::Files(ws), false) => dir(ws).display().to_string(),
            (Shelf::Files(ws), true) => dir(ws).join("baselines").display().to_string(),
            (Shelf::Shared(db), _) => format!("{} (table eval_reports)", db.path().display()),
        }
    }
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
    parse(&text, &path.display().to_string())
}

/// A report from its JSON text, kept at `place`.
fn parse(text: &str, place: &str) -> Result<Report, StoreError> {
    let report: Report = serde_json::from_str(text).map_err(|e| StoreError::Invalid {
        path: place.to_string(),
        message: e.to_string(),
    })?;
    if report.schema_version != SCHEMA_VERSION {
        return Err(StoreError::Invalid {
            path: place.to_string(),
            message: format!("it is version {}", report.schema_version),
        });
    }
    Ok(report)
}

/// What a run's report and a baseline are called in the `eval_reports` table.
const RUN: &str = "run";
const BASELINE: &str = "baseline";

/// Keeps `report` in the shared table as `kind` `name`.
fn put(db: &Db, kind: &str, name: &str, report: &Report) -> Result<String, StoreError> {
    let place = format!("{} (table eval_reports)", db.path().display());
    let failed = |message: String| StoreError::Io {
        path: place.clone(),
        message,
    };
    let body = serde_json::to_string(report).map_err(|e| failed(e.to_string()))?;
    db.execute(
        "INSERT INTO eval_reports(kind, name, eval, rescored, kept_at, body)
         VALUES(?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(kind, name) DO UPDATE SET eval = excluded.eval,
         rescored = excluded.rescored, kept_at = excluded.kept_at, body = excluded.body",
        &args![
            kind,
            name,
            &report.eval,
            report.rescored_from.is_some(),
            kiln_db::now(),
            body
        ],
    )
    .map_err(|e| failed(e.to_string()))?;
    Ok(place)
}

/// The report kept in the shared table as `kind` `name`, if any.
fn get(db: &Db, kind: &str, name: &str) -> Result<Option<Report>, StoreError> {
    let place = format!(
        "{} (table eval_reports, {kind} {name})",
        db.path().display()
    );
    let row = db
        .query_row(
            "SELECT body FROM eval_reports WHERE kind = ?1 AND name = ?2",
            &args![kind, name],
        )
        .map_err(|e| StoreError::Io {
            path: place.clone(),
            message: e.to_string(),
        })?;
    row.map(|r| parse(&r.str(0), &place)).transpose()
}

/// Keeps an eval run's report under its id; where it went.
pub fn keep(shelf: Shelf<'_>, report: &Report) -> Result<String, StoreError> {
    let id = checked(&report.id)?;
    match shelf {
        Shelf::Shared(db) => put(db, RUN, id, report),
        Shelf::Files(ws) => {
            let path = dir(ws).join(format!("{id}.json"));
            write(&path, report).map(|()| path.display().to_string())
        }
    }
}

/// The report of eval run `id`.
pub fn load(shelf: Shelf<'_>, id: &str) -> Result<Report, StoreError> {
    let id = checked(id)?;
    let found = match shelf {
        Shelf::Shared(db) => get(db, RUN, id)?,
        Shelf::Files(ws) => {
            let path = dir(ws).join(format!("{id}.json"));
            path.exists().then(|| read(&path)).transpose()?
        }
    };
    found.ok_or_else(|| StoreError::Missing {
        what: "eval run",
        name: id.to_string(),
        dir: shelf.place(false),
        hint: "each `kiln eval` prints its run's id",
    })
}

/// Saves `report` as baseline `name`; where it went.
pub fn save_baseline(shelf: Shelf<'_>, name: &str, report: &Report) -> Result<String, StoreError> {
    let name = checked(name)?;
    match shelf {
        Shelf::Shared(db) => put(db, BASELINE, name, report),
        Shelf::Files(ws) => {
            let path = dir(ws).join("baselines").join(format!("{name}.json"));
            write(&path, report).map(|()| path.display().to_string())
        }
    }
}

/// Baseline `name`.
pub fn load_baseline(shelf: Shelf<'_>, name: &str) -> Result<Report, StoreError> {
    let name = checked(name)?;
    let found = match shelf {
        Shelf::Shared(db) => get(db, BASELINE, name)?,
        Shelf::Files(ws) => {
            let path = dir(ws).join("baselines").join(format!("{name}.json"));
            path.exists().then(|| read(&path)).transpose()?
        }
    };
    found.ok_or_else(|| StoreError::Missing {
        what: "baseline",
        name: name.to_string(),
        dir: shelf.place(true),
        hint: "save one with `kiln eval --save NAME`",
    })
}

/// The latest kept report of eval `name` that is not a re-score (for `--cache`): files are
/// read newest first and reading stops at the first that fits, so a workspace with many kept
/// reports is not parsed whole on every run.
pub fn latest(shelf: Shelf<'_>, name: &str) -> Option<Report> {
    let ws = match shelf {
        Shelf::Files(ws) => ws,
        Shelf::Shared(db) => {
            let row = db
                .query_row(
                    "SELECT body FROM eval_reports WHERE kind = ?1 AND eval = ?2 AND rescored = 0
                     ORDER BY kept_at DESC LIMIT 1",
                    &args![RUN, name],
                )
                .ok()??;
            return parse(&row.str(0), "eval_reports").ok();
        }
    };
    let entries = std::fs::read_dir(dir(ws)).ok()?;
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

    fn a_report(id: &str, rescored: bool) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            eval: "e".into(),
            finished_at: "2026-01-01T00:00:00Z".into(),
            rescored_from: rescored.then(|| "ev_0".to_string()),
            ..Report::default()
        }
    }

    /// Keeps, reads back and refuses on either shelf.
    fn round_trip(shelf: Shelf<'_>) {
        let report = a_report("ev_1", false);
        keep(shelf, &report).unwrap();
        assert_eq!(load(shelf, "ev_1").unwrap(), report);
        save_baseline(shelf, "main", &report).unwrap();
        assert_eq!(load_baseline(shelf, "main").unwrap(), report);
        assert_eq!(latest(shelf, "e").unwrap().id, "ev_1");
        assert!(matches!(
            load_baseline(shelf, "../x"),
            Err(StoreError::BadName(_))
        ));
        let e = load_baseline(shelf, "nope").unwrap_err().to_string();
        assert!(e.contains("kiln eval --save NAME"), "{e}");
        let e = load(shelf, "ev_9").unwrap_err().to_string();
        assert!(e.contains("prints its run's id"), "{e}");
    }

    #[test]
    fn reports_and_baselines_round_trip_and_names_stay_in_their_folder() {
        let ws = tempfile::tempdir().unwrap();
        round_trip(Shelf::Files(ws.path()));
        assert!(dir(ws.path()).join("baselines/main.json").is_file());
    }

    #[test]
    fn reports_and_baselines_round_trip_in_a_shared_table() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("k.db")).unwrap();
        round_trip(Shelf::Shared(&db));
        // A re-score is kept but never the one `--cache` replays.
        std::thread::sleep(std::time::Duration::from_millis(5));
        keep(Shelf::Shared(&db), &a_report("ev_2", true)).unwrap();
        assert_eq!(latest(Shelf::Shared(&db), "e").unwrap().id, "ev_1");
        assert!(
            matches!(Shelf::of(dir.path(), Some(&db)), Shelf::Files(_)),
            "SQLite keeps files"
        );
    }

    #[test]
    #[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
    fn reports_and_baselines_round_trip_on_postgres() {
        let scratch = kiln_db::scratch::Scratch::new().expect("a PostgreSQL database");
        let db = Db::connect(scratch.url()).unwrap();
        let ws = tempfile::tempdir().unwrap();
        let shelf = Shelf::of(ws.path(), Some(&db));
        assert!(matches!(shelf, Shelf::Shared(_)));
        round_trip(shelf);
        assert!(!dir(ws.path()).exists(), "nothing written to the workspace");
    }
}
