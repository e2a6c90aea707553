//! MCP tasks as Restate invocations: under `kiln serve --restate` a tool call run as a task is
//! a `KilnCall` workflow, so it survives the worker that started it and any worker answers
//! `tasks/get` and `tasks/cancel` for it. The task id is the invocation id; the workflow key is
//! under its owner's prefix (the actor, and the session that started it), which is how one
//! client is kept from another's tasks.

use kiln_mcp::tasks::durable::{
    DurableCall, DurableFuture, DurableState, DurableTask, DurableTasks, TaskOwner,
};
use kiln_restate::{Outcome, RestateClient, Target, key_segment};
use serde_json::json;

/// The Restate engine of a fleet's MCP tasks.
pub struct RestateTasks {
    client: RestateClient,
}

impl RestateTasks {
    /// Tasks submitted to, and read from, the cluster `client` reaches.
    pub fn new(client: RestateClient) -> Self {
        RestateTasks { client }
    }
}

/// The key prefix of `owner`'s tasks: `ACTOR/~/` for a stateless request's, `ACTOR/s.SESSION/`
/// for a session's (escaped segments never hold `/`, and `~` alone is never `s.`-anything, so
/// no owner's prefix starts another's).
fn prefix(owner: &TaskOwner) -> String {
    let actor = key_segment(owner.actor.as_deref().unwrap_or("anonymous"));
    match &owner.session {
        None => format!("{actor}/~/"),
        Some(session) => format!("{actor}/s.{}/", key_segment(session)),
    }
}

impl DurableTasks for RestateTasks {
    fn start(&self, call: DurableCall) -> DurableFuture<'_, String> {
        Box::pin(async move {
            let key = format!("{}{}", prefix(&call.owner), uuid::Uuid::new_v4());
            let input = json!({
                "tool": call.tool,
                "args": call.args,
                "actor": call.actor,
                "caps": call.caps,
                "ask": call.ask,
            });
            self.client
                .submit(Target::Call, &key, &key, &input)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a TaskOwner,
    ) -> DurableFuture<'a, Option<DurableTask>> {
        Box::pin(async move {
            let found = self.client.lookup(id).await.map_err(|e| e.to_string())?;
            let Some(inv) =
                found.filter(|i| i.service == "KilnCall" && i.key.starts_with(&prefix(owner)))
            else {
                return Ok(None);
            };
            let state = if !inv.completed() {
                DurableState::Working
            } else {
                match self.client.attach(id).await.map_err(|e| e.to_string())? {
                    Outcome::Output(v) => {
                        DurableState::Completed(v.as_object().cloned().unwrap_or_default())
                    }
                    Outcome::Failed { code: 409, .. } => DurableState::Cancelled,
                    Outcome::Failed { message, .. } => {
                        DurableState::Failed(kiln_core::error::public::scrub(&message))
                    }
                }
            };
            Ok(Some(DurableTask {
                state,
                created_at: inv.created_at,
            }))
        })
    }

    fn cancel<'a>(&'a self, id: &'a str, owner: &'a TaskOwner) -> DurableFuture<'a, bool> {
        Box::pin(async move {
            let Some(task) = self.get(id, owner).await? else {
                return Ok(false);
            };
            if task.state == DurableState::Working {
                self.client.cancel(id).await.map_err(|e| e.to_string())?;
            }
            Ok(true)
        })
    }

    fn owns(&self, id: &str) -> bool {
        kiln_restate::is_invocation_id(id)
    }
}
