//! Schema migrations, versioned with `PRAGMA user_version` on SQLite and the `kiln_schema`
//! table on PostgreSQL. SQLite's migrations are the one description: PostgreSQL's schema is
//! derived from them ([`postgres_steps`]).

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
    // 3: a logged step in as few pages as possible (each step's commit wrote seven). Its
    // model replies, messages and tool calls are rows of one table, keyed by run, step and
    // part without a rowid, so one step's rows sit side by side in one B-tree leaf; the old
    // tables live on as views. A run's totals are written when it ends (a running run's are
    // counted). Rows from before keep their order: messages under their own seq, model
    // replies under step -1 and tool calls under step -2.
    "CREATE TABLE steps(
        run_id TEXT NOT NULL, step INTEGER NOT NULL, part INTEGER NOT NULL, kind TEXT NOT NULL,
        at REAL NOT NULL, seq INTEGER, role TEXT, body TEXT,
        round INTEGER, duration_ms REAL, input_tokens INTEGER, output_tokens INTEGER,
        stop_reason TEXT, call_id TEXT, name TEXT, args TEXT, outcome TEXT, is_error INTEGER,
        script_version TEXT,
        PRIMARY KEY(run_id, step, part)) WITHOUT ROWID;
     INSERT INTO steps(run_id, step, part, kind, at, seq, role, body)
        SELECT run_id, seq, 0, 'message', at, seq, role, body FROM messages;
     INSERT OR REPLACE INTO steps(run_id, step, part, kind, at, round, duration_ms,
        input_tokens, output_tokens, stop_reason)
        SELECT run_id, -1, round, 'model', at, round, duration_ms, input_tokens, output_tokens,
        stop_reason FROM model_calls ORDER BY rowid;
     INSERT INTO steps(run_id, step, part, kind, at, round, call_id, name, args, outcome,
        is_error, duration_ms, script_version)
        SELECT run_id, -2, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY rowid), 'tool', at,
        round, call_id, name, args, outcome, is_error, duration_ms, script_version
        FROM tool_calls;
     DROP TABLE messages;
     DROP TABLE model_calls;
     DROP TABLE tool_calls;
     CREATE VIEW messages AS
        SELECT run_id, seq, at, role, body FROM steps WHERE kind = 'message';
     CREATE VIEW model_calls AS
        SELECT run_id, round, at, duration_ms, input_tokens, output_tokens, stop_reason
        FROM steps WHERE kind = 'model';
     CREATE VIEW tool_calls AS
        SELECT run_id, step, part, round, call_id, name, args, outcome, is_error, duration_ms,
        script_version, at FROM steps WHERE kind = 'tool';",
    // 4: what each run cost (from its model's price), and the run that started it
    "ALTER TABLE runs ADD COLUMN cost_usd REAL;
     ALTER TABLE runs ADD COLUMN parent TEXT;",
    // 5: the process running a run (`HOST:PID`), so one whose process is gone shows as such
    "ALTER TABLE runs ADD COLUMN owner TEXT;",
    // 6: the trace a run belongs to (OpenTelemetry), to go from `kiln logs` to a trace viewer.
    "ALTER TABLE runs ADD COLUMN trace_id TEXT;",
    // 7: a model reply rides on the row of the assistant message it produced (one row fewer a
    // round); replies without one (a run that ended before its step, a rewritten step) keep
    // rows of their own.
    "DROP VIEW model_calls;
     CREATE VIEW model_calls AS
        SELECT run_id, round, at, duration_ms, input_tokens, output_tokens, stop_reason
        FROM steps WHERE kind = 'model' OR (kind = 'message' AND round IS NOT NULL);",
    // 8: which provider and model answered each model request (a fallback chain's member may
    // not be the run's own), and the reply's reasoning tokens.
    "ALTER TABLE steps ADD COLUMN provider TEXT;
     ALTER TABLE steps ADD COLUMN model TEXT;
     ALTER TABLE steps ADD COLUMN reasoning_tokens INTEGER;
     DROP VIEW model_calls;
     CREATE VIEW model_calls AS
        SELECT run_id, round, at, duration_ms, input_tokens, output_tokens, stop_reason,
        provider, model, reasoning_tokens
        FROM steps WHERE kind = 'model' OR (kind = 'message' AND round IS NOT NULL);",
    // 9: `kiln serve`'s stored Responses: each response's object, its input items and the
    // conversation through it, by the actor that created it.
    "CREATE TABLE responses(
        id TEXT PRIMARY KEY, owner TEXT, agent TEXT NOT NULL, created_at REAL NOT NULL,
        body TEXT NOT NULL, input_items TEXT NOT NULL, messages TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'null');",
    // 10: the eval run a run belongs to (`kiln eval`), for `kiln logs --eval ID`.
    "ALTER TABLE runs ADD COLUMN eval_id TEXT;
     CREATE INDEX runs_eval ON runs(eval_id, started_at) WHERE eval_id IS NOT NULL;",
    // 11: what a tool call told its caller while it ran (progress, emitted events), as JSON.
    "ALTER TABLE steps ADD COLUMN notes TEXT;
     DROP VIEW tool_calls;
     CREATE VIEW tool_calls AS
        SELECT run_id, step, part, round, call_id, name, args, outcome, is_error, duration_ms,
        script_version, at, notes FROM steps WHERE kind = 'tool';",
    // 12: the approvals runs wait for and the one decision that took effect, so servers
    // sharing the database decide each other's (`kiln serve` on PostgreSQL).
    "CREATE TABLE approvals(
        run_id TEXT NOT NULL, id TEXT NOT NULL, actor TEXT, capability TEXT NOT NULL,
        question TEXT NOT NULL, tool TEXT, args TEXT, call_id TEXT, asked_at REAL NOT NULL,
        expires_at REAL NOT NULL, decision TEXT, decided_at REAL,
        PRIMARY KEY(run_id, id)) WITHOUT ROWID;
     CREATE INDEX approvals_open ON approvals(asked_at) WHERE decision IS NULL;",
    // 13: when each process sharing the database (`HOST:PID`, a run's owner) last said it
    // was alive, so a run on a machine that went silent shows `interrupted` everywhere.
    "CREATE TABLE processes(owner TEXT PRIMARY KEY, seen_at REAL NOT NULL);",
    // 14: `kiln eval`'s kept reports and baselines, where kiln processes share the database
    // (on SQLite they stay files in the workspace's .kiln/evals/).
    "CREATE TABLE eval_reports(
        kind TEXT NOT NULL, name TEXT NOT NULL, eval TEXT NOT NULL, rescored INTEGER NOT NULL,
        kept_at REAL NOT NULL, body TEXT NOT NULL, PRIMARY KEY(kind, name));
     CREATE INDEX eval_reports_latest ON eval_reports(eval, kept_at);",
    // 15: MCP tasks (`/mcp` of `kiln serve` on PostgreSQL): each runs in the process that
    // started it; its state is kept here so any server answers `tasks/get` and `tasks/cancel`.
    "CREATE TABLE mcp_tasks(
        id TEXT PRIMARY KEY, actor TEXT, session TEXT, process TEXT NOT NULL,
        state TEXT NOT NULL, result TEXT, created_at TEXT NOT NULL, updated_at REAL NOT NULL,
        cancel INTEGER NOT NULL DEFAULT 0);",
];

/// The newest schema version this build knows.
pub const KNOWN: usize = MIGRATIONS.len();

/// Brings the schema up to date and returns the version the file had (one newer than
/// [`KNOWN`] is left alone: the caller refuses it). The version is read under the write lock,
/// so two processes opening a new database at once do not both apply a migration.
pub fn run(conn: &mut Connection) -> rusqlite::Result<usize> {
    let mut first = None;
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: usize = tx
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            .map(|v| v.max(0) as usize)?;
        let found = *first.get_or_insert(version);
        let Some(sql) = MIGRATIONS.get(version) else {
            return tx.commit().map(|()| found);
        };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
    }
}

/// The statements that bring a PostgreSQL database from schema version `from` to [`KNOWN`]:
/// a new database gets the schema SQLite's migrations build (read back from an in-memory
/// SQLite database, in PostgreSQL's types), an older one the migrations it lacks, translated.
pub fn postgres_steps(from: usize) -> Vec<String> {
    if from > 0 {
        return MIGRATIONS
            .get(from..)
            .unwrap_or_default()
            .iter()
            .map(|sql| crate::sql::postgres_schema(sql))
            .collect();
    }
    let Ok(mut conn) = Connection::open_in_memory() else {
        return Vec::new();
    };
    if run(&mut conn).is_err() {
        return Vec::new();
    }
    // Tables first, then their indexes, then the views over them, each in creation order.
    let rows = crate::commit::query(
        &conn,
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL
         ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid",
        &[],
    )
    .unwrap_or_default();
    rows.iter()
        .map(|r| crate::sql::postgres_schema(&r.str(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn postgres_gets_every_table_index_and_view_in_its_types() {
        let steps = crate::migrate::postgres_steps(0);
        let all = steps.join(";\n");
        for name in [
            "runs",
            "steps",
            "sessions",
            "session_messages",
            "kv",
            "responses",
            "approvals",
            "processes",
            "eval_reports",
            "mcp_tasks",
        ] {
            assert!(
                all.contains(&format!("CREATE TABLE {name}")),
                "{name}: {all}"
            );
        }
        for view in ["messages", "model_calls", "tool_calls"] {
            assert!(
                all.contains(&format!("CREATE VIEW {view}")),
                "{view}: {all}"
            );
        }
        assert!(all.contains("runs_eval"), "{all}");
        assert!(
            !all.contains("WITHOUT ROWID") && !all.contains(" REAL"),
            "{all}"
        );
        let views_after_tables = steps.iter().position(|s| s.contains("CREATE VIEW"))
            > steps.iter().rposition(|s| s.contains("CREATE TABLE"));
        assert!(views_after_tables, "{all}");
    }

    /// Another process migrated the file after this connection read its schema: this one's
    /// cached schema is stale, and a migration must not be prepared against it.
    #[test]
    fn a_connection_whose_schema_another_process_changed_migrates_what_is_left() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("k.db");
        let mut late = rusqlite::Connection::open(&path).expect("open");
        for sql in &crate::migrate::MIGRATIONS[..3] {
            late.execute_batch(sql).expect("old schema");
        }
        late.pragma_update(None, "user_version", 3i64)
            .expect("version");
        // `late` has read the schema as it was at version 3 (model_calls a table).
        let tables: i64 = late
            .query_row("SELECT count(*) FROM model_calls", [], |r| r.get(0))
            .expect("read");
        assert_eq!(tables, 0);
        // Another process takes it to version 7 (model_calls a view since 3)...
        let early = rusqlite::Connection::open(&path).expect("open");
        for sql in &crate::migrate::MIGRATIONS[3..7] {
            early.execute_batch(sql).expect("migrated elsewhere");
        }
        early
            .pragma_update(None, "user_version", 7i64)
            .expect("version");
        // ... and `late` applies the rest against the schema as it is now.
        assert_eq!(crate::migrate::run(&mut late).expect("the rest"), 7);
        let version: i64 = late
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(version as usize, crate::migrate::KNOWN);
    }

    #[test]
    fn migrations_apply_once_and_are_idempotent() {
        let mut conn = rusqlite::Connection::open_in_memory().expect("open");
        crate::migrate::run(&mut conn).expect("first");
        crate::migrate::run(&mut conn).expect("again");
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(v as usize, crate::migrate::MIGRATIONS.len());
    }

    /// An in-memory database as kiln left it at schema `version`.
    fn schema_at(version: usize) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        for sql in &crate::migrate::MIGRATIONS[..version] {
            conn.execute_batch(sql).expect("old schema");
        }
        conn.pragma_update(None, "user_version", version as i64)
            .expect("version");
        conn
    }

    #[test]
    fn a_version_2_log_keeps_its_runs_calls_and_messages_in_order() {
        let mut conn = schema_at(2);
        conn.execute_batch(
            "INSERT INTO runs(id, agent, started_at, status, rounds) VALUES('r1', 'a', 1.0, 'ok', 2);
             INSERT INTO model_calls VALUES('r1', 1, 1.0, 5.0, 10, 2, 'tool_use');
             INSERT INTO model_calls VALUES('r1', 2, 2.0, 5.0, 12, 3, 'end_turn');
             INSERT INTO messages VALUES('r1', 0, 1.0, 'user', '{}');
             INSERT INTO messages VALUES('r1', 1, 1.0, 'assistant', '{}');
             INSERT INTO tool_calls(run_id, round, call_id, name, args, outcome, is_error, at)
                VALUES('r1', 1, 'b', 'second_name_first', '{}', '1', 0, 1.0);
             INSERT INTO tool_calls(run_id, round, call_id, name, args, outcome, is_error, at)
                VALUES('r2', 1, 'x', 'other_run', '{}', '1', 0, 1.0);
             INSERT INTO tool_calls(run_id, round, call_id, name, args, outcome, is_error, at)
                VALUES('r1', 1, 'a', 'alpha', '{}', '2', 1, 1.0);",
        )
        .expect("old rows");
        crate::migrate::run(&mut conn).expect("migrate");
        let names: Vec<(String, i64)> = conn
            .prepare("SELECT name, part FROM tool_calls WHERE run_id = 'r1' ORDER BY step, part")
            .expect("query")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(
            names,
            [
                ("second_name_first".to_string(), 1),
                ("alpha".to_string(), 2)
            ]
        );
        let counts: (i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM model_calls), (SELECT COUNT(*) FROM messages),
                        (SELECT COUNT(*) FROM tool_calls)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("counts");
        assert_eq!(counts, (2, 2, 3));
    }

    #[test]
    fn a_version_9_log_gains_an_eval_id_and_keeps_its_runs() {
        let mut conn = schema_at(9);
        conn.execute_batch(
            "INSERT INTO runs(id, agent, started_at, status) VALUES('old', 'a', 1.0, 'ok');",
        )
        .expect("old row");
        assert_eq!(crate::migrate::run(&mut conn).expect("migrate"), 9);
        conn.execute_batch(
            "INSERT INTO runs(id, agent, started_at, status, eval_id) VALUES('new', 'a', 2.0, 'ok', 'ev1');",
        )
        .expect("new row");
        let tagged: Vec<(String, Option<String>)> = conn
            .prepare("SELECT id, eval_id FROM runs ORDER BY started_at")
            .expect("query")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(
            tagged,
            [
                ("old".to_string(), None),
                ("new".to_string(), Some("ev1".to_string()))
            ]
        );
        let plan: String = conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE eval_id = 'ev1'",
                [],
                |r| r.get(3),
            )
            .expect("plan");
        assert!(plan.contains("runs_eval"), "{plan}");
    }
}
