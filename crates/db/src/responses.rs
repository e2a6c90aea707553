//! Stored responses of `kiln serve`'s Responses door: each response's object, the input items
//! it was asked with and the conversation through it (what `previous_response_id` continues),
//! kept per actor: one actor never reads another's.

use super::{Db, DbError};
use crate::args;
use kiln_core::model::Message;
use serde_json::Value;

/// One stored response.
#[derive(Debug, Clone)]
pub struct StoredResponse {
    /// `resp_...`.
    pub id: String,
    /// The actor that created it (`None`: the open server's one caller).
    pub owner: Option<String>,
    /// The agent that answered.
    pub agent: String,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// The Response object as the API returns it.
    pub body: Value,
    /// The items it was asked with.
    pub input_items: Vec<Value>,
    /// The conversation through this response, what a later one continues.
    pub messages: Vec<Message>,
    /// `ctx.state` at its end.
    pub state: Value,
}

fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}

/// A response's columns in the table's order (`?1` to `?8`).
fn columns(r: &StoredResponse) -> [crate::Arg<'_>; 8] {
    args![
        &r.id,
        &r.owner,
        &r.agent,
        r.created_at,
        text(&r.body),
        text(&r.input_items),
        text(&r.messages),
        text(&r.state),
    ]
}

impl Db {
    /// Stores (or replaces) a response.
    pub fn save_response(&self, r: &StoredResponse) -> Result<(), DbError> {
        self.execute(
            "INSERT INTO responses(id, owner, agent, created_at, body, input_items, messages, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(id) DO UPDATE SET owner = excluded.owner, agent = excluded.agent,
             created_at = excluded.created_at, body = excluded.body,
             input_items = excluded.input_items, messages = excluded.messages, state = excluded.state",
            &columns(r),
        )
        .map(drop)
    }

    /// Replaces a stored response with its whole version (its run ended), only while it is
    /// still stored: one deleted meanwhile stays deleted. False when there was none.
    pub fn finish_response(&self, r: &StoredResponse) -> Result<bool, DbError> {
        self.execute(
            "UPDATE responses SET agent = ?3, created_at = ?4, body = ?5, input_items = ?6,
             messages = ?7, state = ?8 WHERE id = ?1 AND owner IS NOT DISTINCT FROM ?2",
            &columns(r),
        )
        .map(|n| n > 0)
    }

    /// The response `id` if `owner` created it.
    pub fn response(
        &self,
        owner: Option<&str>,
        id: &str,
    ) -> Result<Option<StoredResponse>, DbError> {
        let Some(row) = self.query_row(
            "SELECT agent, created_at, body, input_items, messages, state FROM responses
             WHERE id = ?1 AND owner IS NOT DISTINCT FROM ?2",
            &args![id, owner],
        )?
        else {
            return Ok(None);
        };
        // A row this build cannot read is reported, never half-used.
        let parse = |what: &str, i: usize| -> Result<Value, DbError> {
            serde_json::from_str(&row.str(i))
                .map_err(|e| DbError::Corrupt(format!("response {id}: {what}: {e}")))
        };
        let messages = serde_json::from_value(parse("messages", 4)?)
            .map_err(|e| DbError::Corrupt(format!("response {id}: messages: {e}")))?;
        let input_items = match parse("input_items", 3)? {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        Ok(Some(StoredResponse {
            id: id.to_string(),
            owner: owner.map(str::to_string),
            agent: row.str(0),
            created_at: row.real(1).unwrap_or(0.0),
            body: parse("body", 2)?,
            input_items,
            messages,
            state: parse("state", 5)?,
        }))
    }

    /// Deletes the response `id` if `owner` created it; false when there was none.
    pub fn delete_response(&self, owner: Option<&str>, id: &str) -> Result<bool, DbError> {
        self.execute(
            "DELETE FROM responses WHERE id = ?1 AND owner IS NOT DISTINCT FROM ?2",
            &args![id, owner],
        )
        .map(|n| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(id: &str, owner: Option<&str>) -> StoredResponse {
        StoredResponse {
            id: id.to_string(),
            owner: owner.map(str::to_string),
            agent: "helper".to_string(),
            created_at: 1.0,
            body: serde_json::json!({"id": id, "status": "completed"}),
            input_items: vec![
                serde_json::json!({"type": "message", "role": "user", "content": "hi"}),
            ],
            messages: vec![Message::user("hi")],
            state: serde_json::json!({"n": 1}),
        }
    }

    both_databases!(
        a_response_is_read_back_only_by_its_owner,
        super::owners_only
    );

    fn owners_only(db: &Db) {
        db.save_response(&stored("resp_a", Some("alice"))).unwrap();
        db.save_response(&stored("resp_o", None)).unwrap();
        let got = db.response(Some("alice"), "resp_a").unwrap().unwrap();
        assert_eq!(got.body["status"], "completed");
        assert_eq!(got.messages.len(), 1);
        assert_eq!(got.state["n"], 1);
        assert!(db.response(Some("bob"), "resp_a").unwrap().is_none());
        assert!(db.response(None, "resp_a").unwrap().is_none());
        assert!(db.response(Some("alice"), "resp_o").unwrap().is_none());
        assert!(db.response(None, "resp_o").unwrap().is_some());
        assert!(!db.delete_response(Some("bob"), "resp_a").unwrap());
        assert!(db.delete_response(Some("alice"), "resp_a").unwrap());
        assert!(db.response(Some("alice"), "resp_a").unwrap().is_none());
    }

    both_databases!(
        a_deleted_response_is_not_finished_back,
        super::deleted_stays
    );

    fn deleted_stays(db: &Db) {
        let mut r = stored("resp_a", Some("alice"));
        db.save_response(&r).unwrap();
        r.body = serde_json::json!({"id": "resp_a", "status": "incomplete"});
        assert!(db.finish_response(&r).unwrap());
        let got = db.response(Some("alice"), "resp_a").unwrap().unwrap();
        assert_eq!(got.body["status"], "incomplete");
        assert!(db.delete_response(Some("alice"), "resp_a").unwrap());
        assert!(!db.finish_response(&r).unwrap());
        assert!(db.response(Some("alice"), "resp_a").unwrap().is_none());
    }
}
