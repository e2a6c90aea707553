//! The database layer's errors, each naming the database (a file, or a URL without its
//! password).

use crate::sql::SqlError;

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
    /// PostgreSQL (or the connection to it) failed.
    #[error("database {url}: {source}")]
    Postgres {
        /// The database's URL, without its password.
        url: String,
        /// What failed.
        source: SqlError,
    },
    /// A `postgres://` URL this kiln cannot use.
    #[error("database {url}: {detail}")]
    BadUrl {
        /// The URL, without its password.
        url: String,
        /// What is wrong with it.
        detail: String,
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
    /// The session went on (a run added to it) while it was being compacted.
    #[error(
        "session \"{0}\" changed while it was being compacted (a run added to it): nothing was replaced; compact it again"
    )]
    SessionChanged(String),
    /// A newer kiln wrote the database; this one does not know its tables.
    #[error(
        "database {path} has schema version {found}, newer than this kiln knows ({known}): upgrade kiln, or pass --db to use another database"
    )]
    NewerSchema {
        /// The database file or URL.
        path: String,
        /// The version the file has.
        found: usize,
        /// The newest version this kiln knows.
        known: usize,
    },
    /// A stored row this kiln cannot read.
    #[error("database row unreadable: {0}")]
    Corrupt(String),
    /// The file is damaged (`PRAGMA quick_check` found a fault, or SQLite read a malformed page).
    #[error(
        "database {path} is damaged ({detail}): stop kiln and restore the file from a backup, or move it aside (kiln then starts an empty log) and save what is readable with `sqlite3 {path} .recover | sqlite3 recovered.db`"
    )]
    Damaged {
        /// The database file.
        path: String,
        /// What SQLite found.
        detail: String,
    },
    /// Whoever was committing a queued job panicked: its outcome is unknown.
    #[error("the database's committer stopped before committing")]
    CommitterPanicked,
}

/// Writes kept to commit again at most ([`crate::Db::owe`]).
pub const MAX_OWED: usize = 10_000;

impl DbError {
    /// Whether the same write may land later: the disk was full, the file read-only, busy or
    /// failing to write, the PostgreSQL server unreachable or restarting (not a damaged file
    /// or a write this kiln got wrong).
    pub fn may_land_later(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match self {
            DbError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(
                    C::DiskFull
                        | C::SystemIoFailure
                        | C::ReadOnly
                        | C::DatabaseBusy
                        | C::DatabaseLocked
                        | C::CannotOpen
                        | C::OutOfMemory
                )
            ),
            DbError::Postgres { source, .. } => match source {
                SqlError::Pool(_) => true,
                SqlError::Postgres(e) => e.code().is_none_or(|code| {
                    // Connection exceptions, the server shutting down, out of resources.
                    let code = code.code();
                    code.starts_with("08") || code.starts_with("57P") || code.starts_with("53")
                }),
                SqlError::Sqlite(_) => false,
            },
            _ => false,
        }
    }
}
