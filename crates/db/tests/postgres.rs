//! kiln-db on PostgreSQL: migrations shared by servers starting together, a newer schema
//! refused, URLs this kiln cannot use refused by name (without their passwords).

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
    let err = Db::connect("postgres://kiln:hunter2@127.0.0.1:1/db?sslmode=require")
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("sslmode=require") && text.contains("postgres://kiln@127.0.0.1:1/db"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let err = Db::connect("postgres://kiln@127.0.0.1:1/db?nonsense=1")
        .err()
        .expect("refused");
    assert!(err.to_string().contains("nonsense"), "{err}");
}
