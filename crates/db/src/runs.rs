//! Reading the run log (what `kiln logs` shows): runs with their totals, tool calls, messages.
//! The agent crate's recorder writes these tables.

use crate::args;
use crate::sql::Row;
use crate::{Db, DbError};
use kiln_core::failure::ToolFailure;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A run as `kiln logs` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// Run id.
    pub id: String,
    /// Agent.
    pub agent: String,
    /// Provider and model.
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Session, if any.
    pub session: Option<String>,
    /// The prompt.
    pub prompt: Option<String>,
    /// The answer.
    pub answer: Option<String>,
    /// `running`, `ok`, `error` or `cancelled`.
    pub status: String,
    /// The error, if any.
    pub error: Option<String>,
    /// Start, seconds since the epoch.
    pub started_at: f64,
    /// End, if it ended.
    pub ended_at: Option<f64>,
    /// Model replies.
    pub rounds: i64,
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
    /// Who the run acted for, if anyone was named.
    pub actor: Option<String>,
    /// What it cost, from its model's price (`None`: no price known).
    pub cost_usd: Option<f64>,
    /// The run that started it (an agent calling it as a tool, a pipeline).
    pub parent: Option<String>,
    /// The process that ran it (`HOST:PID`).
    pub owner: Option<String>,
    /// Its OpenTelemetry trace id (32 hex digits), when traces were exported.
    pub trace_id: Option<String>,
    /// The eval run it belongs to (`kiln eval`), if any.
    pub eval_id: Option<String>,
    /// When its process last said it was alive (processes sharing a PostgreSQL database
    /// do, every [`BEAT`]), seconds since the epoch.
    #[serde(skip)]
    pub owner_seen: Option<f64>,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolRow>,
    /// Model replies in order: who answered each (a fallback chain's may not be the run's own).
    pub model_calls: Vec<ModelRow>,
}

/// A logged model reply.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// Round.
    pub round: i64,
    /// The provider that answered (`None` in runs logged before kiln recorded it).
    pub provider: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// Prompt tokens.
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// Of those, reasoning tokens, where the wire reported them.
    pub reasoning_tokens: Option<i64>,
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// How long the request took, in milliseconds.
    pub duration_ms: Option<f64>,
}

/// A logged tool call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolRow {
    /// Round.
    pub round: i64,
    /// Tool.
    pub name: String,
    /// Arguments.
    pub args: Value,
    /// Outcome JSON.
    pub outcome: Value,
    /// Failed.
    pub is_error: bool,
    /// Milliseconds.
    pub duration_ms: f64,
    /// Script version that ran it.
    pub script_version: Option<String>,
    /// The call id (`ID/N` for a call made inside call `ID`, such as a code-mode program's).
    pub call_id: Option<String>,
    /// What it told its caller while it ran: progress and emitted events (`[]`: nothing).
    pub notes: Value,
}

impl ToolRow {
    /// How the call failed, read from its logged outcome (`{"error": {"kind", "message",
    /// "detail"}}`): `None` when it succeeded, or when its error is not one this kiln reads (a
    /// kind only a newer kiln knows).
    pub fn failure(&self) -> Option<ToolFailure> {
        ToolFailure::deserialize(self.outcome.get("error")?).ok()
    }
}

impl Db {
    /// Says this process (a run's owner, [`this_process`]) is alive now.
    pub fn beat(&self) -> Result<(), DbError> {
        self.execute(
            "INSERT INTO processes(owner, seen_at) VALUES(?1, ?2)
             ON CONFLICT(owner) DO UPDATE SET seen_at = excluded.seen_at",
            &args![this_process(), crate::now()],
        )
        .map(drop)
    }
}

pub use kiln_core::context::this_process;

pub use crate::postgres::BEAT;

/// How long a process may stay silent before its running runs show `interrupted`: six beats
/// (a busy server's beat may be late; machines' clocks may differ by a few seconds).
pub const SILENT_AFTER: f64 = 30.0;

impl RunRow {
    /// The status to show: `interrupted` for a run still `running` whose process is gone
    /// (killed before it could record its end): a process of this host that no longer
    /// exists, or one on any machine sharing the database that stopped saying it is alive.
    pub fn shown_status(&self) -> &str {
        let silent = self
            .owner_seen
            .is_some_and(|seen| crate::now() - seen > SILENT_AFTER);
        let gone = self.status == "running" && (silent || owner_gone(self.owner.as_deref()));
        if gone { "interrupted" } else { &self.status }
    }
}

/// Whether a run's owner (`HOST:PID`) is a process of this host that is gone.
pub(crate) fn owner_gone(owner: Option<&str>) -> bool {
    std::path::Path::new("/proc/self").exists()
        && owner.is_some_and(|owner| {
            owner.rsplit_once(':').is_some_and(|(host, pid)| {
                host == kiln_core::context::host_name()
                    && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            })
        })
}

impl ToolRow {
    /// Whether another call (a program) made it.
    pub fn is_nested(&self) -> bool {
        self.call_id.as_deref().is_some_and(|id| id.contains('/'))
    }
}

/// Which runs `kiln logs` shows.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    /// Only this agent.
    pub agent: Option<String>,
    /// Only runs that called this tool.
    pub tool: Option<String>,
    /// Only runs started after this time (seconds since the epoch).
    pub since: Option<f64>,
    /// Only runs of this eval run (`kiln eval`, `kiln logs --eval`).
    pub eval: Option<String>,
    /// Only the run with this id.
    pub run: Option<String>,
    /// Only runs acting for this actor.
    pub actor: Option<String>,
    /// Only runs with this status (`running`, `ok`, `error`, `cancelled`).
    pub status: Option<String>,
    /// At most this many runs (newest first); 0 for all.
    pub limit: usize,
}

/// A row of `runs` as [`Db::runs`] selects it, without its calls.
fn run_row(r: &Row) -> RunRow {
    RunRow {
        id: r.str(0),
        agent: r.str(1),
        provider: r.text(2),
        model: r.text(3),
        session: r.text(4),
        prompt: r.text(5),
        answer: r.text(6),
        status: r.str(7),
        error: r.text(8),
        started_at: r.real(9).unwrap_or(0.0),
        ended_at: r.real(10),
        rounds: r.int(11).unwrap_or(0),
        input_tokens: r.int(12).unwrap_or(0),
        output_tokens: r.int(13).unwrap_or(0),
        actor: r.text(14),
        cost_usd: r.real(15),
        parent: r.text(16),
        owner: r.text(17),
        trace_id: r.text(18),
        eval_id: r.text(19),
        owner_seen: r.real(20),
        tool_calls: Vec::new(),
        model_calls: Vec::new(),
    }
}

/// A column's JSON text as a value (`null` when absent or unreadable).
fn json(r: &Row, i: usize) -> Value {
    r.text(i)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Runs forgotten per transaction by [`Db::prune_runs`]: small enough that a run writing its
/// step never waits long for the lock.
const PRUNE_BATCH: i64 = 500;

impl Db {
    /// Forgets the runs that ended before `before` (seconds since the epoch), with their
    /// steps, in small transactions so running runs keep writing meanwhile; sessions stay
    /// until deleted. How many runs went.
    pub fn prune_runs(&self, before: f64) -> Result<usize, DbError> {
        let mut total = 0;
        loop {
            let gone = self.transaction(|tx| {
                let ids = tx.query(
                    "SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?1 LIMIT ?2",
                    &args![before, PRUNE_BATCH],
                )?;
                for id in &ids {
                    let id = id.str(0);
                    tx.execute("DELETE FROM steps WHERE run_id = ?1", &args![&id])?;
                    tx.execute("DELETE FROM runs WHERE id = ?1", &args![&id])?;
                }
                Ok(ids.len())
            })?;
            total += gone;
            if (gone as i64) < PRUNE_BATCH {
                return Ok(total);
            }
        }
    }

    /// Runs matching `filter`, newest first, with their tool calls.
    pub fn runs(&self, filter: &LogFilter) -> Result<Vec<RunRow>, DbError> {
        let mut runs = self.run_rows(filter)?;
        for run in runs.iter_mut() {
            run.tool_calls = self.tool_calls(&run.id)?;
            run.model_calls = self.model_calls(&run.id)?;
        }
        Ok(runs)
    }

    /// Runs matching `filter`, newest first, without their calls (a list of runs).
    pub fn run_rows(&self, filter: &LogFilter) -> Result<Vec<RunRow>, DbError> {
        let limit = if filter.limit == 0 {
            i64::MAX
        } else {
            filter.limit as i64
        };
        let rows = self.query(
            // A run's totals are written when it ends; a running run's are counted here.
            // (The casts name the placeholders' types for PostgreSQL, which cannot infer
            // them from `IS NULL`, and keep its sums integers.)
            "SELECT id, agent, provider, model, session, prompt, answer, status, error, started_at, ended_at,
             CASE WHEN ended_at IS NULL THEN (SELECT COUNT(*) FROM model_calls m WHERE m.run_id = runs.id) ELSE rounds END,
             CASE WHEN ended_at IS NULL THEN (SELECT CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) FROM model_calls m WHERE m.run_id = runs.id) ELSE input_tokens END,
             CASE WHEN ended_at IS NULL THEN (SELECT CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT) FROM model_calls m WHERE m.run_id = runs.id) ELSE output_tokens END,
             actor, cost_usd, parent, owner, trace_id, eval_id,
             (SELECT seen_at FROM processes p WHERE p.owner = runs.owner)
             FROM runs WHERE (CAST(?1 AS TEXT) IS NULL OR agent = ?1)
             AND (CAST(?2 AS DOUBLE PRECISION) IS NULL OR started_at >= ?2)
             AND (CAST(?3 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM tool_calls t WHERE t.run_id = runs.id AND t.name = ?3))
             AND (CAST(?5 AS TEXT) IS NULL OR eval_id = ?5) AND (CAST(?6 AS TEXT) IS NULL OR id = ?6)
             AND (CAST(?7 AS TEXT) IS NULL OR actor = ?7) AND (CAST(?8 AS TEXT) IS NULL OR status = ?8)
             ORDER BY started_at DESC LIMIT ?4",
            &args![
                &filter.agent,
                filter.since,
                &filter.tool,
                limit,
                &filter.eval,
                &filter.run,
                &filter.actor,
                &filter.status
            ],
        )?;
        Ok(rows.iter().map(run_row).collect())
    }

    /// The run with this id, with its tool calls; `None` when none was logged.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>, DbError> {
        let filter = LogFilter {
            run: Some(run_id.to_string()),
            ..LogFilter::default()
        };
        Ok(self.runs(&filter)?.pop())
    }

    /// The runs of one eval run (`kiln eval`), newest first, with their tool calls.
    pub fn eval_runs(&self, eval_id: &str) -> Result<Vec<RunRow>, DbError> {
        self.runs(&LogFilter {
            eval: Some(eval_id.to_string()),
            ..LogFilter::default()
        })
    }

    /// A run's tool calls, in order.
    fn tool_calls(&self, run_id: &str) -> Result<Vec<ToolRow>, DbError> {
        let rows = self.query(
            "SELECT round, name, args, outcome, is_error, duration_ms, script_version, call_id, notes FROM tool_calls WHERE run_id = ?1 ORDER BY step, part",
            &args![run_id],
        )?;
        Ok(rows
            .iter()
            .map(|r| ToolRow {
                round: r.int(0).unwrap_or(0),
                name: r.str(1),
                args: json(r, 2),
                outcome: json(r, 3),
                is_error: r.int(4).unwrap_or(0) != 0,
                duration_ms: r.real(5).unwrap_or(0.0),
                script_version: r.text(6),
                call_id: r.text(7),
                notes: match json(r, 8) {
                    Value::Null => Value::Array(Vec::new()),
                    notes => notes,
                },
            })
            .collect())
    }

    /// A run's model replies, by round.
    fn model_calls(&self, run_id: &str) -> Result<Vec<ModelRow>, DbError> {
        let rows = self.query(
            "SELECT round, provider, model, input_tokens, output_tokens, reasoning_tokens, stop_reason,
             duration_ms FROM model_calls WHERE run_id = ?1 ORDER BY round",
            &args![run_id],
        )?;
        Ok(rows
            .iter()
            .map(|r| ModelRow {
                round: r.int(0).unwrap_or(0),
                provider: r.text(1),
                model: r.text(2),
                input_tokens: r.int(3),
                output_tokens: r.int(4),
                reasoning_tokens: r.int(5),
                stop_reason: r.text(6),
                duration_ms: r.real(7),
            })
            .collect())
    }

    /// The logged messages of a run, in order.
    pub fn run_messages(&self, run_id: &str) -> Result<Vec<Value>, DbError> {
        let rows = self.query(
            "SELECT body FROM messages WHERE run_id = ?1 ORDER BY seq",
            &args![run_id],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| serde_json::from_str(&r.str(0)).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::failure::FailureKind;
    use serde_json::json;

    fn row(outcome: Value) -> ToolRow {
        ToolRow {
            round: 1,
            name: "t".into(),
            args: json!({}),
            outcome,
            is_error: true,
            duration_ms: 1.0,
            script_version: None,
            call_id: None,
            notes: json!([]),
        }
    }

    #[test]
    fn failure_reads_the_logged_error() {
        let logged = json!({"success": false, "duration_ms": 0.1, "error": {
            "kind": "rate_limited", "message": "free in 2s", "detail": "bucket empty"}});
        let f = row(logged).failure().expect("a failure");
        assert_eq!(f.kind, FailureKind::RateLimited);
        assert_eq!(f.message, "free in 2s");
        assert_eq!(f.detail.as_deref(), Some("bucket empty"));
        let plain = json!({"error": {"kind": "tool_error", "message": "no"}});
        let f = row(plain).failure().expect("a failure without detail");
        assert_eq!((f.kind, f.detail), (FailureKind::ToolError, None));
    }

    #[test]
    fn no_failure_for_a_result_or_an_unknown_kind() {
        assert!(
            row(json!({"success": true, "result": 1}))
                .failure()
                .is_none()
        );
        assert!(row(Value::Null).failure().is_none());
        let newer = json!({"error": {"kind": "from_the_future", "message": "?"}});
        assert!(row(newer).failure().is_none());
    }

    both_databases!(
        the_eval_filter_finds_only_that_evals_runs_with_the_other_filters,
        super::eval_filter
    );

    fn eval_filter(db: &Db) {
        for sql in [
            "INSERT INTO runs(id, agent, started_at, status, eval_id) VALUES('r1', 'a', 1.0, 'ok', 'ev1')",
            "INSERT INTO runs(id, agent, started_at, status, eval_id) VALUES('r2', 'b', 2.0, 'ok', 'ev1')",
            "INSERT INTO runs(id, agent, started_at, status, eval_id) VALUES('r3', 'a', 3.0, 'ok', 'ev2')",
            "INSERT INTO runs(id, agent, started_at, status) VALUES('r4', 'a', 4.0, 'ok')",
        ] {
            db.execute(sql, &[]).expect("row");
        }
        let ids = |runs: Vec<RunRow>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(db.eval_runs("ev1").expect("ev1")), ["r2", "r1"]);
        let of_a = LogFilter {
            eval: Some("ev1".into()),
            agent: Some("a".into()),
            ..LogFilter::default()
        };
        assert_eq!(ids(db.runs(&of_a).expect("ev1 of a")), ["r1"]);
        assert!(db.eval_runs("nope").expect("none").is_empty());
        let r3 = db.run("r3").expect("r3").expect("logged");
        assert_eq!(r3.eval_id.as_deref(), Some("ev2"));
        assert_eq!(db.run("r4").expect("r4").expect("logged").eval_id, None);
        assert!(db.run("r9").expect("r9").is_none());
    }
}

#[cfg(test)]
mod silent_owners {
    use crate::{Db, args};

    both_databases!(
        a_run_whose_process_stopped_beating_shows_interrupted_on_every_machine,
        super::silent
    );

    fn silent(db: &Db) {
        db.execute(
            "INSERT INTO runs(id, agent, started_at, status, session, owner)
             VALUES('r1', 'a', 1, 'running', 's', 'elsewhere:1')",
            &[],
        )
        .expect("a run on another machine");
        let shown = |db: &Db| {
            db.run("r1")
                .expect("read")
                .expect("logged")
                .shown_status()
                .to_string()
        };
        assert_eq!(
            shown(db),
            "running",
            "a process that never beat is not judged"
        );
        assert!(db.session_busy("s").expect("busy"));
        let beat = |at: f64| {
            db.execute(
                "INSERT INTO processes(owner, seen_at) VALUES('elsewhere:1', ?1)
                 ON CONFLICT(owner) DO UPDATE SET seen_at = excluded.seen_at",
                &args![at],
            )
            .expect("beat")
        };
        beat(crate::now() - 5.0);
        assert_eq!(shown(db), "running");
        beat(crate::now() - 100.0);
        assert_eq!(shown(db), "interrupted");
        assert!(
            !db.session_busy("s").expect("busy"),
            "a silent run holds no session"
        );
        db.beat().expect("this process beats");
        let me = db
            .query_row(
                "SELECT seen_at FROM processes WHERE owner = ?1",
                &args![crate::runs::this_process()],
            )
            .expect("read")
            .and_then(|r| r.real(0));
        assert!(me.is_some_and(|t| crate::now() - t < 60.0), "{me:?}");
    }
}
