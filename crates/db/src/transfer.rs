//! Copying everything one database keeps into another (`kiln db migrate --to URL`): an SQLite
//! file's run log, sessions, store and stored responses onto a PostgreSQL server, table by
//! table in batches, rows the target already has left as they are (so a copy that stopped
//! can be run again).

use crate::sql::{Arg, Cell, Row};
use crate::{Db, DbError};

/// The tables kiln keeps, their columns (as of schema 15) and their keys, in the order they
/// are copied.
pub const TABLES: &[(&str, &[&str], &str)] = &[
    (
        "runs",
        &[
            "id",
            "agent",
            "provider",
            "model",
            "session",
            "prompt",
            "started_at",
            "ended_at",
            "status",
            "error",
            "answer",
            "input_tokens",
            "output_tokens",
            "rounds",
            "actor",
            "cost_usd",
            "parent",
            "owner",
            "trace_id",
            "eval_id",
        ],
        "id",
    ),
    (
        "steps",
        &[
            "run_id",
            "step",
            "part",
            "kind",
            "at",
            "seq",
            "role",
            "body",
            "round",
            "duration_ms",
            "input_tokens",
            "output_tokens",
            "stop_reason",
            "call_id",
            "name",
            "args",
            "outcome",
            "is_error",
            "script_version",
            "provider",
            "model",
            "reasoning_tokens",
            "notes",
        ],
        "run_id, step, part",
    ),
    (
        "sessions",
        &["name", "agent", "state", "created_at", "updated_at"],
        "name",
    ),
    (
        "session_messages",
        &["session", "seq", "body"],
        "session, seq",
    ),
    (
        "kv",
        &["workspace", "ns", "key", "value", "updated_at"],
        "workspace, ns, key",
    ),
    (
        "responses",
        &[
            "id",
            "owner",
            "agent",
            "created_at",
            "body",
            "input_items",
            "messages",
            "state",
        ],
        "id",
    ),
    (
        "approvals",
        &[
            "run_id",
            "id",
            "actor",
            "capability",
            "question",
            "tool",
            "args",
            "call_id",
            "asked_at",
            "expires_at",
            "decision",
            "decided_at",
        ],
        "run_id, id",
    ),
    ("processes", &["owner", "seen_at"], "owner"),
    (
        "eval_reports",
        &["kind", "name", "eval", "rescored", "kept_at", "body"],
        "kind, name",
    ),
    (
        "mcp_tasks",
        &[
            "id",
            "actor",
            "session",
            "process",
            "state",
            "result",
            "created_at",
            "updated_at",
            "cancel",
        ],
        "id",
    ),
];

/// Rows copied per transaction.
const BATCH: usize = 500;

/// What a copy did: rows read and rows added, per table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Copied {
    /// `(table, rows read, rows added)`, in copy order.
    pub tables: Vec<(String, u64, u64)>,
}

fn arg(cell: Cell) -> Arg<'static> {
    match cell {
        Cell::Null => Arg::Null,
        Cell::Int(n) => Arg::Int(n),
        Cell::Real(f) => Arg::Real(f),
        Cell::Text(t) => Arg::from(t),
    }
}

impl Db {
    /// Copies every table of this database into `to`, calling `progress(table, rows so far)`
    /// after each batch. Rows `to` already has (by key) are kept as they are.
    pub fn copy_into(
        &self,
        to: &Db,
        mut progress: impl FnMut(&str, u64),
    ) -> Result<Copied, DbError> {
        let mut copied = Copied::default();
        for (table, columns, key) in TABLES {
            let list = columns.join(", ");
            // Pages follow the key (keyset paging: each page starts after the last row's key,
            // so a large table costs what it holds, not its square).
            let keys: Vec<&str> = key.split(", ").collect();
            let at: Vec<usize> = (keys.iter())
                .filter_map(|k| columns.iter().position(|c| c == k))
                .collect();
            let after: Vec<String> = (2..2 + keys.len()).map(|i| format!("?{i}")).collect();
            let first = format!("SELECT {list} FROM {table} ORDER BY {key} LIMIT ?1");
            let next = format!(
                "SELECT {list} FROM {table} WHERE ({key}) > ({}) ORDER BY {key} LIMIT ?1",
                after.join(", ")
            );
            let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
            let insert = format!(
                "INSERT INTO {table}({list}) VALUES({}) ON CONFLICT({key}) DO NOTHING",
                marks.join(", ")
            );
            let (mut read, mut added) = (0u64, 0u64);
            let mut last: Option<Vec<Arg<'static>>> = None;
            loop {
                let rows: Vec<Row> = match &last {
                    None => self.query(&first, &[Arg::Int(BATCH as i64)])?,
                    Some(key) => {
                        let mut args = vec![Arg::Int(BATCH as i64)];
                        args.extend(key.iter().cloned());
                        self.query(&next, &args)?
                    }
                };
                let Some(tail) = rows.last() else { break };
                last = Some(at.iter().map(|&i| arg(tail.0[i].clone())).collect());
                let n = rows.len();
                added += to.transaction(|tx| {
                    let mut added = 0;
                    for row in rows {
                        let args: Vec<Arg<'_>> = row.0.into_iter().map(arg).collect();
                        added += tx.execute(&insert, &args)?;
                    }
                    Ok(added)
                })?;
                read += n as u64;
                progress(table, read);
                if n < BATCH {
                    break;
                }
            }
            copied.tables.push((table.to_string(), read, added));
        }
        Ok(copied)
    }
}

#[cfg(test)]
mod tests {
    /// Many pages (composite keys among them) land whole, once, and again add nothing.
    #[test]
    fn a_copy_of_many_pages_lands_every_row_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let from = crate::Db::open(&dir.path().join("a.db")).expect("from");
        let to = crate::Db::open(&dir.path().join("b.db")).expect("to");
        from.transaction(|tx| {
            for i in 0..1234 {
                let ns = format!("ns{}", i % 3);
                tx.execute(
                    "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES('w', ?1, ?2, '1', 0)",
                    &crate::args![ns, format!("k{i:05}")],
                )?;
            }
            Ok(())
        })
        .expect("rows");
        let copied = from.copy_into(&to, |_, _| {}).expect("copy");
        let kv = copied.tables.iter().find(|t| t.0 == "kv").expect("kv");
        assert_eq!((kv.1, kv.2), (1234, 1234));
        let again = from.copy_into(&to, |_, _| {}).expect("again");
        let kv = again.tables.iter().find(|t| t.0 == "kv").expect("kv");
        assert_eq!((kv.1, kv.2), (1234, 0));
        let n = to.query_row("SELECT COUNT(*) FROM kv", &[]).expect("count");
        assert_eq!(n.and_then(|r| r.int(0)), Some(1234));
    }

    /// The copy names every column of every table SQLite's migrations build: a migration
    /// that adds one must add it here.
    #[test]
    fn the_copied_columns_are_every_column_of_the_schema() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::Db::open(&dir.path().join("k.db")).expect("db");
        for (table, columns, _) in crate::transfer::TABLES {
            let mut have: Vec<String> = db
                .query(
                    "SELECT name FROM pragma_table_info(?1)",
                    &crate::args![*table],
                )
                .expect("columns")
                .iter()
                .map(|r| r.str(0))
                .collect();
            let mut want: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            have.sort();
            want.sort();
            assert_eq!(have, want, "{table}");
        }
        let tables: Vec<String> = db
            .query(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                &[],
            )
            .expect("tables")
            .iter()
            .map(|r| r.str(0))
            .collect();
        let mut copied: Vec<&str> = crate::transfer::TABLES.iter().map(|t| t.0).collect();
        copied.sort();
        assert_eq!(tables, copied);
    }
}
