//! Group commit: the run log's writes from concurrent runs share a transaction (its locks,
//! its WAL frames, the pages they both touch) instead of taking turns at the connection.
//!
//! A job is queued, then its submitter tries the connection's lock. If it is free, the
//! submitter commits every job waiting, its own and others', in one transaction, on its own
//! thread (no hand-off: a lone run commits in place, as it always did). If it is held, the
//! submitter does not wait: whoever holds it commits the queue before letting go (see
//! `ConnGuard`), and the job's `Committed` resolves then.
//!
//! A job that fails rolls its batch back; each job of the batch then runs again in a
//! transaction of its own, so one job's failure stays its own and the others still land.
//! Jobs land in the order they were queued.

use rusqlite::Connection;

/// A unit of work for one transaction. It may run twice (again alone, after its batch rolled
/// back), so it writes only what it owns.
pub type Job = Box<dyn Fn(&Connection) -> rusqlite::Result<()> + Send>;

/// Jobs committed together at most: bounds how long one holder commits for others.
pub(crate) const MAX_BATCH: usize = 128;

/// Runs `batch` in one transaction; on any failure, each job again alone. One outcome per job.
pub(crate) fn commit_batch(conn: &Connection, batch: &[Job]) -> Vec<rusqlite::Result<()>> {
    if batch.len() > 1 {
        let together = transaction(conn, |c| batch.iter().try_for_each(|job| job(c)));
        if together.is_ok() {
            return batch.iter().map(|_| Ok(())).collect();
        }
    }
    batch.iter().map(|job| transaction(conn, job)).collect()
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
