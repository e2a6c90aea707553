//! The key-value store behind `store_*` and the `storage` tool, namespaced per workspace.

use super::{Db, now};
use kiln_core::services::{KvStore, workspace_id};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

impl Db {
    /// A stored value; `None` when the key is not there. A value that is not JSON (written
    /// by something else) reads as a database error too: it is not a missing key.
    pub fn kv_get(
        &self,
        workspace: &str,
        ns: &str,
        key: &str,
    ) -> Result<Option<Value>, super::DbError> {
        let text: Option<String> = self
            .conn()
            .query_row(
                "SELECT value FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
                params![workspace, ns, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| {
                self.err(rusqlite::Error::FromSqlConversionFailure(
                    0,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                ))
            })
        })
        .transpose()
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
    pub fn kv_delete(&self, workspace: &str, ns: &str, key: &str) -> Result<bool, super::DbError> {
        self.conn()
            .execute(
                "DELETE FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
                params![workspace, ns, key],
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// Keys of a namespace, sorted.
    pub fn kv_list(&self, workspace: &str, ns: &str) -> Result<Vec<String>, super::DbError> {
        let conn = self.conn();
        let keys = conn
            .prepare("SELECT key FROM kv WHERE workspace=?1 AND ns=?2 ORDER BY key")
            .and_then(|mut stmt| {
                stmt.query_map(params![workspace, ns], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            });
        keys.map_err(|e| self.err(e))
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
/// The store namespace of a workspace: its id in `.kiln/` (so a moved workspace keeps its
/// store). Rows kept under the workspace's path by earlier versions move to the new id; when no
/// id can be kept, the path is the key (both logged as warnings).
pub fn store_key(workspace: &Path, db: &Db) -> String {
    let path = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .display()
        .to_string();
    match workspace_id(workspace) {
        Ok((id, created)) => {
            if created && let Err(e) = db.kv_rekey(&path, &id) {
                tracing::warn!("the store kept under {path} was not moved: {e}");
            }
            id
        }
        Err(e) => {
            tracing::warn!(
                "cannot keep a workspace id in {}: {e}; the store is keyed by the path",
                workspace.join(kiln_core::defaults::STATE_DIR).display()
            );
            path
        }
    }
}

/// The database's store for one workspace: what `store_*` reaches when the host has a database.
pub struct WorkspaceStore {
    db: Arc<Db>,
    workspace: String,
}

impl WorkspaceStore {
    /// The store of `workspace` (keyed by its id, see [`store_key`]) in `db`.
    pub fn new(db: Arc<Db>, workspace: &Path) -> Self {
        let workspace = store_key(workspace, &db);
        WorkspaceStore { db, workspace }
    }
}

impl KvStore for WorkspaceStore {
    fn get(&self, ns: &str, key: &str) -> Result<Option<Value>, String> {
        self.db
            .kv_get(&self.workspace, ns, key)
            .map_err(|e| e.to_string())
    }

    fn set(&self, ns: &str, key: &str, value: &Value) -> Result<(), String> {
        self.db
            .kv_set(&self.workspace, ns, key, value)
            .map_err(|e| e.to_string())
    }

    fn delete(&self, ns: &str, key: &str) -> Result<bool, String> {
        self.db
            .kv_delete(&self.workspace, ns, key)
            .map_err(|e| e.to_string())
    }

    fn list(&self, ns: &str) -> Result<Vec<String>, String> {
        self.db
            .kv_list(&self.workspace, ns)
            .map_err(|e| e.to_string())
    }
}
