//! A run's approvals kept in the database the servers share (`kiln serve` on PostgreSQL): each
//! approval asked is recorded, and each decision is claimed there before it takes effect, so
//! a person may decide through any server and of two racing decisions (on two servers, or a
//! decision and the deadline) exactly one wins.

use kiln_db::Db;
use kiln_db::approvals::{Asked, AskedApproval, Claim};
use serde_json::Value;
use std::sync::Arc;

/// Where one run's approvals are kept for the other servers.
pub struct Book {
    db: Arc<Db>,
    run: String,
    actor: Option<String>,
}

impl Book {
    /// Run `run`'s approvals (acting for `actor`) in `db`.
    pub fn new(db: Arc<Db>, run: String, actor: Option<String>) -> Self {
        Book { db, run, actor }
    }

    /// Records that the run waits for `ask`; a database that cannot is logged, and the
    /// approval can still be decided through this server.
    pub fn record(&self, ask: &Asked) {
        let asked = AskedApproval {
            run_id: self.run.clone(),
            actor: self.actor.clone(),
            ask: ask.clone(),
        };
        if let Err(e) = self.db.approval_asked(&asked) {
            tracing::warn!(run_id = %self.run, approval = %ask.id, "the approval was not shared with the other servers: {e}");
        }
    }

    /// Claims `decision` (`{"decision": ...}`) for approval `id`: whether it took effect, or
    /// which one did.
    pub fn claim(&self, id: &str, decision: &Value) -> Result<Claim, kiln_db::DbError> {
        self.db.approval_claim(&self.run, id, decision)
    }

    /// The decision that took effect on approval `id`, once one did (through any server).
    pub fn decided(&self, id: &str) -> Option<Value> {
        match self.db.approval_decision(&self.run, id) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(run_id = %self.run, approval = %id, "cannot read the approval's decision: {e}");
                None
            }
        }
    }
}
