//! The embedded engine: one SQLite file, one connection per process behind a mutex, WAL, a
//! busy timeout for other processes, group commit of the run log's writes.

use crate::commit::{self, SqliteWriter, query};
use crate::error::DbError;
use crate::migrate;
use crate::sql::{Job, SqlError, Tx, Writer, lock};
use rusqlite::Connection;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Whether SQLite says the file is damaged rather than busy or full.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// An SQLite error on the file at `path`: [`DbError::Damaged`] when it says the file is damaged.
pub(crate) fn sqlite_error(path: &Path, source: rusqlite::Error) -> DbError {
    let path = path.display().to_string();
    if is_damage(&source) {
        DbError::Damaged {
            path,
            detail: source.to_string(),
        }
    } else {
        DbError::Sqlite { path, source }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A job waiting for a group commit, and where its outcome goes.
struct Queued {
    job: Job,
    done: oneshot::Sender<Result<(), DbError>>,
}

/// The WAL pages after which a commit checkpoints them into the database.
const WAL_PAGES: i64 = 4000;

/// An open SQLite database. One connection per process, shared behind a mutex: writes from
/// many runs are serialized here (the run log's through group commit, [`SqliteDb::submit`]),
/// and other processes wait on the busy timeout instead of failing.
pub(crate) struct SqliteDb {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Jobs waiting for a commit: whoever next holds the connection commits them.
    queue: Mutex<VecDeque<Queued>>,
    /// Writes that failed and must still land (a run's end, after a full disk): tried again,
    /// oldest first, whenever the connection is next let go.
    pub(crate) owed: Mutex<Vec<Job>>,
    /// Whether the last write failed (cleared by the next that lands).
    pub(crate) failing: AtomicBool,
}

/// The connection, held for one unit of work; letting go commits the jobs queued meanwhile.
pub struct ConnGuard<'a> {
    db: &'a SqliteDb,
    conn: Option<MutexGuard<'a, Connection>>,
}

impl std::ops::Deref for ConnGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Present from construction until drop.
        self.conn.as_deref().expect("held connection")
    }
}

impl std::ops::DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_deref_mut().expect("held connection")
    }
}

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        drop(self.conn.take());
        self.db.commit_queued();
    }
}

impl SqliteDb {
    /// Opens (creating and migrating) the database at `path`.
    pub(crate) fn open(path: &Path) -> Result<SqliteDb, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| DbError::Folder {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        // Switching a new file to WAL takes a lock the busy handler does not wait for, so
        // several processes opening it at once retry for a while.
        let mut attempt = 0;
        let conn = loop {
            match Self::connect(path) {
                Ok((_, found)) if found > migrate::KNOWN => {
                    return Err(DbError::NewerSchema {
                        path: shown,
                        found,
                        known: migrate::KNOWN,
                    });
                }
                Ok((c, _)) => break c,
                Err(e) if attempt < 100 && is_busy(&e) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(sqlite_error(path, e)),
            }
        };
        Ok(SqliteDb {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            queue: Mutex::new(VecDeque::new()),
            owed: Mutex::new(Vec::new()),
            failing: AtomicBool::new(false),
        })
    }

    /// The connection, and the schema version the file had before it was brought up to date.
    fn connect(path: &Path) -> rusqlite::Result<(Connection, usize)> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(15))?;
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Checkpoint every 4,000 pages (16 MiB of WAL at the default 4 KiB pages) rather than
        // SQLite's 1,000 (a checkpoint then copies more at once, under the connection): each
        // checkpoint syncs both files, and a page the runs keep rewriting (the newest rows'
        // leaves) is copied into the database once per checkpoint, not once per 1,000 pages.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_PAGES)?;
        // A WAL that a busy moment let grow is cut back to this after the next checkpoint
        // (SQLite otherwise keeps the file at its largest): a little over the checkpoint's
        // size, so the WAL is not cut and grown again every time.
        conn.pragma_update(None, "journal_size_limit", (WAL_PAGES + 1024) * 4096)?;
        let found = migrate::run(&mut conn)?;
        Ok((conn, found))
    }

    /// Where the database lives.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for one unit of work. Jobs queued meanwhile commit when it is let go.
    pub(crate) fn conn(&self) -> ConnGuard<'_> {
        ConnGuard {
            db: self,
            conn: Some(lock(&self.conn)),
        }
    }

    /// An error of this file, named.
    pub(crate) fn err(&self, e: SqlError) -> DbError {
        match e {
            SqlError::Sqlite(source) => sqlite_error(&self.path, source),
            other => DbError::Corrupt(other.to_string()),
        }
    }

    /// Runs `job` in one transaction on this thread and commits it.
    pub(crate) fn write(
        &self,
        job: &dyn Fn(&mut dyn Writer) -> Result<(), SqlError>,
    ) -> Result<(), DbError> {
        let done = commit::transaction(&self.conn(), |c| job(&mut SqliteWriter(c)));
        self.failing.store(done.is_err(), Ordering::Relaxed);
        done.map_err(|e| self.err(e))
    }

    /// Runs `f` in one transaction on this thread: committed when it returns `Ok`.
    pub(crate) fn transaction<T>(
        &self,
        f: impl FnOnce(&mut dyn Tx) -> Result<T, SqlError>,
    ) -> Result<T, DbError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction()
            .map_err(|e| self.err(SqlError::Sqlite(e)))?;
        let out = f(&mut SqliteWriter(&tx)).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(SqlError::Sqlite(e)))?;
        Ok(out)
    }

    /// Runs `f` on the connection, each statement committed on its own.
    pub(crate) fn autocommit<T>(
        &self,
        f: impl FnOnce(&mut dyn Tx) -> Result<T, SqlError>,
    ) -> Result<T, DbError> {
        f(&mut SqliteWriter(&self.conn())).map_err(|e| self.err(e))
    }

    /// Commits the owed writes that land now, in order, each alone; the first that still
    /// fails and those after it stay owed (a run's end never lands before its start).
    fn settle_owed(&self, conn: &Connection) {
        let mut owed = lock(&self.owed);
        if owed.is_empty() {
            return;
        }
        let mut landed = 0;
        for job in owed.iter() {
            if let Err(e) = commit::transaction(conn, |c| job(&mut SqliteWriter(c))) {
                tracing::debug!("an owed write to {} failed again: {e}", self.path.display());
                break;
            }
            landed += 1;
        }
        owed.drain(..landed);
        self.failing.store(!owed.is_empty(), Ordering::Relaxed);
    }

    /// Queues `job` for a group commit and, if the connection is free, commits the queue now
    /// on this thread; the answer resolves once the job has landed. Jobs land in the order
    /// they are submitted.
    pub(crate) fn submit(&self, job: Job) -> oneshot::Receiver<Result<(), DbError>> {
        let (done, rx) = oneshot::channel();
        lock(&self.queue).push_back(Queued { job, done });
        self.commit_queued();
        rx
    }

    /// Commits the queued jobs, batch by batch, unless another holds the connection (whoever
    /// does commits them when letting go).
    fn commit_queued(&self) {
        loop {
            let conn = match self.conn.try_lock() {
                Ok(conn) => conn,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            };
            self.settle_owed(&conn);
            let batch: Vec<Queued> = {
                let mut queue = lock(&self.queue);
                let n = queue.len().min(crate::sql::MAX_BATCH);
                queue.drain(..n).collect()
            };
            if batch.is_empty() {
                drop(conn);
                // A job queued after the drain and before the release found the lock held:
                // it is this holder's to commit.
                if lock(&self.queue).is_empty() {
                    return;
                }
                continue;
            }
            let (jobs, dones): (Vec<Job>, Vec<_>) =
                batch.into_iter().map(|q| (q.job, q.done)).unzip();
            let results = commit::commit_batch(&conn, &jobs);
            drop(conn);
            let failed = results.iter().any(Result::is_err);
            self.failing.store(failed, Ordering::Relaxed);
            for (done, r) in dones.into_iter().zip(results) {
                let _ = done.send(r.map_err(|e| self.err(e)));
            }
        }
    }

    /// Checks every page of the file (`PRAGMA quick_check`).
    pub(crate) fn quick_check(&self) -> Result<(), DbError> {
        let conn = self.conn();
        let found = query(&conn, "PRAGMA quick_check(5)", &[])
            .map_err(|e| self.err(SqlError::Sqlite(e)))?;
        let found: Vec<String> = found.iter().map(|r| r.str(0)).collect();
        match found.as_slice() {
            [ok] if ok == "ok" => Ok(()),
            faults => Err(DbError::Damaged {
                path: self.path.display().to_string(),
                detail: faults.join("; "),
            }),
        }
    }
}
