//! kiln calling Restate: submitting runs to the ingress with an idempotency key, attaching to
//! an invocation from any process, looking one up and cancelling it through the admin API. The
//! front door of `kiln serve --restate-ingress` is built on this.

use super::DurableError;
use serde_json::{Value, json};

/// The services a run can be submitted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `KilnSession/{key}/turn`: a turn of a session.
    Session,
    /// `KilnRun/{key}/run`: a run without a session (the key makes it run once).
    Run,
    /// `KilnCall/{key}/call`: one tool call (an MCP task).
    Call,
}

/// An invocation as the admin API describes it.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `KilnSession` or `KilnRun`.
    pub service: String,
    /// The object or workflow key.
    pub key: String,
    /// Restate's status (`running`, `backing-off`, `completed`, ...).
    pub status: String,
    /// When it was created (RFC 3339, as the admin API gives it).
    pub created_at: String,
}

impl Invocation {
    /// True once it has ended (its output can be read at once).
    pub fn completed(&self) -> bool {
        self.status == "completed"
    }
}

/// How an invocation ended: the handler's output, or its terminal error.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The output (a run report).
    Output(Value),
    /// The terminal error: its code (409 cancelled, 504 deadline, ...) and message.
    Failed {
        /// The error's code.
        code: u16,
        /// Its message.
        message: String,
    },
}

/// A client of one Restate cluster's ingress and admin API.
#[derive(Debug, Clone)]
pub struct RestateClient {
    ingress: String,
    admin: String,
    http: reqwest::Client,
}

/// `text` as one URL path segment (Restate decodes keys once).
pub fn key_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The key of a run's approval in `KilnApproval` (its decision's one writer): the run's id
/// (its invocation id) and the approval's (its awakeable id).
pub fn approval_key(run: &str, approval: &str) -> String {
    format!("{run}/{approval}")
}

/// True for ids of the shape Restate gives invocations (`inv_` and base62), the only text
/// ever put into an admin query.
pub fn is_invocation_id(id: &str) -> bool {
    id.strip_prefix("inv_")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

impl RestateClient {
    /// A client of the ingress at `ingress` and the admin API at `admin`.
    pub fn new(ingress: &str, admin: &str) -> Result<Self, DurableError> {
        let ingress = super::register::check_url("--restate-ingress", ingress)?;
        let http =
            kiln_egress::tls::client_builder()
                .build()
                .map_err(|e| DurableError::Unreachable {
                    url: ingress.clone(),
                    message: e.to_string(),
                })?;
        Ok(RestateClient {
            ingress,
            admin: super::register::check_url("--restate-admin", admin)?,
            http,
        })
    }

    async fn call(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<(u16, String), DurableError> {
        let reply = req.send().await.map_err(|e| DurableError::Unreachable {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        let status = reply.status().as_u16();
        let body = reply.text().await.map_err(|e| DurableError::Unreachable {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        Ok((status, body))
    }

    fn answered(url: &str, status: u16, body: String) -> DurableError {
        DurableError::Answered {
            url: url.to_string(),
            status,
            body,
        }
    }

    /// Submits `input` to `target` under `key` without waiting; returns the invocation id.
    /// The same `key` (and `idempotency_key`) again returns the same invocation: it runs once.
    pub async fn submit(
        &self,
        target: Target,
        key: &str,
        idempotency_key: &str,
        input: &Value,
    ) -> Result<String, DurableError> {
        let (path, idempotency) = match target {
            Target::Session => ("KilnSession", Some(idempotency_key)),
            // Restate refuses idempotency keys on workflows: the workflow key is the run's.
            Target::Run => ("KilnRun", None),
            Target::Call => ("KilnCall", None),
        };
        let handler = match target {
            Target::Session => "turn",
            Target::Run => "run",
            Target::Call => "call",
        };
        let url = format!(
            "{}/{path}/{}/{handler}/send",
            self.ingress,
            key_segment(key)
        );
        let mut req = self.http.post(&url).json(input);
        if let Some(k) = idempotency {
            req = req.header("idempotency-key", k);
        }
        let (status, body) = self.call(req, &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        let reply: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        match reply["invocationId"].as_str() {
            Some(id) => Ok(id.to_string()),
            None => Err(Self::answered(&url, status, body)),
        }
    }

    /// Calls `KilnSession/{key}/{handler}` and waits for its answer (`describe`, `clear`).
    pub async fn session(&self, key: &str, handler: &str) -> Result<Value, DurableError> {
        let url = format!(
            "{}/KilnSession/{}/{handler}",
            self.ingress,
            key_segment(key)
        );
        let (status, body) = self.call(self.http.post(&url), &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        Ok(serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// Waits for invocation `id` to end (from any process) and returns how it ended.
    pub async fn attach(&self, id: &str) -> Result<Outcome, DurableError> {
        let url = format!(
            "{}/restate/invocation/{}/attach",
            self.ingress,
            key_segment(id)
        );
        let (status, body) = self.call(self.http.get(&url), &url).await?;
        let value: Value = serde_json::from_str(&body).unwrap_or(Value::String(body.clone()));
        if (200..300).contains(&status) {
            return Ok(Outcome::Output(value));
        }
        // A handler's terminal error comes back as `{code, message}` with that status; anything
        // else (no such invocation, Restate down) is the ingress's own answer.
        match (value["code"].as_u64(), value["message"].as_str()) {
            (Some(code), Some(message)) if status != 404 || code == 404 => Ok(Outcome::Failed {
                code: u16::try_from(code).unwrap_or(500),
                message: message.to_string(),
            }),
            _ => Err(Self::answered(&url, status, body)),
        }
    }

    /// The rows the admin API's SQL `query` selects over invocations: `None` when Restate
    /// says the query names an invocation id it cannot decode.
    async fn query_invocations(&self, query: &str) -> Result<Option<Vec<Value>>, DurableError> {
        let url = format!("{}/query", self.admin);
        let req = self
            .http
            .post(&url)
            .header("accept", "application/json")
            .json(&json!({ "query": query }));
        let (status, body) = self.call(req, &url).await?;
        // An id of the right shape that Restate cannot decode names no invocation either.
        if status == 500 && body.contains("non valid invocation id") {
            return Ok(None);
        }
        if status != 200 {
            return Err(Self::answered(&url, status, body));
        }
        let reply: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        Ok(Some(reply["rows"].as_array().cloned().unwrap_or_default()))
    }

    /// An invocation as a row of `sys_invocation` describes it.
    fn invocation(row: &Value) -> Invocation {
        let field = |k: &str| row[k].as_str().unwrap_or_default().to_string();
        Invocation {
            service: field("target_service_name"),
            key: field("target_service_key"),
            status: field("status"),
            created_at: field("created_at"),
        }
    }

    /// Invocation `id` as the admin API knows it; `None` when it does not exist.
    pub async fn lookup(&self, id: &str) -> Result<Option<Invocation>, DurableError> {
        if !is_invocation_id(id) {
            return Ok(None);
        }
        let query = format!(
            "SELECT target_service_name, target_service_key, status, created_at FROM sys_invocation WHERE id = '{id}'"
        );
        let rows = self.query_invocations(&query).await?.unwrap_or_default();
        Ok(rows.first().map(Self::invocation))
    }

    /// The runs (`KilnRun`, `KilnSession` invocations) that have not ended, with their ids,
    /// newest first, at most `limit`: where durable approvals may wait. With `actor`, only
    /// that actor's (keys are scoped by its escaped name, see `front::scoped`).
    pub async fn unfinished_runs(
        &self,
        actor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Invocation)>, DurableError> {
        // The escaped name holds letters, digits, `-_.~%` only: nothing to quote in SQL.
        let of_actor = actor
            .map(|a| {
                format!(
                    " AND starts_with(target_service_key, '{}/')",
                    key_segment(a)
                )
            })
            .unwrap_or_default();
        let query = format!(
            "SELECT id, target_service_name, target_service_key, status, created_at FROM sys_invocation WHERE target_service_name IN ('KilnRun', 'KilnSession') AND status <> 'completed'{of_actor} ORDER BY created_at DESC LIMIT {limit}"
        );
        let rows = self.query_invocations(&query).await?.unwrap_or_default();
        Ok(rows
            .iter()
            .map(|row| {
                let id = row["id"].as_str().unwrap_or_default().to_string();
                (id, Self::invocation(row))
            })
            .collect())
    }

    /// The approvals invocation `inv` (a run) waits for now: `[{id, capability, question}]`.
    pub async fn approvals(&self, inv: &Invocation) -> Result<Value, DurableError> {
        let url = format!(
            "{}/{}/{}/approvals",
            self.ingress,
            key_segment(&inv.service),
            key_segment(&inv.key)
        );
        let (status, body) = self.call(self.http.post(&url), &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        Ok(serde_json::from_str(&body).unwrap_or(Value::Array(Vec::new())))
    }

    /// Calls the shared handler `handler` of invocation `inv`'s object or workflow (such as
    /// `KilnRun`'s `response`) and returns its answer.
    pub async fn shared(&self, inv: &Invocation, handler: &str) -> Result<Value, DurableError> {
        let url = format!(
            "{}/{}/{}/{handler}",
            self.ingress,
            key_segment(&inv.service),
            key_segment(&inv.key)
        );
        let (status, body) = self.call(self.http.post(&url), &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        Ok(serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// Adds a person's message `text` to run `id` (`inv`): a `KilnRun` through its `input`
    /// handler, a `KilnSession` turn through its `KilnInbox`: `{"waiting": n}`, or Restate's
    /// answer (409: the run has ended; 429: too many messages).
    pub async fn input(
        &self,
        inv: &Invocation,
        id: &str,
        text: &str,
    ) -> Result<Value, DurableError> {
        let (service, key) = match inv.service.as_str() {
            "KilnSession" => ("KilnInbox", id),
            other => (other, inv.key.as_str()),
        };
        let url = format!(
            "{}/{}/{}/input",
            self.ingress,
            key_segment(service),
            key_segment(key)
        );
        let req = self
            .http
            .post(&url)
            .json(&serde_json::json!({"text": text}));
        let (status, body) = self.call(req, &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        serde_json::from_str(&body).map_err(|_| Self::answered(&url, status, body))
    }

    /// Decides approval `approval` of run `run` (`{"decision": "approve"}` or
    /// `{"decision": "deny", "reason"}`) through its one writer, which takes only the first
    /// decision made before the deadline: `{"taken": bool, "decision": the one that holds}`
    /// (`decision` null: the run never asked it).
    pub async fn decide(
        &self,
        run: &str,
        approval: &str,
        decision: &Value,
    ) -> Result<Value, DurableError> {
        let url = format!(
            "{}/KilnApproval/{}/decide",
            self.ingress,
            key_segment(&approval_key(run, approval))
        );
        let req = self.http.post(&url).json(decision);
        let (status, body) = self.call(req, &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        serde_json::from_str(&body).map_err(|_| Self::answered(&url, status, body))
    }

    /// Cancels invocation `id`: its next step fails as cancelled and the run ends.
    pub async fn cancel(&self, id: &str) -> Result<(), DurableError> {
        let url = format!("{}/invocations/{}/cancel", self.admin, key_segment(id));
        let (status, body) = self.call(self.http.patch(&url), &url).await?;
        if !(200..300).contains(&status) {
            return Err(Self::answered(&url, status, body));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_one_path_segment() {
        assert_eq!(key_segment("alice/s 1"), "alice%2Fs%201");
        assert_eq!(key_segment("a-b_c.d~e"), "a-b_c.d~e");
    }

    #[test]
    fn only_invocation_ids_reach_a_query() {
        assert!(is_invocation_id("inv_1a1mlWik0Qe"));
        assert!(!is_invocation_id("inv_"));
        assert!(!is_invocation_id("inv_1' OR '1'='1"));
        assert!(!is_invocation_id("run_1"));
    }
}
