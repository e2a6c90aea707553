//! Group commit through `Db::submit`: concurrent jobs share transactions, a failing job fails
//! alone (on SQLite and on PostgreSQL), and, on SQLite, jobs queued while the connection is
//! held commit when it is let go.

use kiln_db::scratch::Scratch;
use kiln_db::{Db, args};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn count(db: &Db) -> i64 {
    db.query_row("SELECT COUNT(*) FROM t", &[])
        .expect("count")
        .and_then(|r| r.int(0))
        .expect("a count")
}

/// A database (kept alive by what is returned with it) with table `t`.
fn with_table(db: Db) -> Arc<Db> {
    db.execute(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
        &[],
    )
    .expect("table");
    Arc::new(db)
}

fn db() -> (tempfile::TempDir, Arc<Db>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = with_table(Db::open(&dir.path().join("k.db")).expect("db"));
    (dir, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_jobs_all_land_and_a_failing_one_fails_alone() {
    let (_dir, db) = db();
    jobs_land_and_one_fails_alone(&db, "k.db").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
async fn concurrent_jobs_all_land_and_a_failing_one_fails_alone_on_postgres() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let db = with_table(Db::connect(scratch.url()).expect("connect"));
    jobs_land_and_one_fails_alone(&db, "127.0.0.1").await;
}

async fn jobs_land_and_one_fails_alone(db: &Db, named: &str) {
    let jobs: Vec<_> = (0..200i64)
        .map(|i| {
            db.submit(Box::new(move |c| {
                // Job 57 breaks a constraint: only it may fail.
                let v = if i == 57 {
                    None
                } else {
                    Some(format!("row {i}"))
                };
                c.exec("INSERT INTO t(id, v) VALUES(?1, ?2)", &args![i, v])
            }))
        })
        .collect();
    let mut failed = Vec::new();
    for (i, j) in jobs.into_iter().enumerate() {
        if let Err(e) = j.await {
            assert!(e.to_string().contains(named), "{e}");
            failed.push(i);
        }
    }
    assert_eq!(failed, [57]);
    assert_eq!(count(db), 199);
}

#[tokio::test]
async fn jobs_queued_while_a_reader_holds_the_connection_commit_together_when_it_lets_go() {
    let (_dir, db) = db();
    let reader = db.sqlite().expect("an SQLite file");
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..50).map(|_| AtomicUsize::new(0)).collect());
    let waiting: Vec<_> = (0..50i64)
        .map(|i| {
            let runs = runs.clone();
            db.submit(Box::new(move |c| {
                runs[i as usize].fetch_add(1, Ordering::SeqCst);
                let v = (i != 20).then_some("x");
                c.exec("INSERT INTO t(id, v) VALUES(?1, ?2)", &args![i, v])
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

#[test]
fn owed_writes_land_in_order_once_they_can_and_none_jumps_the_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = kiln_db::Db::open(&dir.path().join("k.db")).expect("db");
    let room = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let insert = |key: &'static str,
                  room: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>|
     -> kiln_db::Job {
        Box::new(move |c| {
            if room
                .as_ref()
                .is_some_and(|r| !r.load(std::sync::atomic::Ordering::Relaxed))
            {
                return Err(kiln_db::SqlError::Sqlite(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                    None,
                )));
            }
            c.exec(
                "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES('w', 'n', ?1, 'v', 0)",
                &args![key],
            )
        })
    };
    db.owe(insert("first", Some(room.clone())));
    db.owe(insert("second", None));
    drop(db.sqlite());
    assert_eq!(db.owed(), 2, "the second waits behind the first");
    room.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(db.sqlite());
    assert_eq!(db.owed(), 0);
    let keys: Vec<String> = db
        .query("SELECT key FROM kv ORDER BY rowid", &[])
        .expect("keys")
        .iter()
        .map(|r| r.str(0))
        .collect();
    assert_eq!(keys, ["first", "second"]);
}
