//! The embedded SQLite database (`.kiln/kiln.db` in the workspace): run log, sessions and the
//! key-value store. WAL mode, a busy timeout for other processes, migrations versioned in code.

mod migrate;
pub mod runlog;
pub mod sessions;
pub mod store;

use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Errors of the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite failed.
    #[error("database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The folder of the database could not be made.
    #[error("cannot create {path}: {source}")]
    Folder {
        /// The folder.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No such session.
    #[error("no session named \"{0}\"")]
    NoSession(String),
}

/// The default database path of a workspace.
pub fn default_path(workspace: &Path) -> PathBuf {
    workspace.join(".kiln").join("kiln.db")
}

/// Seconds since the epoch, as stored.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An open database. One connection per process, shared behind a mutex: writes from many runs
/// are serialized here, and other processes wait on the busy timeout instead of failing.
pub struct Db {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Db {
    /// Opens (creating and migrating) the database at `path`.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| DbError::Folder {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        let err = |source| DbError::Sqlite {
            path: shown.clone(),
            source,
        };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(15))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        migrate::run(&mut conn).map_err(err)?;
        Ok(Db {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for one unit of work.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wraps an SQLite error with the path.
    pub(crate) fn err(&self, source: rusqlite::Error) -> DbError {
        DbError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }
}
