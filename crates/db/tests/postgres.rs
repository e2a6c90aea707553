//! kiln-db on PostgreSQL: migrations shared by servers starting together, a newer schema
//! refused, URLs this kiln cannot use refused by name (without their passwords), TLS verified.

use kiln_db::scratch::Scratch;
use kiln_db::{Db, DbError};

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn postgres_servers_opening_a_new_database_together_migrate_it_once_and_a_newer_schema_is_refused()
{
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let url = scratch.url().to_string();
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Db::connect(&url).map(drop).map_err(|e| e.to_string()))
        })
        .collect();
    for o in openers {
        assert_eq!(o.join().expect("thread"), Ok(()));
    }
    let db = Db::connect(&url).expect("again");
    db.execute("UPDATE kiln_schema SET version = 99", &[])
        .expect("bump");
    drop(db);
    let err = Db::connect(&url).err().expect("refused");
    assert!(
        matches!(err, DbError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade kiln"), "{err}");
}

#[test]
fn a_postgres_url_this_kiln_cannot_use_is_refused_by_name_without_its_password() {
    let err = Db::connect(
        "postgres://kiln:hunter2@127.0.0.1:1/db?sslmode=require&sslrootcert=/no/such/ca.pem",
    )
    .err()
    .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("sslrootcert=/no/such/ca.pem")
            && text.contains("postgres://kiln@127.0.0.1:1/db"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let err = Db::connect("postgres://kiln@127.0.0.1:1/db?nonsense=1")
        .err()
        .expect("refused");
    assert!(err.to_string().contains("nonsense"), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL with TLS: KILN_POSTGRES and KILN_POSTGRES_CA (.ci/postgres start)"]
fn postgres_over_tls_is_verified_against_the_given_root_and_refused_without_it() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let ca = std::env::var("KILN_POSTGRES_CA").expect("KILN_POSTGRES_CA: the CA .ci/postgres made");
    let url = format!("{}?sslmode=verify-full&sslrootcert={ca}", scratch.url());
    let db = Db::connect(&url).expect("over TLS");
    let row = db
        .query_row(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .expect("read")
        .expect("a row");
    assert_eq!(row.int(0), Some(1), "the connection is encrypted");
    // The listening connection goes over TLS as well.
    let mut heard = db.listen(&["kiln_feed"]).expect("listening");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let first = rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv()).await
    });
    assert_eq!(
        first.expect("in time"),
        Some(kiln_db::listen::Notice::Listening)
    );
    // The system's trust store does not know the tests' CA: nothing is sent in the clear
    // instead, the connection is refused, saying why.
    let err = Db::connect(&format!("{}?sslmode=require", scratch.url()))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("certificate"), "{err}");
}
