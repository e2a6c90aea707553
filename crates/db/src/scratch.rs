//! Throwaway PostgreSQL databases for tests: each test gets a database of its own on the
//! server `KILN_POSTGRES` names (`postgres://USER@127.0.0.1:PORT/postgres`), dropped when the
//! test lets go of it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable naming the PostgreSQL server tests use.
pub const SERVER_VAR: &str = "KILN_POSTGRES";

/// A database made for one test; dropped (with any connections left) on drop.
pub struct Scratch {
    server: String,
    name: String,
    url: String,
}

impl Scratch {
    /// A new, empty database on the server `KILN_POSTGRES` names, or why there is none.
    pub fn new() -> Result<Scratch, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let server = std::env::var(SERVER_VAR).map_err(|_| {
            format!("{SERVER_VAR} is not set: name a PostgreSQL server to test on (`.ci/postgres start` prints one)")
        })?;
        let name = format!(
            "kiln_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin(&server, format!("CREATE DATABASE {name}"))?;
        let url = match server.rsplit_once('/') {
            Some((base, _)) if base.contains("://") && base.len() > "postgres://".len() => {
                format!("{base}/{name}")
            }
            _ => {
                return Err(format!(
                    "{SERVER_VAR}: cannot tell the server from {server}"
                ));
            }
        };
        Ok(Scratch { server, name, url })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = admin(
            &self.server,
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// Runs one statement on the server's maintenance database, on a thread of its own (the
/// caller may be inside a runtime).
fn admin(server: &str, sql: String) -> Result<(), String> {
    let server = server.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("{SERVER_VAR}={server}: {e}"))?;
            tokio::spawn(conn);
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("{sql}: {}", crate::sql::SqlError::from(e)))
        })
    })
    .join()
    .map_err(|_| "the admin thread panicked".to_string())?
}
