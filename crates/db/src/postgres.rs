//! The shared engine: a PostgreSQL server that several kiln processes (on several machines)
//! use at once, through a pool of connections (deadpool-postgres over tokio-postgres).
//!
//! The database's callers are synchronous (a tool's `store_get`, `kiln logs`) as well as
//! asynchronous (the run log's commits), and may be on any thread, a tokio worker included.
//! So the engine owns a small runtime of its own: connections live there, a synchronous
//! call waits on a channel for its answer, and the run log's writes go to one writer task
//! that commits what has queued up in one transaction (group commit, as on SQLite), in the
//! order they were submitted.

pub(crate) mod tls;

use crate::error::DbError;
use crate::migrate;
use crate::sql::{Arg, Cell, Job, MAX_BATCH, Row, SqlError, Tx, Writer, lock, postgres_text};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use std::future::{Future, IntoFuture as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tls::Link;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::{ToSql, Type};

/// Connections kept at most by one process.
const POOL_SIZE: usize = 16;

/// The key of the advisory lock under which one process migrates the schema.
const MIGRATION_LOCK: i64 = 0x6b69_6c6e; // "kiln"

/// A job and where its outcome goes.
type Queued = (Job, oneshot::Sender<Result<(), DbError>>);

/// An open PostgreSQL database.
pub(crate) struct PgDb {
    /// How to connect (a listener's connection is its own, outside the pool).
    pub(crate) config: tokio_postgres::Config,
    /// In the clear, or over TLS.
    pub(crate) link: Link,
    pool: Pool,
    /// The runtime the connections live on (taken on drop: it may be dropped on a worker).
    runtime: Option<tokio::runtime::Runtime>,
    /// The URL as shown: without its password.
    shown: String,
    /// The writer task's queue.
    writes: mpsc::UnboundedSender<Queued>,
    /// State the writer task shares: writes owed, whether the last failed.
    shared: Arc<Shared>,
}

/// What the writer task and the callers share.
pub(crate) struct Shared {
    pub(crate) owed: Mutex<Vec<Job>>,
    pub(crate) failing: AtomicBool,
    shown: String,
}

impl Drop for PgDb {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// `url` without its password, to name the database in messages.
pub(crate) fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some((auth, host)) => (Some(auth), host),
        None => (None, rest),
    };
    match auth.map(|a| a.split_once(':').map_or(a, |(user, _)| user)) {
        Some(user) => format!("{scheme}://{user}@{host}"),
        None => format!("{scheme}://{host}"),
    }
}

/// An error of the database at `shown`.
pub(crate) fn pg_error(shown: &str, source: SqlError) -> DbError {
    DbError::Postgres {
        url: shown.to_string(),
        source,
    }
}

impl PgDb {
    /// Connects to the database at `url` (`postgres://USER@HOST:PORT/NAME`; the password from
    /// `KILN_DB_PASSWORD`, else `PGPASSWORD`, when the URL has none) and brings its schema up
    /// to date.
    pub(crate) fn open(url: &str) -> Result<PgDb, DbError> {
        let shown = shown_url(url);
        let bad = |detail: String| DbError::BadUrl {
            url: shown.clone(),
            detail,
        };
        let (url, root) = tls::options(url);
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| bad(format!("{e}")))?;
        if config.get_password().is_none()
            && let Some(pw) = std::env::var("KILN_DB_PASSWORD")
                .ok()
                .or_else(|| std::env::var("PGPASSWORD").ok())
        {
            config.password(pw);
        }
        let link = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => {
                Link::Tls(tls::connector(root.as_deref()).map_err(|e| bad(format!("TLS: {e}")))?)
            }
            _ => Link::Plain,
        };
        config.application_name("kiln");
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &link {
            Link::Plain => Manager::from_config(config.clone(), tokio_postgres::NoTls, recycling()),
            Link::Tls(tls) => Manager::from_config(config.clone(), tls.clone(), recycling()),
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| bad(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kiln-postgres")
            .enable_all()
            .build()
            .map_err(|e| bad(format!("cannot start its connections' threads: {e}")))?;
        let shared = Arc::new(Shared {
            owed: Mutex::new(Vec::new()),
            failing: AtomicBool::new(false),
            shown: shown.clone(),
        });
        let (writes, queue) = mpsc::unbounded_channel();
        runtime.spawn(writer(pool.clone(), queue, shared.clone()));
        let db = PgDb {
            config,
            link,
            pool,
            runtime: Some(runtime),
            shown,
            writes,
            shared,
        };
        db.migrate()?;
        if let Some(rt) = &db.runtime {
            rt.spawn(heartbeat(db.pool.clone()));
        }
        Ok(db)
    }

    /// The database as shown in messages (no password).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The engine's runtime, unless the database is closing.
    pub(crate) fn runtime(&self) -> Option<&tokio::runtime::Runtime> {
        self.runtime.as_ref()
    }

    /// The pool of connections.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// What the writer task shares with callers.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Runs `fut` on the engine's runtime and waits for it, from any thread.
    fn block<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if let Some(rt) = &self.runtime {
            rt.spawn(async move {
                let _ = tx.send(fut.await);
            });
        }
        // The task always answers unless the runtime is gone, which only drop does.
        rx.recv().expect("the database's runtime answers")
    }

    /// A pooled connection.
    fn client(&self) -> Result<Object, DbError> {
        let pool = self.pool.clone();
        self.block(async move { pool.get().await })
            .map_err(|e| pg_error(&self.shown, SqlError::pool(&e)))
    }

    /// Brings the schema up to date under an advisory lock (servers starting together
    /// migrate once); a schema newer than this kiln's is refused.
    fn migrate(&self) -> Result<(), DbError> {
        let mut client = self.client()?;
        let shown = self.shown.clone();
        let found = futures_executor::block_on(async {
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute("CREATE TABLE IF NOT EXISTS kiln_schema(version BIGINT NOT NULL)")
                .await?;
            let found = tx
                .query_opt("SELECT version FROM kiln_schema", &[])
                .await?
                .map_or(0, |r| r.get::<_, i64>(0).max(0) as usize);
            if found <= migrate::KNOWN {
                for step in migrate::postgres_steps(found) {
                    tx.batch_execute(&step).await?;
                }
                tx.execute("DELETE FROM kiln_schema", &[]).await?;
                tx.execute(
                    "INSERT INTO kiln_schema(version) VALUES($1)",
                    &[&(migrate::KNOWN as i64)],
                )
                .await?;
            }
            tx.commit().await?;
            Ok::<_, tokio_postgres::Error>(found)
        })
        .map_err(|e| pg_error(&shown, e.into()))?;
        if found > migrate::KNOWN {
            return Err(DbError::NewerSchema {
                path: shown,
                found,
                known: migrate::KNOWN,
            });
        }
        Ok(())
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, else rolled back.
    pub(crate) fn transaction<T>(
        &self,
        f: impl FnOnce(&mut dyn Tx) -> Result<T, SqlError>,
    ) -> Result<T, DbError> {
        let client = self.client()?;
        let mut tx = PgTx { client: &client };
        let out = tx
            .execute("BEGIN", &[])
            .and_then(|_| f(&mut tx))
            .and_then(|out| tx.execute("COMMIT", &[]).map(|_| out));
        if out.is_err() {
            let _ = futures_executor::block_on(client.batch_execute("ROLLBACK"));
        }
        out.map_err(|e| pg_error(&self.shown, e))
    }

    /// The rows one statement selects (`query`) or how many it changed, in one trip to the
    /// engine's runtime: a pooled connection, the cached statement, its answer.
    pub(crate) fn run_one(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        query: bool,
    ) -> Result<(Vec<Row>, u64), DbError> {
        let (pool, text) = (self.pool.clone(), postgres_text(sql));
        let owned: Vec<Arg<'static>> = args.iter().cloned().map(Arg::into_owned).collect();
        self.block(async move {
            let client = pool.get().await.map_err(|e| SqlError::pool(&e))?;
            let stmt = client.prepare_cached(&text).await?;
            if query {
                let rows = client.query(&stmt, &params(&owned)).await?;
                Ok((rows.iter().map(row_of).collect::<Result<_, _>>()?, 0))
            } else {
                Ok((Vec::new(), client.execute(&stmt, &params(&owned)).await?))
            }
        })
        .map_err(|e: SqlError| pg_error(&self.shown, e))
    }

    /// Queues `job` for the writer task; the answer resolves once it has landed.
    pub(crate) fn submit(&self, job: Job) -> oneshot::Receiver<Result<(), DbError>> {
        let (done, rx) = oneshot::channel();
        if let Err(mpsc::error::SendError((_, done))) = self.writes.send((job, done)) {
            let _ = done.send(Err(pg_error(
                &self.shown,
                SqlError::Pool("the database's writer stopped".into()),
            )));
        }
        rx
    }

    /// Runs `job` in one transaction and waits for it.
    pub(crate) fn write(
        &self,
        job: &dyn Fn(&mut dyn Writer) -> Result<(), SqlError>,
    ) -> Result<(), DbError> {
        let statements = collect(job).map_err(|e| pg_error(&self.shown, e))?;
        let client = self.client()?;
        let done = futures_executor::block_on(commit(&client, &[statements]));
        self.shared.failing.store(done.is_err(), Ordering::Relaxed);
        done.map_err(|e| pg_error(&self.shown, e))
    }
}

/// A transaction on one pooled connection, each statement waited for on the caller's thread
/// (the connection's I/O runs on the engine's runtime; the client only exchanges messages).
struct PgTx<'a> {
    client: &'a Object,
}

impl Tx for PgTx<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError> {
        let text = postgres_text(sql);
        futures_executor::block_on(async {
            let stmt = self.client.prepare_cached(&text).await?;
            Ok(self.client.execute(&stmt, &params(args)).await?)
        })
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError> {
        let text = postgres_text(sql);
        futures_executor::block_on(async {
            let stmt = self.client.prepare_cached(&text).await?;
            let rows = self.client.query(&stmt, &params(args)).await?;
            rows.iter().map(row_of).collect()
        })
    }
}

fn params<'a>(args: &'a [Arg<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

/// A session's turn held across every process sharing the database: PostgreSQL's advisory
/// lock on the session's key, on a connection of its own. Let go on drop (the connection is
/// closed instead if the unlock cannot be sent, which lets go all the same).
pub struct Lease {
    client: Option<Object>,
    runtime: tokio::runtime::Handle,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            self.runtime.spawn(async move {
                if client
                    .batch_execute("SELECT pg_advisory_unlock_all()")
                    .await
                    .is_err()
                {
                    drop(Object::take(client));
                }
            });
        }
    }
}

impl PgDb {
    /// Waits for session `key`'s lease: no other process sharing the database runs a turn
    /// of it meanwhile.
    pub(crate) async fn lease(&self, key: &str) -> Result<Lease, DbError> {
        let Some(runtime) = self.runtime.as_ref().map(|rt| rt.handle().clone()) else {
            return Err(pg_error(
                &self.shown,
                SqlError::Pool("the database is closing".into()),
            ));
        };
        let (pool, key) = (self.pool.clone(), key.to_string());
        let handle = runtime.clone();
        // On the engine's runtime: a request that stops waiting leaves the task to take the
        // lock and let it go at once (its lease dropped with the task's output).
        let taken = runtime.spawn(async move {
            let client = pool.get().await.map_err(|e| SqlError::pool(&e))?;
            client
                .execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&key])
                .await?;
            Ok::<_, SqlError>(Lease {
                client: Some(client),
                runtime: handle,
            })
        });
        match taken.await {
            Ok(lease) => lease.map_err(|e| pg_error(&self.shown, e)),
            Err(e) => Err(pg_error(&self.shown, SqlError::Pool(e.to_string()))),
        }
    }
}

/// How often a process sharing a PostgreSQL database says it is alive.
pub const BEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// Says this process is alive every [`BEAT`] while the database is open, so the servers
/// sharing it tell a run on a machine that went silent from one still going.
async fn heartbeat(pool: Pool) {
    let sql = postgres_text(
        "INSERT INTO processes(owner, seen_at) VALUES(?1, ?2)
         ON CONFLICT(owner) DO UPDATE SET seen_at = excluded.seen_at",
    );
    let owner = kiln_core::context::this_process();
    let mut every = tokio::time::interval(BEAT);
    loop {
        every.tick().await;
        let Ok(client) = pool.get().await else {
            continue;
        };
        // A missed beat is told by the next: six may be missed before anyone judges.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let _ = client.execute(&sql, &[&owner, &now]).await;
    }
}

/// A PostgreSQL row as cells.
fn row_of(r: &tokio_postgres::Row) -> Result<Row, SqlError> {
    let mut cells = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let cell = match *col.type_() {
            Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(Cell::Int),
            Type::INT4 => r.try_get::<_, Option<i32>>(i)?.map(|n| Cell::Int(n.into())),
            Type::INT2 => r.try_get::<_, Option<i16>>(i)?.map(|n| Cell::Int(n.into())),
            Type::BOOL => r
                .try_get::<_, Option<bool>>(i)?
                .map(|b| Cell::Int(b.into())),
            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i)?.map(Cell::Real),
            Type::FLOAT4 => r
                .try_get::<_, Option<f32>>(i)?
                .map(|f| Cell::Real(f.into())),
            _ => r.try_get::<_, Option<String>>(i)?.map(Cell::Text),
        };
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

/// A job's statements, with their values owned, ready to send.
type Statements = Vec<(&'static str, Vec<Arg<'static>>)>;

/// Records a job's statements instead of running them.
struct Collector(Statements);

impl Writer for Collector {
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<(), SqlError> {
        self.0
            .push((sql, args.iter().cloned().map(Arg::into_owned).collect()));
        Ok(())
    }
}

fn collect(job: &dyn Fn(&mut dyn Writer) -> Result<(), SqlError>) -> Result<Statements, SqlError> {
    let mut c = Collector(Vec::new());
    job(&mut c)?;
    Ok(c.0)
}

/// Commits the jobs' statements in one transaction, each statement sent without waiting for
/// the one before (pipelined), in order.
async fn commit(client: &Object, jobs: &[Statements]) -> Result<(), SqlError> {
    client.batch_execute("BEGIN").await?;
    let run = async {
        let mut prepared = Vec::new();
        for (sql, _) in jobs.iter().flatten() {
            prepared.push(client.prepare_cached(&postgres_text(sql)).await?);
        }
        let bound: Vec<_> = jobs
            .iter()
            .flatten()
            .map(|(_, args)| params(args))
            .collect();
        let sends = prepared
            .iter()
            .zip(&bound)
            .map(|(stmt, args)| client.execute(stmt, args).into_future());
        futures_util::future::try_join_all(sends).await?;
        client.batch_execute("COMMIT").await
    };
    match run.await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e.into())
        }
    }
}

/// The writer task: commits what has queued up, in order, in one transaction (each job alone
/// again when the batch fails, so one job's failure stays its own); owed writes first.
async fn writer(pool: Pool, mut queue: mpsc::UnboundedReceiver<Queued>, shared: Arc<Shared>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let client = match pool.get().await {
            Ok(client) => client,
            Err(e) => {
                shared.failing.store(true, Ordering::Relaxed);
                for (_, done) in batch {
                    let _ = done.send(Err(pg_error(&shared.shown, SqlError::pool(&e))));
                }
                continue;
            }
        };
        settle_owed(&client, &shared).await;
        let collected: Vec<_> = batch.iter().map(|(job, _)| collect(job)).collect();
        let together: Vec<Statements> = collected.iter().flatten().cloned().collect();
        let all_landed = batch.len() > 1
            && together.len() == batch.len()
            && commit(&client, &together).await.is_ok();
        let mut failed = false;
        for ((_, done), statements) in batch.into_iter().zip(collected) {
            let outcome = match statements {
                Err(e) => Err(e),
                Ok(_) if all_landed => Ok(()),
                Ok(s) => commit(&client, &[s]).await,
            };
            failed |= outcome.is_err();
            let _ = done.send(outcome.map_err(|e| pg_error(&shared.shown, e)));
        }
        shared.failing.store(failed, Ordering::Relaxed);
    }
}

/// Commits the owed writes that land now, in order; the first that fails and those after
/// it stay owed.
async fn settle_owed(client: &Object, shared: &Shared) {
    let owed: Vec<Statements> = {
        let owed = lock(&shared.owed);
        owed.iter().filter_map(|job| collect(job).ok()).collect()
    };
    if owed.is_empty() {
        return;
    }
    let mut landed = 0;
    for statements in owed {
        if commit(client, &[statements]).await.is_err() {
            break;
        }
        landed += 1;
    }
    lock(&shared.owed).drain(..landed);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            crate::postgres::shown_url("postgres://kiln:secret@db.internal:5432/kiln"),
            "postgres://kiln@db.internal:5432/kiln"
        );
        assert_eq!(
            crate::postgres::shown_url("postgresql://db/kiln"),
            "postgresql://db/kiln"
        );
    }
}
