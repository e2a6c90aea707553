//! kiln's storage: the embedded SQLite database (`.kiln/kiln.db` in the workspace) holding the
//! run log's tables, sessions and the key-value store ([`store::WorkspaceStore`], what
//! `store_*` reaches). WAL mode, a busy timeout for other processes, migrations versioned in
//! code. What a run writes to the log is the agent crate's (its recorder); this crate keeps
//! storage only.
//!
//! May depend on: kiln-core.

mod commit;
mod migrate;
pub mod responses;
pub mod runs;
pub mod sessions;
pub mod store;

pub use commit::Job;
use rusqlite::Connection;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::sync::oneshot;

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
    /// The session went on (a run added to it) while it was being compacted.
    #[error(
        "session \"{0}\" changed while it was being compacted (a run added to it): nothing was replaced; compact it again"
    )]
    SessionChanged(String),
    /// A newer kiln wrote the database; this one does not know its tables.
    #[error(
        "database {path} has schema version {found}, newer than this kiln knows ({known}): upgrade kiln, or pass --db to use another file"
    )]
    NewerSchema {
        /// The database file.
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

/// Writes kept to commit again at most ([`Db::owe`]).
pub const MAX_OWED: usize = 10_000;

impl DbError {
    /// Whether the same write may land later: the disk was full, the file read-only, busy or
    /// failing to write (not a damaged file or a write this kiln got wrong).
    pub fn may_land_later(&self) -> bool {
        use rusqlite::ErrorCode as C;
        let DbError::Sqlite { source, .. } = self else {
            return false;
        };
        matches!(
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
        )
    }
}

/// The default database path of a workspace.
pub fn default_path(workspace: &Path) -> PathBuf {
    workspace
        .join(kiln_core::defaults::STATE_DIR)
        .join("kiln.db")
}

/// Seconds since the epoch, as stored.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Whether SQLite says the file is damaged rather than busy or full.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// An SQLite error on the file at `path`: [`DbError::Damaged`] when it says the file is damaged.
fn sqlite_error(path: &Path, source: rusqlite::Error) -> DbError {
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

/// A lock that a panicking holder did not poison for good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A job waiting for a group commit, and where its outcome goes.
struct Queued {
    job: Job,
    done: oneshot::Sender<Result<(), DbError>>,
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

/// An open database. One connection per process, shared behind a mutex: writes from many runs
/// are serialized here (the run log's through group commit, [`Db::submit`]), and other
/// processes wait on the busy timeout instead of failing.
pub struct Db {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Jobs waiting for a commit: whoever next holds the connection commits them.
    queue: Mutex<VecDeque<Queued>>,
    /// Writes that failed and must still land (a run's end, after a full disk): tried again,
    /// oldest first, whenever the connection is next let go.
    owed: Mutex<Vec<Job>>,
    /// Whether the last write failed (cleared by the next that lands).
    failing: AtomicBool,
}

/// The connection, held for one unit of work; letting go commits the jobs queued meanwhile.
pub struct ConnGuard<'a> {
    db: &'a Db,
    conn: Option<MutexGuard<'a, Connection>>,
}

impl Deref for ConnGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Present from construction until drop.
        self.conn.as_deref().expect("held connection")
    }
}

impl DerefMut for ConnGuard<'_> {
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
        Ok(Db {
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
        // A WAL that a busy moment let grow is cut back to this after the next checkpoint
        // (SQLite otherwise keeps the file at its largest).
        conn.pragma_update(None, "journal_size_limit", 8i64 << 20)?;
        let found = migrate::run(&mut conn)?;
        Ok((conn, found))
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for one unit of work. Jobs queued meanwhile commit when it is let go.
    pub fn conn(&self) -> ConnGuard<'_> {
        ConnGuard {
            db: self,
            conn: Some(lock(&self.conn)),
        }
    }

    /// Runs `f` in one transaction on this thread and commits it.
    pub fn write(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    ) -> Result<(), DbError> {
        let done = commit::transaction(&self.conn(), f);
        self.failing.store(done.is_err(), Ordering::Relaxed);
        done.map_err(|e| self.err(e))
    }

    /// Keeps `job`, whose commit failed, to commit again when the connection is next let go
    /// (by any write or read of this process), until it lands: a run's end written after the
    /// disk filled lands once there is room, so the log and the run agree.
    /// At most [`MAX_OWED`] writes are kept; past that the newest is dropped (its run shows
    /// `interrupted` once its process is gone).
    pub fn owe(&self, job: Job) {
        let mut owed = lock(&self.owed);
        if owed.len() < MAX_OWED {
            owed.push(job);
        } else {
            tracing::error!(
                "{}: {MAX_OWED} writes wait for room already; one more is dropped",
                self.path.display()
            );
        }
    }

    /// Whether the last write failed (a full disk, a read-only file): a run's start should
    /// then be committed, and the run refused if it cannot be, before anything runs.
    pub fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// Writes still owed ([`Db::owe`]).
    pub fn owed(&self) -> usize {
        lock(&self.owed).len()
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
            if let Err(e) = commit::transaction(conn, job) {
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
    pub fn submit(&self, job: Job) -> Committed {
        let (done, rx) = oneshot::channel();
        lock(&self.queue).push_back(Queued { job, done });
        self.commit_queued();
        Committed(rx)
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
                let n = queue.len().min(commit::MAX_BATCH);
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

    /// Wraps an SQLite error with the path ([`DbError::Damaged`] when the file is damaged).
    pub fn err(&self, source: rusqlite::Error) -> DbError {
        sqlite_error(&self.path, source)
    }

    /// Checks every page of the file (`PRAGMA quick_check`): a page damaged in the middle is
    /// found here, at a command's start, instead of by the run that first reads it. Its cost
    /// grows with the file: about 0.3 s for 300 MB (100,000 runs) from the page cache.
    pub fn quick_check(&self) -> Result<(), DbError> {
        let conn = self.conn();
        let found: Vec<String> = conn
            .prepare("PRAGMA quick_check(5)")
            .and_then(|mut s| {
                s.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err(e))?;
        match found.as_slice() {
            [ok] if ok == "ok" => Ok(()),
            faults => Err(DbError::Damaged {
                path: self.path.display().to_string(),
                detail: faults.join("; "),
            }),
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
        db.write(|c| {
            for i in 0..2000 {
                c.execute(
                    "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES('w', 'n', ?1, ?2, 0)",
                    rusqlite::params![format!("k{i}"), "v".repeat(200)],
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
