//! Schema migrations, versioned with `PRAGMA user_version`.

use rusqlite::Connection;

/// Each entry moves the schema one version up; never edit a released one, add another.
const MIGRATIONS: &[&str] = &[
    // 1: run log, sessions, store
    "CREATE TABLE runs(
        id TEXT PRIMARY KEY, agent TEXT NOT NULL, provider TEXT, model TEXT, session TEXT,
        prompt TEXT, started_at REAL NOT NULL, ended_at REAL, status TEXT NOT NULL DEFAULT 'running',
        error TEXT, answer TEXT, input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0, rounds INTEGER NOT NULL DEFAULT 0);
     CREATE INDEX runs_started ON runs(started_at);
     CREATE TABLE model_calls(
        run_id TEXT NOT NULL, round INTEGER NOT NULL, at REAL NOT NULL, duration_ms REAL,
        input_tokens INTEGER, output_tokens INTEGER, stop_reason TEXT);
     CREATE TABLE messages(
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, role TEXT NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY(run_id, seq));
     CREATE TABLE tool_calls(
        run_id TEXT NOT NULL, round INTEGER NOT NULL, call_id TEXT, name TEXT NOT NULL,
        args TEXT, outcome TEXT, is_error INTEGER NOT NULL, duration_ms REAL,
        script_version TEXT, at REAL NOT NULL);
     CREATE INDEX tool_calls_run ON tool_calls(run_id);
     CREATE INDEX tool_calls_name ON tool_calls(name);
     CREATE TABLE sessions(
        name TEXT PRIMARY KEY, agent TEXT NOT NULL, state TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL, updated_at REAL NOT NULL);
     CREATE TABLE session_messages(
        session TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY(session, seq));
     CREATE TABLE kv(
        workspace TEXT NOT NULL, ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        updated_at REAL NOT NULL, PRIMARY KEY(workspace, ns, key));",
    // 2: who each run acted for (a serve token's actor, an MCP client, --actor)
    "ALTER TABLE runs ADD COLUMN actor TEXT;",
];

/// Brings the schema up to date. The version is read under the write lock, so two processes
/// opening a new database at once do not both apply a migration.
pub fn run(conn: &mut Connection) -> rusqlite::Result<()> {
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: usize = tx
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            .map(|v| v.max(0) as usize)?;
        let Some(sql) = MIGRATIONS.get(version) else {
            return tx.commit();
        };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_apply_once_and_are_idempotent() {
        let mut conn = rusqlite::Connection::open_in_memory().expect("open");
        super::run(&mut conn).expect("first");
        super::run(&mut conn).expect("again");
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(v as usize, super::MIGRATIONS.len());
    }
}
