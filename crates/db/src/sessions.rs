//! Sessions: a named conversation with its messages and `ctx.state`, continued across runs.

use super::{Db, DbError};
use crate::args;
use kiln_core::model::Message;
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
        let Some(head) = self.query_row(
            "SELECT agent, state, updated_at FROM sessions WHERE name = ?1",
            &args![name],
        )?
        else {
            return Ok(None);
        };
        let bodies = self.query(
            "SELECT body FROM session_messages WHERE session = ?1 ORDER BY seq",
            &args![name],
        )?;
        let mut messages: Vec<Message> = bodies
            .iter()
            .filter_map(|b| serde_json::from_str::<Value>(&b.str(0)).ok())
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
            agent: head.str(0),
            state: serde_json::from_str(&head.str(1)).unwrap_or(Value::Null),
            messages,
            updated_at: head.real(2).unwrap_or(0.0),
        }))
    }

    /// All sessions, most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, DbError> {
        let rows = self.query(
            "SELECT s.name, s.agent, (SELECT COUNT(*) FROM session_messages m WHERE m.session = s.name), s.updated_at FROM sessions s ORDER BY s.updated_at DESC",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| SessionSummary {
                name: r.str(0),
                agent: r.str(1),
                messages: r.int(2).unwrap_or(0),
                updated_at: r.real(3).unwrap_or(0.0),
            })
            .collect())
    }

    /// Whether a run of session `name` is still running (one whose process is gone is not):
    /// its next step would write after messages a compaction replaced.
    pub fn session_busy(&self, name: &str) -> Result<bool, DbError> {
        let owners = self.query(
            "SELECT owner, (SELECT seen_at FROM processes p WHERE p.owner = runs.owner)
             FROM runs WHERE session = ?1 AND status = 'running'",
            &args![name],
        )?;
        Ok(owners.iter().any(|o| {
            let silent = o
                .real(1)
                .is_some_and(|seen| crate::now() - seen > super::runs::SILENT_AFTER);
            !silent && !super::runs::owner_gone(o.text(0).as_deref())
        }))
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
        let bodies = messages
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| DbError::Corrupt(e.to_string()))?;
        let changed = self.transaction(|tx| {
            let changed = tx.execute(
                "UPDATE sessions SET updated_at = ?3 WHERE name = ?1 AND updated_at = ?2",
                &args![name, read_at, super::now().max(read_at + 1e-3)],
            )?;
            if changed == 0 {
                return Ok(false);
            }
            tx.execute(
                "DELETE FROM session_messages WHERE session = ?1",
                &args![name],
            )?;
            for (seq, body) in bodies.iter().enumerate() {
                tx.execute(
                    "INSERT INTO session_messages(session, seq, body) VALUES(?1, ?2, ?3)",
                    &args![name, seq as i64, body],
                )?;
            }
            Ok(true)
        })?;
        if changed {
            Ok(())
        } else {
            Err(DbError::SessionChanged(name.to_string()))
        }
    }

    /// Deletes a session and its messages.
    pub fn delete_session(&self, name: &str) -> Result<(), DbError> {
        let n = self.transaction(|tx| {
            let n = tx.execute("DELETE FROM sessions WHERE name = ?1", &args![name])?;
            tx.execute(
                "DELETE FROM session_messages WHERE session = ?1",
                &args![name],
            )?;
            Ok(n)
        })?;
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

    fn run_of(db: &Db, id: &str, owner: &str, status: &str) {
        db.execute(
            "INSERT INTO runs(id, agent, session, started_at, status, owner) VALUES(?1, 'a', 's', 0, ?2, ?3)",
            &crate::args![id, status, owner],
        )
        .expect("a run");
    }

    both_databases!(
        a_session_is_busy_while_a_living_process_runs_it_and_replaced_only_unchanged,
        super::busy_and_replaced
    );

    fn busy_and_replaced(db: &Db) {
        db.execute(
            "INSERT INTO sessions(name, agent, state, created_at, updated_at) VALUES('s', 'a', '{}', 1.0, 1.0)",
            &[],
        )
        .expect("a session");
        assert!(!db.session_busy("s").expect("busy?"));
        let me = crate::runs::this_process();
        let gone = format!(
            "{}:999999999",
            me.rsplit_once(':').map_or(me, |(host, _)| host)
        );
        run_of(db, "r1", me, "ok");
        run_of(db, "r2", &gone, "running");
        assert!(
            !db.session_busy("s").expect("busy?"),
            "ended, or its process gone"
        );
        run_of(db, "r3", me, "running");
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
