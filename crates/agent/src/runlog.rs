//! The run log: every run, model reply, message and tool call, recorded as it happens.

use crate::{RecordError, Recorder, RunReport, ToolCallRecord};
use kiln_core::failure::ToolOutcome;
use kiln_core::pipeline::{NodeStatus, PipelineReport};
use kiln_db::{Db, now};
use kiln_providers::{Message, StopReason, Usage};
use rusqlite::{Connection, params};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records runs into the database; with a session, also keeps the conversation and state.
/// One transaction per completed step: the step's model reply, messages and tool calls.
pub struct RunLogger {
    db: Arc<Db>,
    session: Option<String>,
    /// Model replies not yet written: they go in with the step they belong to.
    pending: Mutex<Vec<PendingReply>>,
    /// Each running run's totals so far, written when it ends (counting its rows at the end
    /// cost more than all its steps' inserts together).
    tallies: Mutex<HashMap<String, Tally>>,
}

/// A run's model replies and their tokens, as recorded, and how far its messages are written.
#[derive(Default, Clone, Copy)]
struct Tally {
    replies: i64,
    input_tokens: i64,
    output_tokens: i64,
    /// One past the last message written: a step starting before it rewrites earlier rows.
    written: usize,
}

struct PendingReply {
    run_id: String,
    round: u32,
    at: f64,
    took_ms: f64,
    usage: Usage,
    stop: Option<String>,
}

/// Where a step's model replies go among its rows: after its messages and tool calls (which
/// are numbered from 0), by round.
const MODEL_PART: i64 = 1 << 32;

fn role(m: &Message) -> &'static str {
    match m {
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    }
}

/// A lock that a panicking holder did not poison for good (the data is plain rows).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A value as JSON text: written straight into bytes, not through `Display`'s formatter.
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl RunLogger {
    /// A logger writing to `db`, continuing `session` if given.
    pub fn new(db: Arc<Db>, session: Option<String>) -> Self {
        RunLogger {
            db,
            session,
            pending: Mutex::new(Vec::new()),
            tallies: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `f` in one transaction and commits it; a failure is the caller's error.
    fn write(
        &self,
        what: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    ) -> Result<(), RecordError> {
        let conn = self.db.conn();
        // BEGIN and COMMIT as cached statements: `Connection::transaction` parses both anew on
        // every step.
        let begin = conn.prepare_cached("BEGIN").and_then(|mut s| s.execute([]));
        begin
            .and_then(|_| f(&conn))
            .and_then(|()| conn.prepare_cached("COMMIT")?.execute([]).map(drop))
            .inspect_err(|_| {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
            })
            .map_err(|e| RecordError {
                what,
                message: self.db.err(e).to_string(),
            })
    }

    /// The run's model replies not written yet, oldest first.
    fn take_replies(&self, run_id: &str) -> Vec<PendingReply> {
        let mut pending = lock(&self.pending);
        let (mine, rest) = std::mem::take(&mut *pending)
            .into_iter()
            .partition(|r| r.run_id == run_id);
        *pending = rest;
        mine
    }

    /// Notes that messages `first_seq..end` are being written; whether none was written before
    /// (a step that rewrites rows, after a repair dropped messages, must not carry replies on
    /// them: the rows it replaces would take earlier replies with them).
    fn fresh_step(&self, run_id: &str, first_seq: usize, end: usize) -> bool {
        let mut tallies = lock(&self.tallies);
        let tally = tallies.entry(run_id.to_string()).or_default();
        let fresh = first_seq >= tally.written;
        tally.written = tally.written.max(end);
        fresh
    }

    /// Writes model replies as rows of their own in `step`.
    fn insert_replies(
        tx: &Connection,
        run_id: &str,
        step: i64,
        replies: impl Iterator<Item = PendingReply>,
    ) -> rusqlite::Result<()> {
        for r in replies {
            let (input, output) = (r.usage.input_tokens as i64, r.usage.output_tokens as i64);
            let part = MODEL_PART + i64::from(r.round);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO steps(run_id, step, part, kind, at, round, duration_ms, input_tokens, output_tokens, stop_reason)
                 VALUES(?1, ?2, ?3, 'model', ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![run_id, step, part, r.at, r.round, r.took_ms, input, output, r.stop])?;
        }
        Ok(())
    }
}

/// Logs a run that is already over in one go: a direct tool call (`Host::call`, `kiln call`,
/// MCP `tools/call`) or a pipeline, whose calls are its tool calls.
pub fn log_finished(db: &Arc<Db>, report: &RunReport) -> Result<(), RecordError> {
    let logger = RunLogger::new(db.clone(), None);
    logger.started(report)?;
    logger.step(
        &report.run_id,
        0,
        &report.messages,
        &report.tool_calls,
        &Value::Null,
    )?;
    logger.ended(report)
}

impl Recorder for RunLogger {
    fn started(&self, report: &RunReport) -> Result<(), RecordError> {
        let prompt = match report.messages.last() {
            Some(Message::User { content }) => content.clone(),
            _ => String::new(),
        };
        // A resumed run replays its replies from the start: its tally starts again too.
        lock(&self.tallies).insert(report.run_id.clone(), Tally::default());
        self.write("start", |tx| {
            // A durable run resumed in this database starts again under its id and replays
            // its steps: what the earlier attempt logged is replaced, not duplicated.
            tx.prepare_cached("DELETE FROM steps WHERE run_id = ?1")?.execute(params![report.run_id])?;
            tx.prepare_cached("INSERT INTO runs(id, agent, session, prompt, started_at, actor, parent, provider, model, owner, trace_id)
                 VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT(id) DO UPDATE SET started_at = excluded.started_at, ended_at = NULL,
                 status = 'running', error = NULL, answer = NULL, input_tokens = 0,
                 output_tokens = 0, rounds = 0, cost_usd = NULL, provider = excluded.provider,
                 model = excluded.model, owner = excluded.owner, trace_id = excluded.trace_id")?.execute(params![
                    report.run_id,
                    report.agent,
                    self.session,
                    prompt,
                    now(),
                    report.actor,
                    report.parent,
                    (!report.provider.is_empty()).then_some(&report.provider),
                    (!report.model.is_empty()).then_some(&report.model),
                    kiln_db::runs::this_process(),
                    report.trace_id,
                ],
            )?;
            if let Some(s) = &self.session {
                tx.prepare_cached("INSERT INTO sessions(name, agent, created_at, updated_at) VALUES(?1, ?2, ?3, ?3) ON CONFLICT(name) DO NOTHING")?.execute(params![s, report.agent, now()],
                )?;
            }
            Ok(())
        })
    }

    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        took: Duration,
    ) {
        let stop = serde_json::to_value(stop)
            .ok()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        {
            let mut tallies = lock(&self.tallies);
            let tally = tallies.entry(run_id.to_string()).or_default();
            tally.replies += 1;
            tally.input_tokens += usage.input_tokens as i64;
            tally.output_tokens += usage.output_tokens as i64;
        }
        let reply = PendingReply {
            run_id: run_id.to_string(),
            round,
            at: now(),
            took_ms: took.as_secs_f64() * 1000.0,
            usage,
            stop,
        };
        lock(&self.pending).push(reply);
    }

    fn step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Result<(), RecordError> {
        let at = now();
        // A step's rows are keyed by the step (its first message) and their place in it.
        let step = first_seq as i64;
        let mut replies = self.take_replies(run_id).into_iter();
        let fresh = self.fresh_step(run_id, first_seq, first_seq + messages.len());
        self.write("step", |tx| {
            if !fresh {
                // The replies riding on the rows about to be replaced get rows of their own.
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO steps(run_id, step, part, kind, at, round, duration_ms, input_tokens, output_tokens, stop_reason)
                     SELECT run_id, step, ?3 + round, 'model', at, round, duration_ms, input_tokens, output_tokens, stop_reason
                     FROM steps WHERE run_id = ?1 AND step = ?2 AND part < ?4 AND kind = 'message' AND round IS NOT NULL",
                )?
                .execute(params![run_id, step, MODEL_PART, messages.len() as i64])?;
            }
            // Each statement is looked up once per step, not once per row.
            let mut insert_message = tx.prepare_cached(
                "INSERT OR REPLACE INTO steps(run_id, step, part, kind, at, seq, role, body, round, duration_ms, input_tokens, output_tokens, stop_reason)
                 VALUES(?1, ?2, ?3, 'message', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            for (i, m) in messages.iter().enumerate() {
                let body = serde_json::to_string(m).unwrap_or_default();
                let seq = (first_seq + i) as i64;
                // An assistant message carries the reply that produced it, and its time.
                let reply = match m {
                    Message::Assistant { .. } if fresh => replies.next(),
                    _ => None,
                };
                let r = reply.as_ref();
                insert_message.execute(params![
                    run_id,
                    step,
                    i as i64,
                    r.map_or(at, |r| r.at),
                    seq,
                    role(m),
                    body,
                    r.map(|r| r.round),
                    r.map(|r| r.took_ms),
                    r.map(|r| r.usage.input_tokens as i64),
                    r.map(|r| r.usage.output_tokens as i64),
                    r.and_then(|r| r.stop.as_deref()),
                ])?;
                if let Some(s) = &self.session {
                    tx.prepare_cached("INSERT OR REPLACE INTO session_messages(session, seq, body) VALUES(?1, ?2, ?3)")?.execute(params![s, seq, body])?;
                }
            }
            Self::insert_replies(tx, run_id, step, replies.by_ref())?;
            // A program's calls follow it, their ids under its id (`ID/1`).
            let rows = calls.iter().flat_map(|c| std::iter::once(c).chain(c.nested.iter()));
            let mut insert_call = tx.prepare_cached(
                "INSERT OR REPLACE INTO steps(run_id, step, part, kind, at, round, call_id, name, args, outcome, is_error, duration_ms, script_version)
                 VALUES(?1, ?2, ?3, 'tool', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            for (i, c) in rows.enumerate() {
                let part = (messages.len() + i) as i64;
                insert_call.execute(params![run_id, step, part, at, c.round, c.id, c.name, json_text(&c.args), json_text(&c.outcome), c.is_error, c.duration_ms, c.script_version])?;
            }
            if let Some(s) = &self.session {
                tx.prepare_cached("UPDATE sessions SET state = ?2, updated_at = ?3 WHERE name = ?1")?.execute(params![s, json_text(state), at])?;
            }
            Ok(())
        })
    }

    fn ended(&self, report: &RunReport) -> Result<(), RecordError> {
        let status = match (&report.error, report.cancelled) {
            (_, true) => "cancelled",
            (Some(_), false) => "error",
            (None, false) => "ok",
        };
        let tally = lock(&self.tallies)
            .remove(&report.run_id)
            .unwrap_or_default();
        let replies = self.take_replies(&report.run_id);
        self.write("end", |tx| {
            // Replies no step took (the run ended before its step): past every step's key.
            let step = report.messages.len() as i64;
            Self::insert_replies(tx, &report.run_id, step, replies.into_iter())?;
            tx.prepare_cached("UPDATE runs SET ended_at = ?2, status = ?3, error = ?4, answer = ?5, provider = ?6, model = ?7, cost_usd = ?8,
                 rounds = ?9, input_tokens = ?10, output_tokens = ?11 WHERE id = ?1")?.execute(params![report.run_id, now(), status, report.error, report.answer, report.provider, report.model, report.cost_usd, tally.replies, tally.input_tokens, tally.output_tokens],
            )?;
            Ok(())
        })
    }
}

/// Logs a pipeline run as a run of `pipeline:NAME` whose tool calls are its nodes.
pub fn log_pipeline(db: &Arc<Db>, report: &PipelineReport) -> Result<(), RecordError> {
    let mut run = RunReport::new(
        &format!("pipeline:{}", report.pipeline),
        vec![Message::User {
            content: report.inputs.to_string(),
        }],
    );
    run.run_id = report.run_id.clone();
    run.provider = "pipeline".into();
    run.model = report.pipeline.clone();
    run.tool_calls = pipeline_calls(report);
    match report.result() {
        Ok(v) => run.answer = v.to_string(),
        Err(f) => run.error = Some(f.message),
    }
    log_finished(db, &run)
}

/// The nodes that ran, as tool-call records for the run log.
fn pipeline_calls(report: &PipelineReport) -> Vec<ToolCallRecord> {
    report
        .nodes
        .iter()
        .filter(|n| n.status != NodeStatus::Skipped)
        .map(|n| {
            let outcome = ToolOutcome {
                result: match (&n.value, &n.error) {
                    (_, Some(e)) => Err(e.clone()),
                    (v, None) => Ok(v.clone().unwrap_or(Value::Null)),
                },
                duration: Duration::from_secs_f64(n.duration_ms / 1000.0),
                attempts: 1,
            };
            ToolCallRecord::new(1, &n.name, &n.call, n.args.clone(), &outcome, String::new())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_db::runs::LogFilter;

    #[test]
    fn a_running_runs_totals_are_counted_and_an_ended_runs_are_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Arc::new(Db::open(&dir.path().join("k.db")).expect("db"));
        let logger = RunLogger::new(db.clone(), None);
        let mut report = RunReport::new(
            "a",
            vec![Message::User {
                content: "go".into(),
            }],
        );
        logger.started(&report).expect("start");
        // Each step carries the messages new since the last one (the first, the prompt too).
        let mut committed = 0;
        for (round, input) in [(1, 10), (2, 12)] {
            let usage = Usage {
                input_tokens: input,
                output_tokens: 2,
            };
            logger.model_reply(
                &report.run_id,
                round,
                usage,
                &StopReason::ToolUse,
                Duration::ZERO,
            );
            report.messages.push(Message::Assistant {
                content: format!("round {round}"),
                tool_calls: vec![],
            });
            let step = &report.messages[committed..];
            logger
                .step(&report.run_id, committed, step, &[], &Value::Null)
                .expect("step");
            committed = report.messages.len();
        }
        let totals = |db: &Db| {
            let run = db.runs(&LogFilter::default()).expect("runs").remove(0);
            (run.status, run.rounds, run.input_tokens, run.output_tokens)
        };
        // Killed here, the run would stay `running`: its totals come from its model replies.
        assert_eq!(totals(&db), ("running".to_string(), 2, 22, 4));
        logger.ended(&report).expect("end");
        assert_eq!(totals(&db), ("ok".to_string(), 2, 22, 4));
        assert_eq!(db.run_messages(&report.run_id).expect("messages").len(), 3);
        // Each reply rode on its assistant message: no rows of their own.
        let conn = rusqlite::Connection::open(dir.path().join("k.db")).expect("open");
        let count = |sql: &str| -> i64 {
            conn.query_row(sql, [&report.run_id], |r| r.get(0))
                .expect("count")
        };
        assert_eq!(
            count("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND kind = 'model'"),
            0
        );
        assert_eq!(
            count("SELECT COUNT(*) FROM model_calls WHERE run_id = ?1"),
            2
        );
    }

    #[test]
    fn a_rewritten_step_keeps_the_replies_of_the_rows_it_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Arc::new(Db::open(&dir.path().join("k.db")).expect("db"));
        let logger = RunLogger::new(db.clone(), None);
        let mut report = RunReport::new("a", vec![]);
        logger.started(&report).expect("start");
        let answer = |text: &str| Message::Assistant {
            content: text.into(),
            tool_calls: vec![],
        };
        let usage = |input| Usage {
            input_tokens: input,
            output_tokens: 1,
        };
        let stop = StopReason::EndTurn;
        logger.model_reply(&report.run_id, 1, usage(5), &stop, Duration::ZERO);
        // One step with two answers, each with its reply (the second after a repair).
        logger.model_reply(&report.run_id, 2, usage(6), &stop, Duration::ZERO);
        let first = [answer("bad"), answer("worse")];
        logger
            .step(&report.run_id, 0, &first, &[], &Value::Null)
            .expect("step");
        // A repair dropped the first and the next answer is written over it, from message 0;
        // the second row stays, with its own reply.
        logger.model_reply(&report.run_id, 3, usage(7), &stop, Duration::ZERO);
        logger
            .step(&report.run_id, 0, &[answer("good")], &[], &Value::Null)
            .expect("step");
        let conn = rusqlite::Connection::open(dir.path().join("k.db")).expect("open");
        let rounds: Vec<(i64, i64)> = conn
            .prepare("SELECT round, input_tokens FROM model_calls WHERE run_id = ?1 ORDER BY round")
            .expect("query")
            .query_map([&report.run_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(rounds, [(1, 5), (2, 6), (3, 7)]);
        report.messages.push(answer("good"));
        logger.ended(&report).expect("end");
        let run = db.runs(&LogFilter::default()).expect("runs").remove(0);
        assert_eq!((run.rounds, run.input_tokens), (3, 18));
    }
}
