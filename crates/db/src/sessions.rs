//! Sessions: a named conversation with its messages and `ctx.state`, continued across runs.

use super::{Db, DbError};
use kiln_core::model::Message;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

/// A saved session.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    /// Name.
    pub name: String,
    /// The agent it talks to.
    pub agent: String,
    /// `ctx.state` after the last completed step.
    pub state: Value,
    /// Messages up to the last completed step.
    pub messages: Vec<Message>,
    /// Last change, seconds since the epoch.
    pub updated_at: f64,
}

/// A line of `kiln sessions`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    /// Name.
    pub name: String,
    /// Agent.
    pub agent: String,
    /// Number of messages.
    pub messages: i64,
    /// Last change.
    pub updated_at: f64,
}

/// A saved session made ready to continue: its messages, and its `ctx.state` shared with the
/// run (`None` for a new session).
#[derive(Debug, Default)]
pub struct Resumed {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// `ctx.state` as the last completed step left it.
    pub state: Option<std::sync::Arc<std::sync::Mutex<Value>>>,
}

/// Why a session cannot be continued.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The session was started with another agent.
    #[error("session \"{name}\" belongs to agent \"{owner}\", not \"{agent}\"")]
    OtherAgent {
        /// The session as the caller named it.
        name: String,
        /// The agent it belongs to.
        owner: String,
        /// The agent asked for.
        agent: String,
    },
    /// The store could not be read.
    #[error(transparent)]
    Db(#[from] DbError),
}

fn message_from(v: &Value) -> Option<Message> {
    serde_json::from_value(v.clone()).ok()
}

impl Db {
    /// Session `key` (shown to the caller as `name`) ready for a run of `agent`: empty when
    /// new, refused when it belongs to another agent. The one place a session is restored,
    /// for `kiln ask`, the REPL and `kiln serve` alike.
    pub fn resume_session(
        &self,
        key: &str,
        name: &str,
        agent: &str,
    ) -> Result<Resumed, ResumeError> {
        match self.session(key)? {
            None => Ok(Resumed::default()),
            Some(s) if s.agent != agent => Err(ResumeError::OtherAgent {
                name: name.to_string(),
                owner: s.agent,
                agent: agent.to_string(),
            }),
            Some(s) => Ok(Resumed {
                messages: s.messages,
                state: Some(std::sync::Arc::new(std::sync::Mutex::new(s.state))),
            }),
        }
    }

    /// A session, or `None` when there is none of that name.
    pub fn session(&self, name: &str) -> Result<Option<Session>, DbError> {
        let conn = self.conn();
        let head: Option<(String, String, f64)> = conn
            .query_row(
                "SELECT agent, state, updated_at FROM sessions WHERE name = ?1",
                params![name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((agent, state, updated_at)) = head else {
            return Ok(None);
        };
        let mut stmt = conn
            .prepare("SELECT body FROM session_messages WHERE session = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let bodies: Vec<String> = stmt
            .query_map(params![name], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .flatten()
            .collect();
        let mut messages: Vec<Message> = bodies
            .iter()
            .filter_map(|b| serde_json::from_str::<Value>(b).ok())
            .filter_map(|v| message_from(&v))
            .collect();
        // A step is committed whole, but be safe: never continue with calls that have no results.
        while matches!(messages.last(), Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty())
            || matches!(messages.last(), Some(Message::User { .. }))
        {
            messages.pop();
        }
        Ok(Some(Session {
            name: name.to_string(),
            agent,
            state: serde_json::from_str(&state).unwrap_or(Value::Null),
            messages,
            updated_at,
        }))
    }

    /// All sessions, most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT s.name, s.agent, (SELECT COUNT(*) FROM session_messages m WHERE m.session = s.name), s.updated_at FROM sessions s ORDER BY s.updated_at DESC")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(SessionSummary {
                    name: r.get(0)?,
                    agent: r.get(1)?,
                    messages: r.get(2)?,
                    updated_at: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Whether a run of session `name` is still running (one whose process is gone is not):
    /// its next step would write after messages a compaction replaced.
    pub fn session_busy(&self, name: &str) -> Result<bool, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT owner FROM runs WHERE session = ?1 AND status = 'running'")
            .map_err(|e| self.err(e))?;
        let owners: Vec<Option<String>> = stmt
            .query_map(params![name], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .flatten()
            .collect();
        Ok(owners
            .iter()
            .any(|o| !super::runs::owner_gone(o.as_deref())))
    }

    /// Replaces session `name`'s messages by `messages` (a compacted transcript), unless the
    /// session changed since it was read (its `updated_at` is no longer `read_at`): a run
    /// that went on meanwhile is never overwritten.
    pub fn replace_session_messages(
        &self,
        name: &str,
        read_at: f64,
        messages: &[Message],
    ) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let changed = tx
            .execute(
                "UPDATE sessions SET updated_at = ?3 WHERE name = ?1 AND updated_at = ?2",
                params![name, read_at, super::now().max(read_at + 1e-3)],
            )
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Err(DbError::SessionChanged(name.to_string()));
        }
        tx.execute(
            "DELETE FROM session_messages WHERE session = ?1",
            params![name],
        )
        .map_err(|e| self.err(e))?;
        for (seq, m) in messages.iter().enumerate() {
            let body = serde_json::to_string(m).map_err(|e| DbError::Corrupt(e.to_string()))?;
            tx.execute(
                "INSERT INTO session_messages(session, seq, body) VALUES(?1, ?2, ?3)",
                params![name, seq as i64, body],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Deletes a session and its messages.
    pub fn delete_session(&self, name: &str) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let n = tx
            .execute("DELETE FROM sessions WHERE name = ?1", params![name])
            .map_err(|e| self.err(e))?;
        tx.execute(
            "DELETE FROM session_messages WHERE session = ?1",
            params![name],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        if n == 0 {
            Err(DbError::NoSession(name.to_string()))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Db;
    use kiln_core::model::Message;
    use rusqlite::params;

    fn run_of(db: &Db, id: &str, owner: &str, status: &str) {
        db.conn()
            .execute(
                "INSERT INTO runs(id, agent, session, started_at, status, owner) VALUES(?1, 'a', 's', 0, ?2, ?3)",
                params![id, status, owner],
            )
            .expect("a run");
    }

    #[test]
    fn a_session_is_busy_while_a_living_process_runs_it_and_replaced_only_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(&dir.path().join("k.db")).expect("db");
        db.conn()
            .execute(
                "INSERT INTO sessions(name, agent, state, created_at, updated_at) VALUES('s', 'a', '{}', 1.0, 1.0)",
                [],
            )
            .expect("a session");
        assert!(!db.session_busy("s").expect("busy?"));
        let me = crate::runs::this_process();
        let gone = format!(
            "{}:999999999",
            me.rsplit_once(':').map_or(me, |(host, _)| host)
        );
        run_of(&db, "r1", me, "ok");
        run_of(&db, "r2", &gone, "running");
        assert!(
            !db.session_busy("s").expect("busy?"),
            "ended, or its process gone"
        );
        run_of(&db, "r3", me, "running");
        assert!(db.session_busy("s").expect("busy?"), "this process runs it");

        let answer = Message::Assistant {
            content: "latest".into(),
            tool_calls: Vec::new(),
            replay: None,
        };
        let m = [Message::user("summary"), answer];
        assert!(
            db.replace_session_messages("s", 0.5, &m).is_err(),
            "changed since read"
        );
        db.replace_session_messages("s", 1.0, &m).expect("replaced");
        let s = db.session("s").expect("read").expect("there");
        assert_eq!(s.messages, m);
    }
}
