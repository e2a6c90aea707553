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

use crate::sql::{Arg, Cell, Job, Row, SqlError, Tx, Writer};
use rusqlite::Connection;

/// Runs `batch` in one transaction; on any failure, each job again alone. One outcome per job.
pub(crate) fn commit_batch(conn: &Connection, batch: &[Job]) -> Vec<Result<(), SqlError>> {
    if batch.len() > 1 {
        let together = transaction(conn, |c| {
            let mut w = SqliteWriter(c);
            batch.iter().try_for_each(|job| job(&mut w))
        });
        if together.is_ok() {
            return batch.iter().map(|_| Ok(())).collect();
        }
    }
    batch
        .iter()
        .map(|job| transaction(conn, |c| job(&mut SqliteWriter(c))))
        .collect()
}

/// Runs `f` between BEGIN and COMMIT (cached statements: parsed once per connection), rolling
/// back on failure.
pub(crate) fn transaction(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    conn.prepare_cached("BEGIN")
        .and_then(|mut s| s.execute([]))
        .map_err(SqlError::from)
        .and_then(|_| f(conn))
        .and_then(|()| Ok(conn.prepare_cached("COMMIT")?.execute([]).map(drop)?))
        .inspect_err(|_| {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
        })
}

/// The statements of a job, run on an SQLite connection inside its transaction.
pub(crate) struct SqliteWriter<'a>(pub(crate) &'a Connection);

impl Writer for SqliteWriter<'_> {
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<(), SqlError> {
        self.0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(args.iter()))?;
        Ok(())
    }
}

impl Tx for SqliteWriter<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError> {
        let n = self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(args.iter()))?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError> {
        Ok(query(self.0, sql, args)?)
    }
}

/// The rows `sql` selects, as cells.
pub(crate) fn query(conn: &Connection, sql: &str, args: &[Arg<'_>]) -> rusqlite::Result<Vec<Row>> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare_cached(sql)?;
    let width = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut cells = Vec::with_capacity(width);
        for i in 0..width {
            cells.push(match r.get_ref(i)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(n) => Cell::Int(n),
                ValueRef::Real(f) => Cell::Real(f),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Cell::Text(String::from_utf8_lossy(t).into_owned())
                }
            });
        }
        out.push(Row(cells));
    }
    Ok(out)
}
