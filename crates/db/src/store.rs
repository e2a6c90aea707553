//! The key-value store behind `store_*` and the `storage` tool, namespaced per workspace.

use super::{Db, DbError, now};
use crate::args;
use kiln_core::services::{KvStore, workspace_id};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

impl Db {
    /// A stored value; `None` when the key is not there. A value that is not JSON (written
    /// by something else) reads as a database error too: it is not a missing key.
    pub fn kv_get(&self, workspace: &str, ns: &str, key: &str) -> Result<Option<Value>, DbError> {
        let row = self.query_row(
            "SELECT value FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
            &args![workspace, ns, key],
        )?;
        row.map(|r| {
            serde_json::from_str(&r.str(0)).map_err(|e| {
                DbError::Corrupt(format!(
                    "{}: the stored value of {ns}/{key} is not JSON: {e}",
                    self.path().display()
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
    ) -> Result<(), DbError> {
        self.execute(
            "INSERT INTO kv(workspace, ns, key, value, updated_at) VALUES(?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(workspace, ns, key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
            &args![workspace, ns, key, value.to_string(), now()],
        )
        .map(drop)
    }

    /// Deletes a key; true when it existed.
    pub fn kv_delete(&self, workspace: &str, ns: &str, key: &str) -> Result<bool, DbError> {
        self.execute(
            "DELETE FROM kv WHERE workspace=?1 AND ns=?2 AND key=?3",
            &args![workspace, ns, key],
        )
        .map(|n| n > 0)
    }

    /// Keys of a namespace, sorted.
    pub fn kv_list(&self, workspace: &str, ns: &str) -> Result<Vec<String>, DbError> {
        let rows = self.query(
            "SELECT key FROM kv WHERE workspace=?1 AND ns=?2 ORDER BY key",
            &args![workspace, ns],
        )?;
        Ok(rows.iter().map(|r| r.str(0)).collect())
    }

    /// Moves every key of workspace `from` to workspace `to` (keys `to` already has stay).
    pub fn kv_rekey(&self, from: &str, to: &str) -> Result<(), DbError> {
        self.transaction(|tx| {
            tx.execute(
                "INSERT INTO kv(workspace, ns, key, value, updated_at)
                 SELECT ?2, ns, key, value, updated_at FROM kv WHERE workspace=?1
                 ON CONFLICT(workspace, ns, key) DO NOTHING",
                &args![from, to],
            )?;
            tx.execute("DELETE FROM kv WHERE workspace=?1", &args![from])
                .map(drop)
        })
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

#[cfg(test)]
mod tests {
    use crate::Db;
    use serde_json::json;

    both_databases!(
        values_are_kept_per_workspace_listed_deleted_and_moved,
        super::kept_listed_moved
    );

    fn kept_listed_moved(db: &Db) {
        db.kv_set("w1", "ns", "b", &json!({"n": 2})).expect("set");
        db.kv_set("w1", "ns", "a", &json!("one")).expect("set");
        db.kv_set("w1", "ns", "a", &json!("two"))
            .expect("set again");
        db.kv_set("w2", "ns", "a", &json!("other")).expect("set");
        assert_eq!(db.kv_get("w1", "ns", "a").expect("get"), Some(json!("two")));
        assert_eq!(db.kv_get("w1", "ns", "zz").expect("get"), None);
        assert_eq!(db.kv_list("w1", "ns").expect("list"), ["a", "b"]);
        assert!(db.kv_delete("w1", "ns", "b").expect("delete"));
        assert!(!db.kv_delete("w1", "ns", "b").expect("delete again"));
        db.kv_set("w1", "ns", "c", &json!(3)).expect("set");
        db.kv_rekey("w1", "w2").expect("rekey");
        assert_eq!(db.kv_list("w1", "ns").expect("list"), Vec::<String>::new());
        assert_eq!(
            db.kv_get("w2", "ns", "a").expect("get"),
            Some(json!("other")),
            "a key the new workspace had stays"
        );
        assert_eq!(db.kv_get("w2", "ns", "c").expect("get"), Some(json!(3)));
    }
}
