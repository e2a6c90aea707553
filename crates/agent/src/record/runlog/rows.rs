//! The run log's writes as owned rows: built on the run's own task (the messages serialised
//! there, outside the connection's lock), then written by whichever thread commits them, the
//! run's own or the group committer. A write may run twice (again alone, after its batch
//! rolled back), so it only reads the rows.

use crate::{RunReport, ToolCallRecord};
use kiln_db::now;
use kiln_db::{SqlError, Writer, args};
use kiln_providers::{AnsweredBy, Message, Usage};

/// What a row written again replaces: every column, as SQLite's `INSERT OR REPLACE` would
/// (a column the insert leaves out is NULL in `excluded`).
macro_rules! replacing_step {
    () => {
        " ON CONFLICT(run_id, step, part) DO UPDATE SET kind = excluded.kind, at = excluded.at,
         seq = excluded.seq, role = excluded.role, body = excluded.body, round = excluded.round,
         duration_ms = excluded.duration_ms, input_tokens = excluded.input_tokens,
         output_tokens = excluded.output_tokens, stop_reason = excluded.stop_reason,
         call_id = excluded.call_id, name = excluded.name, args = excluded.args,
         outcome = excluded.outcome, is_error = excluded.is_error,
         script_version = excluded.script_version, notes = excluded.notes,
         provider = excluded.provider, model = excluded.model,
         reasoning_tokens = excluded.reasoning_tokens"
    };
}

/// Where a step's model replies go among its rows: after its messages and tool calls (which
/// are numbered from 0), by round.
const MODEL_PART: i64 = 1 << 32;

/// A model reply, written with the step it belongs to.
pub(crate) struct Reply {
    pub(crate) run_id: String,
    pub(crate) round: u32,
    pub(crate) at: f64,
    pub(crate) took_ms: f64,
    pub(crate) usage: Usage,
    pub(crate) stop: Option<String>,
    /// The provider and model that answered.
    pub(crate) by: AnsweredBy,
}

/// A run's start: its row, and its earlier attempt's rows cleared.
pub(crate) struct StartRow {
    run_id: String,
    agent: String,
    session: Option<String>,
    prompt: String,
    at: f64,
    actor: Option<String>,
    parent: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    trace_id: Option<String>,
    eval_id: Option<String>,
}

impl StartRow {
    pub(crate) fn of(report: &RunReport, session: Option<&String>) -> StartRow {
        let prompt = match report.messages.last() {
            Some(Message::User { content, .. }) => content.clone(),
            _ => String::new(),
        };
        StartRow {
            run_id: report.run_id.clone(),
            agent: report.agent.clone(),
            session: session.cloned(),
            prompt,
            at: now(),
            actor: report.actor.clone(),
            parent: report.parent.clone(),
            provider: (!report.provider.is_empty()).then(|| report.provider.clone()),
            model: (!report.model.is_empty()).then(|| report.model.clone()),
            trace_id: report.trace_id.clone(),
            eval_id: report.eval_id.clone(),
        }
    }

    pub(crate) fn write(&self, tx: &mut dyn Writer) -> Result<(), SqlError> {
        // A run another started (an agent called as a tool, a pipeline's agent) belongs to the
        // eval run its parent belongs to, so `kiln logs --eval ID` lists it too.
        // A durable run resumed in this database starts again under its id and replays its
        // steps: what the earlier attempt logged is replaced, not duplicated.
        tx.exec("DELETE FROM steps WHERE run_id = ?1", &args![&self.run_id])?;
        tx.exec("INSERT INTO runs(id, agent, session, prompt, started_at, actor, parent, provider, model, owner, trace_id, eval_id)
             VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                    COALESCE(?12, (SELECT eval_id FROM runs WHERE id = ?7)))
             ON CONFLICT(id) DO UPDATE SET started_at = excluded.started_at, ended_at = NULL,
             status = 'running', error = NULL, answer = NULL, input_tokens = 0,
             output_tokens = 0, rounds = 0, cost_usd = NULL, provider = excluded.provider,
             model = excluded.model, owner = excluded.owner, trace_id = excluded.trace_id,
             eval_id = excluded.eval_id", &args![
                &self.run_id,
                &self.agent,
                &self.session,
                &self.prompt,
                self.at,
                &self.actor,
                &self.parent,
                &self.provider,
                &self.model,
                kiln_db::runs::this_process(),
                &self.trace_id,
                &self.eval_id,
            ])?;
        if let Some(s) = &self.session {
            tx.exec("INSERT INTO sessions(name, agent, created_at, updated_at) VALUES(?1, ?2, ?3, ?3) ON CONFLICT(name) DO NOTHING",
                &args![s, &self.agent, self.at])?;
        }
        Ok(())
    }
}

/// A message of a step, serialised, with the reply that produced it (an assistant message's).
struct MessageRow {
    seq: i64,
    role: &'static str,
    body: String,
    reply: Option<Reply>,
}

/// A tool call of a step (a program's calls follow it, their ids under its id: `ID/1`).
struct CallRow {
    round: u32,
    id: String,
    name: String,
    args: String,
    outcome: String,
    is_error: bool,
    duration_ms: f64,
    script_version: String,
    /// What it told its caller while it ran, as JSON (`None`: nothing).
    notes: Option<String>,
}

/// One step's rows: its messages, the replies that rode on none of them, its tool calls and,
/// with a session, the session's state after it.
pub(crate) struct StepRows {
    run_id: String,
    step: i64,
    /// False when the step rewrites earlier rows (after a repair dropped messages).
    fresh: bool,
    at: f64,
    messages: Vec<MessageRow>,
    replies: Vec<Reply>,
    calls: Vec<CallRow>,
    session: Option<(String, String)>,
}

/// What [`StepRows::of`] is built from.
pub(crate) struct Step<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) first_seq: usize,
    pub(crate) messages: &'a [Message],
    pub(crate) calls: &'a [ToolCallRecord],
    /// The session and its state after the step, as JSON text.
    pub(crate) session: Option<(String, String)>,
    /// Whether no message of the step was written before.
    pub(crate) fresh: bool,
    /// The run's replies not written yet, oldest first.
    pub(crate) replies: Vec<Reply>,
}

fn role(m: &Message) -> &'static str {
    match m {
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    }
}

/// A value as JSON text: written straight into bytes, not through `Display`'s formatter.
pub(crate) fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl StepRows {
    pub(crate) fn of(s: Step<'_>) -> StepRows {
        let mut replies = s.replies.into_iter();
        let messages = s
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| MessageRow {
                seq: (s.first_seq + i) as i64,
                role: role(m),
                body: serde_json::to_string(m).unwrap_or_default(),
                // An assistant message carries the reply that produced it, and its time; a
                // step that rewrites rows carries none (the rows it replaces keep theirs).
                reply: match m {
                    Message::Assistant { .. } if s.fresh => replies.next(),
                    _ => None,
                },
            })
            .collect();
        let calls = s
            .calls
            .iter()
            .flat_map(|c| std::iter::once(c).chain(c.nested.iter()))
            .map(|c| CallRow {
                round: c.round,
                id: c.id.clone(),
                name: c.name.clone(),
                args: json_text(&c.args),
                outcome: json_text(&c.outcome),
                is_error: c.is_error,
                duration_ms: c.duration_ms,
                script_version: c.script_version.clone(),
                notes: (!c.notes.is_empty()).then(|| json_text(&c.notes)),
            })
            .collect();
        StepRows {
            run_id: s.run_id.to_string(),
            step: s.first_seq as i64,
            fresh: s.fresh,
            at: now(),
            messages,
            replies: replies.collect(),
            calls,
            session: s.session,
        }
    }

    pub(crate) fn write(&self, tx: &mut dyn Writer) -> Result<(), SqlError> {
        let (run_id, step) = (&self.run_id, self.step);
        if !self.fresh {
            // The replies riding on the rows about to be replaced get rows of their own.
            tx.exec(
                concat!("INSERT INTO steps(run_id, step, part, kind, at, round, duration_ms, input_tokens, output_tokens, stop_reason, provider, model, reasoning_tokens)
                 SELECT run_id, step, ?3 + round, 'model', at, round, duration_ms, input_tokens, output_tokens, stop_reason, provider, model, reasoning_tokens
                 FROM steps WHERE run_id = ?1 AND step = ?2 AND part < ?4 AND kind = 'message' AND round IS NOT NULL", replacing_step!()),
                &args![run_id, step, MODEL_PART, self.messages.len() as i64],
            )?;
        }
        for (i, m) in self.messages.iter().enumerate() {
            let r = m.reply.as_ref();
            tx.exec(concat!("INSERT INTO steps(run_id, step, part, kind, at, seq, role, body, round, duration_ms, input_tokens, output_tokens, stop_reason, provider, model, reasoning_tokens)
             VALUES(?1, ?2, ?3, 'message', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)", replacing_step!()), &args![
                run_id,
                step,
                i as i64,
                r.map_or(self.at, |r| r.at),
                m.seq,
                m.role,
                &m.body,
                r.map(|r| r.round),
                r.map(|r| r.took_ms),
                r.map(|r| r.usage.input_tokens as i64),
                r.map(|r| r.usage.output_tokens as i64),
                r.and_then(|r| r.stop.as_deref()),
                r.map(|r| r.by.provider.as_str()),
                r.map(|r| r.by.model.as_str()),
                r.map(|r| r.usage.reasoning_tokens as i64),
            ])?;
            if let Some((s, _)) = &self.session {
                tx.exec(
                    "INSERT INTO session_messages(session, seq, body) VALUES(?1, ?2, ?3)
                     ON CONFLICT(session, seq) DO UPDATE SET body = excluded.body",
                    &args![s, m.seq, &m.body],
                )?;
            }
        }
        insert_replies(tx, run_id, step, &self.replies)?;
        for (i, c) in self.calls.iter().enumerate() {
            let part = (self.messages.len() + i) as i64;
            tx.exec(concat!("INSERT INTO steps(run_id, step, part, kind, at, round, call_id, name, args, outcome, is_error, duration_ms, script_version, notes)
             VALUES(?1, ?2, ?3, 'tool', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", replacing_step!()), &args![
                run_id,
                step,
                part,
                self.at,
                c.round,
                &c.id,
                &c.name,
                &c.args,
                &c.outcome,
                c.is_error,
                c.duration_ms,
                &c.script_version,
                &c.notes
            ])?;
        }
        if let Some((s, state)) = &self.session {
            tx.exec(
                "UPDATE sessions SET state = ?2, updated_at = ?3 WHERE name = ?1",
                &args![s, state, self.at],
            )?;
        }
        Ok(())
    }
}

/// A run's end: its status and totals, and the replies no step took.
pub(crate) struct EndRow {
    run_id: String,
    /// Past every step's key: where replies no step took go.
    step: i64,
    status: &'static str,
    error: Option<String>,
    answer: String,
    provider: String,
    model: String,
    cost_usd: Option<f64>,
    rounds: i64,
    input_tokens: i64,
    output_tokens: i64,
    replies: Vec<Reply>,
}

/// A run's model replies and their tokens, as recorded.
#[derive(Default, Clone, Copy)]
pub(crate) struct Totals {
    pub(crate) replies: i64,
    pub(crate) input_tokens: i64,
    pub(crate) output_tokens: i64,
}

impl EndRow {
    pub(crate) fn of(report: &RunReport, totals: Totals, replies: Vec<Reply>) -> EndRow {
        let status = match (&report.error, report.cancelled) {
            (_, true) => "cancelled",
            (Some(_), false) => "error",
            (None, false) => "ok",
        };
        EndRow {
            run_id: report.run_id.clone(),
            step: report.messages.len() as i64,
            status,
            error: report.error.clone(),
            answer: report.answer.clone(),
            provider: report.provider.clone(),
            model: report.model.clone(),
            cost_usd: report.cost_usd,
            rounds: totals.replies,
            input_tokens: totals.input_tokens,
            output_tokens: totals.output_tokens,
            replies,
        }
    }

    pub(crate) fn write(&self, tx: &mut dyn Writer) -> Result<(), SqlError> {
        insert_replies(tx, &self.run_id, self.step, &self.replies)?;
        tx.exec("UPDATE runs SET ended_at = ?2, status = ?3, error = ?4, answer = ?5, provider = ?6, model = ?7, cost_usd = ?8,
             rounds = ?9, input_tokens = ?10, output_tokens = ?11 WHERE id = ?1", &args![
                &self.run_id,
                now(),
                self.status,
                &self.error,
                &self.answer,
                &self.provider,
                &self.model,
                self.cost_usd,
                self.rounds,
                self.input_tokens,
                self.output_tokens
            ])?;
        Ok(())
    }
}

/// Writes model replies as rows of their own in `step`.
fn insert_replies(
    tx: &mut dyn Writer,
    run_id: &str,
    step: i64,
    replies: &[Reply],
) -> Result<(), SqlError> {
    for r in replies {
        let (input, output) = (r.usage.input_tokens as i64, r.usage.output_tokens as i64);
        let part = MODEL_PART + i64::from(r.round);
        tx.exec(concat!(
            "INSERT INTO steps(run_id, step, part, kind, at, round, duration_ms, input_tokens, output_tokens, stop_reason, provider, model, reasoning_tokens)
             VALUES(?1, ?2, ?3, 'model', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", replacing_step!()),
        &args![
            run_id,
            step,
            part,
            r.at,
            r.round,
            r.took_ms,
            input,
            output,
            &r.stop,
            &r.by.provider,
            &r.by.model,
            r.usage.reasoning_tokens as i64
        ])?;
    }
    Ok(())
}
