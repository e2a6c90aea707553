//! kiln's storage: the run log's tables, sessions, the key-value store
//! ([`store::WorkspaceStore`], what `store_*` reaches) and stored responses, in an embedded
//! SQLite file (`.kiln/kiln.db` in the workspace; WAL mode, a busy timeout for other
//! processes) or on a PostgreSQL server several kiln processes share (`--db postgres://…`).
//! Statements are written once for both ([`sql`]); migrations are SQLite's, and PostgreSQL's
//! schema is derived from them. What a run writes to the log is the agent crate's (its
//! recorder); this crate keeps storage only.
//!
//! May depend on: kiln-core.

/// Declares test `$name` running `$body(&Db)` on a new SQLite file and (`#[ignore]`d without
/// a server, like the other peers' tests) on a new PostgreSQL database: one suite, two
/// databases.
#[cfg(test)]
macro_rules! both_databases {
    ($name:ident, $body:path) => {
        mod $name {
            #[test]
            fn sqlite() {
                let dir = tempfile::tempdir().expect("tempdir");
                $body(&crate::Db::open(&dir.path().join("k.db")).expect("db"));
            }

            #[test]
            #[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
            fn postgres() {
                let scratch = crate::scratch::Scratch::new().expect("a PostgreSQL database");
                let db = crate::Db::connect(scratch.url()).expect("connect");
                $body(&db);
            }
        }
    };
}

pub mod approvals;
mod commit;
mod error;
pub mod listen;
mod migrate;
mod postgres;
pub mod responses;
pub mod runs;
#[doc(hidden)]
pub mod scratch;
pub mod sessions;
pub mod sql;
mod sqlite;
pub mod store;
pub mod transfer;

pub use error::{DbError, MAX_OWED};
pub use postgres::Lease;
use postgres::PgDb;
use sql::lock;
pub use sql::{Arg, Job, Row, SqlError, Tx, Writer};
pub use sqlite::ConnGuard;
use sqlite::SqliteDb;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// The default database path of a workspace.
pub fn default_path(workspace: &Path) -> PathBuf {
    workspace
        .join(kiln_core::defaults::STATE_DIR)
        .join("kiln.db")
}

/// Whether `target` names a PostgreSQL database rather than an SQLite file.
pub fn is_postgres_url(target: &str) -> bool {
    target.starts_with("postgres://") || target.starts_with("postgresql://")
}

/// A database as shown in messages: an SQLite file's path, or a URL without its password.
pub fn shown_target(target: &str) -> String {
    if is_postgres_url(target) {
        postgres::shown_url(target)
    } else {
        target.to_string()
    }
}

/// Seconds since the epoch, as stored.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A submitted job's outcome, once committed ([`Db::submit`]).
pub struct Committed(oneshot::Receiver<Result<(), DbError>>);

impl Future for Committed {
    type Output = Result<(), DbError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| {
            // Every job taken is answered; a closed channel means its committer panicked.
            r.unwrap_or(Err(DbError::CommitterPanicked))
        })
    }
}

/// Which database holds the tables.
enum Engine {
    Sqlite(SqliteDb),
    Postgres(PgDb),
}

/// An open database: an SQLite file, or a PostgreSQL server shared with other processes.
pub struct Db {
    engine: Engine,
}

impl Db {
    /// Opens (creating and migrating) the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        Ok(Db {
            engine: Engine::Sqlite(SqliteDb::open(path)?),
        })
    }

    /// Opens the database `target` names: a `postgres://` URL (the password from
    /// `KILN_DB_PASSWORD` or `PGPASSWORD`), else an SQLite file's path.
    pub fn connect(target: &str) -> Result<Db, DbError> {
        if is_postgres_url(target) {
            Ok(Db {
                engine: Engine::Postgres(PgDb::open(target)?),
            })
        } else {
            Db::open(Path::new(target))
        }
    }

    /// Whether the tables are on a PostgreSQL server.
    pub fn is_postgres(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// Where the database lives: the SQLite file, or the URL without its password.
    pub fn path(&self) -> &Path {
        match &self.engine {
            Engine::Sqlite(db) => db.path(),
            Engine::Postgres(db) => Path::new(db.shown()),
        }
    }

    /// The SQLite connection, for one unit of work (`None` on PostgreSQL). Jobs queued
    /// meanwhile commit when it is let go.
    pub fn sqlite(&self) -> Option<ConnGuard<'_>> {
        match &self.engine {
            Engine::Sqlite(db) => Some(db.conn()),
            Engine::Postgres(_) => None,
        }
    }

    /// Names an error of this database.
    pub fn err(&self, e: SqlError) -> DbError {
        match &self.engine {
            Engine::Sqlite(db) => db.err(e),
            Engine::Postgres(db) => postgres::pg_error(db.shown(), e),
        }
    }

    /// Runs `f` in one transaction on this thread: committed when it returns `Ok`, rolled
    /// back otherwise.
    pub fn transaction<T>(
        &self,
        f: impl FnOnce(&mut dyn Tx) -> Result<T, SqlError>,
    ) -> Result<T, DbError> {
        match &self.engine {
            Engine::Sqlite(db) => db.transaction(f),
            Engine::Postgres(db) => db.transaction(f),
        }
    }

    /// The rows one statement selects (`?N` placeholders; see [`sql`]).
    pub fn query(&self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, DbError> {
        match &self.engine {
            Engine::Postgres(db) => db.run_one(sql, args, true).map(|(rows, _)| rows),
            Engine::Sqlite(db) => db.autocommit(|tx| tx.query(sql, args)),
        }
    }

    /// The first row one statement selects, if any.
    pub fn query_row(&self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// Runs one statement (a transaction of its own); how many rows it changed.
    pub fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        match &self.engine {
            Engine::Postgres(db) => db.run_one(sql, args, false).map(|(_, n)| n),
            Engine::Sqlite(db) => db.autocommit(|tx| tx.execute(sql, args)),
        }
    }

    /// Runs `job`'s statements in one transaction on this thread and commits them.
    pub fn write(
        &self,
        job: impl Fn(&mut dyn Writer) -> Result<(), SqlError>,
    ) -> Result<(), DbError> {
        match &self.engine {
            Engine::Sqlite(db) => db.write(&job),
            Engine::Postgres(db) => db.write(&job),
        }
    }

    /// Keeps `job`, whose commit failed, to commit again before the next writes, until it
    /// lands: a run's end written after the disk filled (or while PostgreSQL restarted)
    /// lands once it can, so the log and the run agree. At most [`MAX_OWED`] writes are
    /// kept; past that the newest is dropped (its run shows `interrupted` once its process
    /// is gone).
    pub fn owe(&self, job: Job) {
        let mut owed = lock(self.owed_list());
        if owed.len() < MAX_OWED {
            owed.push(job);
        } else {
            tracing::error!(
                "{}: {MAX_OWED} writes wait for room already; one more is dropped",
                self.path().display()
            );
        }
    }

    fn owed_list(&self) -> &std::sync::Mutex<Vec<Job>> {
        match &self.engine {
            Engine::Sqlite(db) => &db.owed,
            Engine::Postgres(db) => &db.shared().owed,
        }
    }

    /// Whether the last write failed (a full disk, a read-only file, the server gone): a
    /// run's start should then be committed, and the run refused if it cannot be, before
    /// anything runs.
    pub fn failing(&self) -> bool {
        match &self.engine {
            Engine::Sqlite(db) => db.failing.load(Ordering::Relaxed),
            Engine::Postgres(db) => db.shared().failing.load(Ordering::Relaxed),
        }
    }

    /// Writes still owed ([`Db::owe`]).
    pub fn owed(&self) -> usize {
        lock(self.owed_list()).len()
    }

    /// Queues `job` for a group commit; the answer resolves once the job has landed. Jobs
    /// land in the order they are submitted. On SQLite, when the connection is free, the
    /// queue commits now on this thread; on PostgreSQL, one writer task commits it.
    pub fn submit(&self, job: Job) -> Committed {
        Committed(match &self.engine {
            Engine::Sqlite(db) => db.submit(job),
            Engine::Postgres(db) => db.submit(job),
        })
    }

    /// Waits until no other process sharing this database runs a turn of session `key`, and
    /// holds it until the lease is dropped: on PostgreSQL, an advisory lock; on SQLite,
    /// nothing (`None`: the one process's own lock serializes its turns).
    pub async fn session_lease(&self, key: &str) -> Result<Option<Lease>, DbError> {
        match &self.engine {
            Engine::Sqlite(_) => Ok(None),
            Engine::Postgres(db) => db.lease(key).await.map(Some),
        }
    }

    /// Checks every page of an SQLite file (`PRAGMA quick_check`): a page damaged in the
    /// middle is found here, at a command's start, instead of by the run that first reads
    /// it. Its cost grows with the file: about 0.3 s for 300 MB (100,000 runs) from the page
    /// cache. PostgreSQL checks its own pages.
    pub fn quick_check(&self) -> Result<(), DbError> {
        match &self.engine {
            Engine::Sqlite(db) => db.quick_check(),
            Engine::Postgres(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn many_openers_of_a_new_database_migrate_it_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.db");
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let p = path.clone();
                std::thread::spawn(move || {
                    super::Db::open(&p).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        for o in openers {
            assert_eq!(o.join().expect("thread"), Ok(()));
        }
    }

    #[test]
    fn a_database_from_a_newer_kiln_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.db");
        drop(super::Db::open(&path).expect("create"));
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.pragma_update(None, "user_version", 99).expect("bump");
        drop(conn);
        let err = super::Db::open(&path).err().expect("refused").to_string();
        assert!(
            err.contains("new.db") && err.contains("schema version 99"),
            "{err}"
        );
        assert!(err.contains("upgrade kiln"), "{err}");
    }

    /// A database of many pages, closed (its WAL folded in), with one page in the middle
    /// overwritten by garbage.
    pub(crate) fn damaged_database(path: &std::path::Path) {
        let db = super::Db::open(path).expect("create");
        db.transaction(|tx| {
            for i in 0..2000 {
                tx.execute(
                    "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES('w', 'n', ?1, ?2, 0)",
                    &crate::args![format!("k{i}"), "v".repeat(200)],
                )?;
            }
            Ok(())
        })
        .expect("fill");
        drop(db);
        let len = std::fs::metadata(path).expect("size").len();
        let middle = (len / 2 / 4096) * 4096 + 100;
        use std::io::{Seek as _, Write as _};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        f.seek(std::io::SeekFrom::Start(middle)).expect("seek");
        f.write_all(&[0xA5; 2000]).expect("garbage");
    }

    #[test]
    fn a_page_damaged_in_the_middle_is_found_by_quick_check_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hurt.db");
        damaged_database(&path);
        let db = super::Db::open(&path).expect("the header is intact: it opens");
        let err = db.quick_check().expect_err("damage found");
        assert!(matches!(err, super::DbError::Damaged { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("hurt.db") && text.contains("is damaged"),
            "{text}"
        );
        assert!(
            text.contains("restore") && text.contains(".recover"),
            "{text}"
        );
        let fine = super::Db::open(&dir.path().join("fine.db")).expect("create");
        fine.quick_check().expect("an intact file passes");
    }
}
