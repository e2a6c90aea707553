//! MCP tasks across servers. As Restate invocations: under `kiln serve --restate` a tool call run as a task is
//! a `KilnCall` workflow, so it survives the worker that started it and any worker answers
//! `tasks/get` and `tasks/cancel` for it. The task id is the invocation id; the workflow key is
//! under its owner's prefix (the actor, and the session that started it), which is how one
//! client is kept from another's tasks. Or, on PostgreSQL without Restate, run where they
//! started and kept in the shared database ([`DatabaseTasks`]).

use kiln_db::listen::Notice;
use kiln_db::{Db, args};
use kiln_mcp::McpServer;
use kiln_mcp::tasks::durable::{
    DurableCall, DurableFuture, DurableState, DurableTask, DurableTasks, SharedTasks, TaskOwner,
};
use kiln_restate::{Outcome, RestateClient, Target, key_segment};
use serde_json::{Value, json};
use std::sync::Arc;

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

/// The channel a task's cancellation goes to the process running it, as the task's id.
pub const TASKS_CHANNEL: &str = "kiln_tasks";

/// MCP tasks kept in the database several `kiln serve` share (PostgreSQL): a task runs where
/// it started; any server answers `tasks/get` for it and passes `tasks/cancel` on to its
/// process. A task whose process stopped saying it is alive reads as failed.
pub struct DatabaseTasks {
    db: Arc<Db>,
}

/// Shares `server`'s tasks through `db`, and cancels here those another server was asked to
/// cancel (heard over `LISTEN`; after a reconnection, read from the table).
pub fn share_tasks(server: McpServer, db: Arc<Db>) -> McpServer {
    let shared = Arc::new(DatabaseTasks { db: db.clone() });
    let (server, tasks) = server.with_shared_tasks(shared);
    if let Some(mut notices) = db.listen(&[TASKS_CHANNEL]) {
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                match notice {
                    Notice::Heard { payload, .. } => tasks.cancel_here(&payload),
                    Notice::Listening => {
                        let db = db.clone();
                        let asked = tokio::task::spawn_blocking(move || {
                            db.query(
                                "SELECT id FROM mcp_tasks WHERE process = ?1 AND cancel = 1
                                 AND state = 'working'",
                                &args![kiln_db::runs::this_process()],
                            )
                        });
                        if let Ok(Ok(rows)) = asked.await {
                            for row in rows {
                                tasks.cancel_here(&row.str(0));
                            }
                        }
                    }
                }
            }
        });
    }
    server
}

impl SharedTasks for DatabaseTasks {
    fn started(&self, id: &str, owner: &TaskOwner, created_at: &str) {
        let written = self.db.execute(
            "INSERT INTO mcp_tasks(id, actor, session, process, state, created_at, updated_at)
             VALUES(?1, ?2, ?3, ?4, 'working', ?5, ?6)",
            &args![
                id,
                &owner.actor,
                &owner.session,
                kiln_db::runs::this_process(),
                created_at,
                kiln_db::now()
            ],
        );
        if let Err(e) = written {
            tracing::warn!(task = %id, "the task was not shared with the other servers: {e}");
        }
    }

    fn ended(&self, id: &str, state: &DurableState) {
        let (word, result) = match state {
            DurableState::Working => return,
            DurableState::Completed(result) => ("completed", Some(Value::Object(result.clone()))),
            DurableState::Failed(message) => ("failed", Some(json!({"message": message}))),
            DurableState::Cancelled => ("cancelled", None),
        };
        let (db, id) = (self.db.clone(), id.to_string());
        // The task's own future: the write waits off the runtime's workers.
        tokio::task::spawn_blocking(move || {
            let written = db.execute(
                "UPDATE mcp_tasks SET state = ?2, result = ?3, updated_at = ?4 WHERE id = ?1",
                &args![&id, word, result.map(|r| r.to_string()), kiln_db::now()],
            );
            if let Err(e) = written {
                tracing::warn!(task = %id, "the task's end was not shared with the other servers: {e}");
            }
        });
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a TaskOwner,
    ) -> DurableFuture<'a, Option<DurableTask>> {
        let (db, id, owner) = (self.db.clone(), id.to_string(), owner.clone());
        Box::pin(async move {
            let row = tokio::task::spawn_blocking(move || {
                db.query_row(
                    "SELECT state, result, created_at,
                     (SELECT seen_at FROM processes p WHERE p.owner = mcp_tasks.process)
                     FROM mcp_tasks WHERE id = ?1 AND actor IS NOT DISTINCT FROM ?2
                     AND session IS NOT DISTINCT FROM ?3",
                    &args![&id, &owner.actor, &owner.session],
                )
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
            Ok(row.map(|r| task_of(&r)))
        })
    }

    fn cancel<'a>(&'a self, id: &'a str, owner: &'a TaskOwner) -> DurableFuture<'a, bool> {
        let (db, task, owner) = (self.db.clone(), id.to_string(), owner.clone());
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                db.execute(
                    "UPDATE mcp_tasks SET cancel = 1 WHERE id = ?1 AND state = 'working'
                     AND actor IS NOT DISTINCT FROM ?2 AND session IS NOT DISTINCT FROM ?3",
                    &args![&task, &owner.actor, &owner.session],
                )
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
            if asked == 0 {
                return Ok(false);
            }
            self.db
                .notify(TASKS_CHANNEL, id)
                .await
                .map_err(|e| e.to_string())?;
            Ok(true)
        })
    }
}

/// A kept task's row (`state, result, created_at, its process's last beat`) as its state.
fn task_of(r: &kiln_db::sql::Row) -> DurableTask {
    let result: Option<Value> = r.text(1).and_then(|t| serde_json::from_str(&t).ok());
    let silent = r
        .real(3)
        .is_some_and(|seen| kiln_db::now() - seen > kiln_db::runs::SILENT_AFTER);
    let state = match (r.str(0).as_str(), result) {
        ("completed", Some(Value::Object(result))) => DurableState::Completed(result),
        ("failed", Some(error)) => DurableState::Failed(
            error["message"]
                .as_str()
                .unwrap_or("the task failed")
                .to_string(),
        ),
        ("cancelled", _) => DurableState::Cancelled,
        ("working", _) if silent => {
            DurableState::Failed("the server running the task stopped".into())
        }
        ("working", _) => DurableState::Working,
        _ => DurableState::Failed("the task's kept state could not be read".into()),
    };
    DurableTask {
        state,
        created_at: r.str(2),
    }
}
