//! The key-value store behind `store_*` and the `storage` tool, namespaced per workspace.

use super::{Db, now};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

impl Db {
    /// A stored value.
    pub fn kv_get(&self, workspace: &str, ns: &str, key: &str) -> Option<Value> {
        let conn = self.conn();
        let text: Option<String> = conn
            .query_row(
                "SELECT value FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
                params![workspace, ns, key],
                |r| r.get(0),
            )
            .optional()
            .ok()
            .flatten();
        text.and_then(|t| serde_json::from_str(&t).ok())
    }

    /// Stores a value.
    pub fn kv_set(
        &self,
        workspace: &str,
        ns: &str,
        key: &str,
        value: &Value,
    ) -> Result<(), super::DbError> {
        self.conn()
            .execute(
                "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES(?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(workspace, ns, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
                params![workspace, ns, key, value.to_string(), now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Deletes a key; true when it existed.
    pub fn kv_delete(&self, workspace: &str, ns: &str, key: &str) -> bool {
        self.conn()
            .execute(
                "DELETE FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
                params![workspace, ns, key],
            )
            .map(|n| n > 0)
            .unwrap_or(false)
    }

    /// Keys of a namespace, sorted.
    pub fn kv_list(&self, workspace: &str, ns: &str) -> Vec<String> {
        let conn = self.conn();
        let Ok(mut stmt) =
            conn.prepare("SELECT key FROM kv WHERE workspace=?1 AND ns=?2 ORDER BY key")
        else {
            return Vec::new();
        };
        stmt.query_map(params![workspace, ns], |r| r.get::<_, String>(0))
            .map(|rows| rows.flatten().collect())
            .unwrap_or_default()
    }

    /// Moves every key of workspace `from` to workspace `to` (keys `to` already has stay).
    pub fn kv_rekey(&self, from: &str, to: &str) -> Result<(), super::DbError> {
        self.conn()
            .execute(
                "UPDATE OR IGNORE kv SET workspace=?2 WHERE workspace=?1",
                params![from, to],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }
}
