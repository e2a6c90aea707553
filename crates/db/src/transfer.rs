//! Copying everything one database keeps into another (`kiln db migrate --to URL`): an SQLite
//! file's run log, sessions, store and stored responses onto a PostgreSQL server, table by
//! table in batches, rows the target already has left as they are (so a copy that stopped
//! can be run again).

use crate::sql::{Arg, Cell, Row};
use crate::{Db, DbError};

/// The tables kiln keeps, their columns (as of schema 11) and their keys, in the order they
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
            let select = format!("SELECT {list} FROM {table} ORDER BY {key} LIMIT ?1 OFFSET ?2");
            let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
            let insert = format!(
                "INSERT INTO {table}({list}) VALUES({}) ON CONFLICT({key}) DO NOTHING",
                marks.join(", ")
            );
            let (mut read, mut added) = (0u64, 0u64);
            loop {
                let rows: Vec<Row> =
                    self.query(&select, &[Arg::Int(BATCH as i64), Arg::Int(read as i64)])?;
                if rows.is_empty() {
                    break;
                }
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
