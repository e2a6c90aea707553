//! The run log: every run, model reply, message and tool call, recorded as it happens.

mod rows;

use crate::record::Commit;
use crate::{RecordError, Recorder, RunReport, ToolCallRecord};
use kiln_core::context::runner::{FinishedRun, RunKind};
use kiln_db::{Db, now};
use kiln_db::{SqlError, Writer};
use kiln_providers::{AnsweredBy, Message, StopReason, Usage};
use rows::{EndRow, Reply, StartRow, Step, StepRows, Totals, json_text};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records runs into the database; with a session, also keeps the conversation and state.
/// One transaction per completed step: the step's model reply, messages and tool calls. The
/// loop hands its commits to the database's group committer ([`Db::submit`]), which commits
/// the steps of concurrent runs together; a direct call (`step`, ...) commits in place.
pub struct RunLogger {
    db: Arc<Db>,
    session: Option<String>,
    /// Model replies not yet written: they go in with the step they belong to.
    pending: Mutex<Vec<Reply>>,
    /// Each running run's totals so far, written when it ends (counting its rows at the end
    /// cost more than all its steps' inserts together).
    tallies: Mutex<HashMap<String, Tally>>,
    /// Set once a write of this logger is owed ([`Db::owe`]): the later ones are owed behind
    /// it, so they land in order.
    owing: Arc<AtomicBool>,
}

/// A run's model replies and their tokens, as recorded, and how far its messages are written.
#[derive(Default, Clone, Copy)]
struct Tally {
    totals: Totals,
    /// One past the last message written: a step starting before it rewrites earlier rows.
    written: usize,
}

/// A lock that a panicking holder did not poison for good (the data is plain rows).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RunLogger {
    /// A logger writing to `db`, continuing `session` if given.
    pub fn new(db: Arc<Db>, session: Option<String>) -> Self {
        RunLogger {
            db,
            session,
            pending: Mutex::new(Vec::new()),
            tallies: Mutex::new(HashMap::new()),
            owing: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Writes `row` in one transaction on this thread; a failure is the caller's error, and
    /// the write is owed ([`Db::owe`]) when it may land later.
    fn write<R: Send + Sync + 'static>(
        &self,
        what: &'static str,
        row: R,
        w: fn(&R, &mut dyn Writer) -> Result<(), SqlError>,
    ) -> Result<(), RecordError> {
        let row = Arc::new(row);
        if let Some(e) = self.behind(what, job(&row, w)) {
            return Err(e);
        }
        self.db
            .write(|tx| w(&row, tx))
            .map_err(|e| owe(&self.db, &self.owing, what, e, job(&row, w)))
    }

    /// Owes `job` without trying it when an earlier write is owed: the error saying so.
    fn behind(&self, what: &'static str, job: kiln_db::Job) -> Option<RecordError> {
        if !self.owing.load(Ordering::Relaxed) {
            return None;
        }
        self.db.owe(job);
        Some(RecordError {
            what,
            message: format!(
                "{}: it waits for room behind an earlier write that failed",
                self.db.path().display()
            ),
        })
    }

    /// Hands `row` to the group committer; the commit resolves once it has landed (a failed
    /// one is owed, as in [`RunLogger::write`]).
    fn submit<R: Send + Sync + 'static>(
        &self,
        what: &'static str,
        row: R,
        w: fn(&R, &mut dyn Writer) -> Result<(), SqlError>,
    ) -> Commit {
        let row = Arc::new(row);
        if let Some(e) = self.behind(what, job(&row, w)) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let committed = self.db.submit(job(&row, w));
        let (db, owing) = (self.db.clone(), self.owing.clone());
        Box::pin(async move {
            committed
                .await
                .map_err(|e| owe(&db, &owing, what, e, job(&row, w)))
        })
    }

    /// The run's model replies not written yet, oldest first.
    fn take_replies(&self, run_id: &str) -> Vec<Reply> {
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

    /// A run's start as rows; its tally starts again (a resumed run replays its replies).
    fn start_row(&self, report: &RunReport) -> StartRow {
        lock(&self.tallies).insert(report.run_id.clone(), Tally::default());
        StartRow::of(report, self.session.as_ref())
    }

    /// A step as rows, taking the run's replies not written yet.
    fn step_rows(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> StepRows {
        let replies = self.take_replies(run_id);
        let fresh = self.fresh_step(run_id, first_seq, first_seq + messages.len());
        StepRows::of(Step {
            run_id,
            first_seq,
            messages,
            calls,
            session: self.session.as_ref().map(|s| (s.clone(), json_text(state))),
            fresh,
            replies,
        })
    }

    /// A run's end as a row, with its tally and the replies no step took.
    fn end_row(&self, report: &RunReport) -> EndRow {
        let tally = lock(&self.tallies)
            .remove(&report.run_id)
            .unwrap_or_default();
        EndRow::of(report, tally.totals, self.take_replies(&report.run_id))
    }
}

/// A job writing `row` with `w`, for the committer (or again, when owed).
fn job<R: Send + Sync + 'static>(
    row: &Arc<R>,
    w: fn(&R, &mut dyn Writer) -> Result<(), SqlError>,
) -> kiln_db::Job {
    let row = row.clone();
    Box::new(move |tx| w(&row, tx))
}

/// The error of a failed write of the run's `what`; a write that may land later (a full
/// disk) is owed to `db`, so the run's start, steps and end land, in order, once there is
/// room, and the log ends the run as it ended.
fn owe(
    db: &Db,
    owing: &AtomicBool,
    what: &'static str,
    e: kiln_db::DbError,
    again: kiln_db::Job,
) -> RecordError {
    if e.may_land_later() {
        owing.store(true, Ordering::Relaxed);
        db.owe(again);
    }
    RecordError {
        what,
        message: e.to_string(),
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
        let row = self.start_row(report);
        self.write("start", row, StartRow::write)
    }

    fn commit_started(&self, report: &RunReport) -> Commit {
        let row = self.start_row(report);
        self.submit("start", row, StartRow::write)
    }

    fn model_reply(
        &self,
        run_id: &str,
        round: u32,
        usage: Usage,
        stop: &StopReason,
        by: &AnsweredBy,
        took: Duration,
    ) {
        let stop = serde_json::to_value(stop)
            .ok()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        {
            let mut tallies = lock(&self.tallies);
            let totals = &mut tallies.entry(run_id.to_string()).or_default().totals;
            totals.replies += 1;
            totals.input_tokens += usage.input_tokens as i64;
            totals.output_tokens += usage.output_tokens as i64;
        }
        let reply = Reply {
            run_id: run_id.to_string(),
            round,
            at: now(),
            took_ms: took.as_secs_f64() * 1000.0,
            usage,
            stop,
            by: by.clone(),
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
        let rows = self.step_rows(run_id, first_seq, messages, calls, state);
        self.write("step", rows, StepRows::write)
    }

    fn commit_step(
        &self,
        run_id: &str,
        first_seq: usize,
        messages: &[Message],
        calls: &[ToolCallRecord],
        state: &Value,
    ) -> Commit {
        let rows = self.step_rows(run_id, first_seq, messages, calls, state);
        self.submit("step", rows, StepRows::write)
    }

    fn ended(&self, report: &RunReport) -> Result<(), RecordError> {
        let row = self.end_row(report);
        self.write("end", row, EndRow::write)
    }

    fn commit_ended(&self, report: &RunReport) -> Commit {
        let row = self.end_row(report);
        self.submit("end", row, EndRow::write)
    }

    fn failing(&self) -> bool {
        self.db.failing()
    }
}

/// Logs a run that is over before the log hears of it (a pipeline's, whose calls are its
/// nodes) as a run of its kind (`pipeline:NAME`).
pub fn log_finished_run(db: &Arc<Db>, finished: &FinishedRun) -> Result<(), RecordError> {
    let mut run = RunReport::new(
        &finished.kind.to_string(),
        vec![Message::user(finished.input.to_string())],
    );
    run.run_id = finished.run_id.clone();
    run.provider = finished.kind.provider().unwrap_or_default().into();
    if let RunKind::Pipeline(name) = &finished.kind {
        run.model = name.clone();
    }
    run.tool_calls = finished
        .calls
        .iter()
        .map(|c| {
            ToolCallRecord::new(
                1,
                &c.id,
                &c.tool,
                c.args.clone().into(),
                &c.outcome,
                String::new(),
            )
        })
        .collect();
    match &finished.result {
        Ok(v) => run.answer = v.to_string(),
        Err(f) => run.error = Some(f.message.clone()),
    }
    log_finished(db, &run)
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
        let mut report = RunReport::new("a", vec![Message::user("go")]);
        logger.started(&report).expect("start");
        // Each step carries the messages new since the last one (the first, the prompt too).
        let mut committed = 0;
        for (round, input) in [(1, 10), (2, 12)] {
            let usage = Usage {
                reasoning_tokens: 0,
                input_tokens: input,
                output_tokens: 2,
            };
            let by = AnsweredBy {
                provider: "anthropic".into(),
                model: "m".into(),
            };
            logger.model_reply(
                &report.run_id,
                round,
                usage,
                &StopReason::ToolUse,
                &by,
                Duration::ZERO,
            );
            report.messages.push(Message::Assistant {
                replay: None,
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
            replay: None,
            content: text.into(),
            tool_calls: vec![],
        };
        let usage = |input| Usage {
            reasoning_tokens: input - 4,
            input_tokens: input,
            output_tokens: 1,
        };
        let stop = StopReason::EndTurn;
        let by = |provider: &str, model: &str| AnsweredBy {
            provider: provider.into(),
            model: model.into(),
        };
        let (first_model, fallback) = (by("anthropic", "a1"), by("openai", "o1"));
        logger.model_reply(
            &report.run_id,
            1,
            usage(5),
            &stop,
            &first_model,
            Duration::ZERO,
        );
        // One step with two answers, each with its reply (the second after a repair).
        logger.model_reply(
            &report.run_id,
            2,
            usage(6),
            &stop,
            &fallback,
            Duration::ZERO,
        );
        let first = [answer("bad"), answer("worse")];
        logger
            .step(&report.run_id, 0, &first, &[], &Value::Null)
            .expect("step");
        // A repair dropped the first and the next answer is written over it, from message 0;
        // the second row stays, with its own reply.
        logger.model_reply(
            &report.run_id,
            3,
            usage(7),
            &stop,
            &fallback,
            Duration::ZERO,
        );
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
        // Each keeps who answered it and its reasoning tokens, the moved one too.
        let answered: Vec<(String, String, i64)> = conn
            .prepare("SELECT provider, model, reasoning_tokens FROM model_calls WHERE run_id = ?1 ORDER BY round")
            .expect("query")
            .query_map([&report.run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        let want = |p: &str, m: &str, r| (p.to_string(), m.to_string(), r);
        assert_eq!(
            answered,
            [
                want("anthropic", "a1", 1),
                want("openai", "o1", 2),
                want("openai", "o1", 3)
            ]
        );
        report.messages.push(answer("good"));
        logger.ended(&report).expect("end");
        let run = db.runs(&LogFilter::default()).expect("runs").remove(0);
        assert_eq!((run.rounds, run.input_tokens), (3, 18));
    }
}
