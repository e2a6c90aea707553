//! Group commit: the run log's writes from concurrent runs share a transaction (its locks,
//! its WAL frames, the pages they both touch) instead of taking turns at the connection.
//!
//! A job is queued, then its submitter tries the connection's lock. If it is free, the
//! submitter commits every job waiting, its own and others', in one transaction, on its own
//! thread (no hand-off: a lone run commits in place, as it always did). If it is held, the
//! submitter does not wait: whoever holds it commits the queue before letting go (see
//! [`ConnGuard`](crate::ConnGuard)), and the job's [`Committed`] resolves then.
//!
//! A job that fails rolls its batch back; each job of the batch then runs again in a
//! transaction of its own, so one job's failure stays its own and the others still land.
//! Jobs land in the order they were queued.

use crate::DbError;
use rusqlite::Connection;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// A unit of work for one transaction. It may run twice (again alone, after its batch rolled
/// back), so it writes only what it owns.
pub type Job = Box<dyn Fn(&Connection) -> rusqlite::Result<()> + Send>;

/// Jobs committed together at most: bounds how long one holder commits for others.
pub(crate) const MAX_BATCH: usize = 128;

/// A job waiting for a commit, and where its outcome goes.
pub(crate) struct Queued {
    pub(crate) job: Job,
    pub(crate) done: oneshot::Sender<Result<(), DbError>>,
}

/// A submitted job's outcome, once committed.
pub struct Committed(oneshot::Receiver<Result<(), DbError>>);

impl Committed {
    /// The outcome of a queued job, whose sender is `done`.
    pub(crate) fn queued(job: Job) -> (Queued, Committed) {
        let (done, rx) = oneshot::channel();
        (Queued { job, done }, Committed(rx))
    }
}

impl Future for Committed {
    type Output = Result<(), DbError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| {
            // Every job taken is answered; a closed channel means its committer panicked.
            r.unwrap_or(Err(DbError::CommitterPanicked))
        })
    }
}

/// Runs `batch` in one transaction; on any failure, each job again alone.
pub(crate) fn commit_batch(conn: &Connection, batch: &[Queued]) -> Vec<rusqlite::Result<()>> {
    if batch.len() > 1 {
        let together = transaction(conn, |c| batch.iter().try_for_each(|q| (q.job)(c)));
        if together.is_ok() {
            return batch.iter().map(|_| Ok(())).collect();
        }
    }
    batch.iter().map(|q| transaction(conn, &q.job)).collect()
}

/// Runs `f` between BEGIN and COMMIT (cached statements: parsed once per connection), rolling
/// back on failure.
pub(crate) fn transaction(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    conn.prepare_cached("BEGIN")
        .and_then(|mut s| s.execute([]))
        .and_then(|_| f(conn))
        .and_then(|()| conn.prepare_cached("COMMIT")?.execute([]).map(drop))
        .inspect_err(|_| {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
        })
}

#[cfg(test)]
mod tests {
    use crate::Db;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn count(db: &Db) -> i64 {
        db.conn()
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("count")
    }

    fn db() -> (tempfile::TempDir, Arc<Db>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Arc::new(Db::open(&dir.path().join("k.db")).expect("db"));
        db.conn()
            .execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            .expect("table");
        (dir, db)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_jobs_all_land_and_a_failing_one_fails_alone() {
        let (_dir, db) = db();
        let jobs: Vec<_> = (0..200i64)
            .map(|i| {
                db.submit(Box::new(move |c| {
                    // Job 57 breaks a constraint: only it may fail.
                    let v = if i == 57 {
                        None
                    } else {
                        Some(format!("row {i}"))
                    };
                    c.prepare_cached("INSERT INTO t(id, v) VALUES(?1, ?2)")?
                        .execute(rusqlite::params![i, v])
                        .map(drop)
                }))
            })
            .collect();
        let mut failed = Vec::new();
        for (i, j) in jobs.into_iter().enumerate() {
            if let Err(e) = j.await {
                assert!(e.to_string().contains("k.db"), "{e}");
                failed.push(i);
            }
        }
        assert_eq!(failed, [57]);
        assert_eq!(count(&db), 199);
    }

    #[tokio::test]
    async fn jobs_queued_while_a_reader_holds_the_connection_commit_together_when_it_lets_go() {
        let (_dir, db) = db();
        let reader = db.conn();
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..50).map(|_| AtomicUsize::new(0)).collect());
        let waiting: Vec<_> = (0..50i64)
            .map(|i| {
                let runs = runs.clone();
                db.submit(Box::new(move |c| {
                    runs[i as usize].fetch_add(1, Ordering::SeqCst);
                    let v = (i != 20).then_some("x");
                    c.execute(
                        "INSERT INTO t(id, v) VALUES(?1, ?2)",
                        rusqlite::params![i, v],
                    )
                    .map(drop)
                }))
            })
            .collect();
        // Nothing could commit while the reader held the connection.
        assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 0));
        drop(reader);
        let mut failed = Vec::new();
        for (i, w) in waiting.into_iter().enumerate() {
            if w.await.is_err() {
                failed.push(i);
            }
        }
        assert_eq!(failed, [20]);
        assert_eq!(count(&db), 49);
        // They ran as one batch (which job 20 rolled back), then each alone: twice each, up to
        // job 20 (the batch stopped there), once each after it.
        let ran: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        assert!(ran[..=20].iter().all(|&n| n == 2), "{ran:?}");
        assert!(ran[21..].iter().all(|&n| n == 1), "{ran:?}");
    }
}
