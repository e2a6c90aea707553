//! `kiln logs` and `kiln sessions`.

use super::output::{self, outln};
use super::{CliResult, Global};
use clap::{Args, Subcommand};
use kiln::FailureKind;
use kiln::log::LogFilter;
use std::process::ExitCode;

/// `kiln logs` options.
#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Show only this run (with --scenario or --as-case: export it).
    #[arg(value_name = "RUN_ID")]
    pub run_id: Option<String>,
    /// Print the run as a `kiln mock` scenario (replay it with `run_agent(..., #{ scenario })`).
    #[arg(long, requires = "run_id")]
    pub scenario: bool,
    /// Print the run as one JSONL line of a `kiln eval` cases file: its first prompt as the
    /// input, its answer as the expected one (append it: `kiln logs RUN --as-case >> cases.jsonl`).
    #[arg(long, requires = "run_id", conflicts_with = "scenario")]
    pub as_case: bool,
    /// Only runs of this eval run (the id `kiln eval` prints).
    #[arg(long, value_name = "EVAL_ID")]
    pub eval: Option<String>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only runs that called this tool.
    #[arg(long)]
    pub tool: Option<String>,
    /// Only runs started within this long ago: 30s, 10m, 2h, 7d.
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// At most this many runs.
    #[arg(short = 'n', long = "count", default_value_t = 10)]
    pub count: usize,
    /// Print JSON (runs with their tool calls and messages).
    #[arg(long)]
    pub json: bool,
    /// With `kiln logs prune`: forget runs that ended longer ago than this (30d, 12h), with
    /// their steps; sessions stay until deleted.
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
}

/// `kiln sessions` subcommands.
#[derive(Args, Debug)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: Option<SessionAction>,
}

/// What to do with sessions.
#[derive(Subcommand, Debug)]
pub enum SessionAction {
    /// List sessions (the default).
    List,
    /// Show a session's messages and state.
    Show {
        /// The session.
        name: String,
    },
    /// Delete a session.
    Delete {
        /// The session.
        name: String,
    },
    /// Compact a session: its older messages become one summary written by its agent's model
    /// (or are trimmed, with --trim), its latest kept as they are. The run log keeps every
    /// original message.
    Compact {
        /// The session.
        name: String,
        /// How many of the latest messages stay as they are (default: the agent's
        /// `.compact` keep_last, else 8); the cut moves back to a person's message.
        #[arg(long, value_name = "N")]
        keep_last: Option<usize>,
        /// Trim instead of summarizing: tool results shortened, then the oldest dropped; no
        /// model request.
        #[arg(long)]
        trim: bool,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Seconds in `30s`, `10m`, `2h`, `7d` (a bare number is seconds).
fn seconds(text: &str) -> Result<f64, String> {
    use kiln::duration::{BareUnit, DurationError, parse_duration};
    parse_duration(text, BareUnit::Seconds)
        .map(|d| d.as_secs_f64())
        .map_err(|e| match e {
            // As `kiln logs` has always said it: the text and the unit quoted.
            DurationError::UnknownUnit { text, unit } => {
                format!("{text:?}: unknown unit {unit:?} (use ms, s, m, h or d)")
            }
            e => e.to_string(),
        })
}

fn time(secs: f64) -> String {
    let iso = kiln::time::iso_from_secs(secs as i64);
    iso.replace('T', " ").trim_end_matches('Z').to_string()
}

/// `kiln logs`.
pub fn logs(g: &Global, a: LogsArgs) -> CliResult<ExitCode> {
    let db = g.open_db()?;
    if a.run_id.as_deref() == Some("prune") {
        return prune(&db, a.older_than.as_deref());
    }
    if a.older_than.is_some() {
        return Err("--older-than goes with `kiln logs prune`".into());
    }
    if a.scenario
        && let Some(id) = &a.run_id
    {
        let scenario = kiln_testing::export::scenario_from_log(&db, id)?;
        output::outln!("{}", output::json(&scenario))?;
        return Ok(ExitCode::SUCCESS);
    }
    if a.as_case
        && let Some(id) = &a.run_id
    {
        let case = kiln_testing::export::case_from_log(&db, id)?;
        // One line, however the prompt and answer break: a cases file is JSONL.
        output::outln!("{}", serde_json::to_string(&case)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let since = a
        .since
        .as_deref()
        .map(|s| seconds(s).map_err(|e| format!("--since {e}")))
        .transpose()?
        .map(|s| kiln::log::now() - s);
    let runs = db.runs(&LogFilter {
        agent: a.agent,
        tool: a.tool,
        since,
        eval: a.eval,
        run: a.run_id.clone(),
        limit: if a.run_id.is_some() { 0 } else { a.count },
        ..LogFilter::default()
    })?;
    if let Some(id) = &a.run_id
        && runs.is_empty()
    {
        return Err(kiln_testing::TestError::UnknownRun(id.clone()).into());
    }
    if a.json {
        return print_json(&db, runs);
    }
    if runs.is_empty() {
        outln!("no runs logged in {}", db.path().display())?;
    }
    for r in runs {
        show_run(&r, a.run_id.is_some())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `kiln logs prune --older-than D`: forgets the runs that ended longer ago than `D`.
fn prune(db: &kiln::log::Db, older_than: Option<&str>) -> CliResult<ExitCode> {
    let Some(age) = older_than else {
        return Err("kiln logs prune needs --older-than DURATION (e.g. 30d)".into());
    };
    let gone =
        db.prune_runs(kiln::log::now() - seconds(age).map_err(|e| format!("--older-than {e}"))?)?;
    outln!("forgot {gone} run(s) that ended more than {age} ago")?;
    Ok(ExitCode::SUCCESS)
}

/// `kiln logs --json`: the runs as one JSON array, each with its shown status and messages.
fn print_json(db: &kiln::log::Db, runs: Vec<kiln::log::RunRow>) -> CliResult<ExitCode> {
    let mut out = Vec::new();
    for r in runs {
        let mut v = serde_json::to_value(&r)?;
        v["status"] = serde_json::json!(r.shown_status());
        v["messages"] = serde_json::Value::Array(db.run_messages(&r.id)?);
        out.push(v);
    }
    outln!("{}", output::json(&serde_json::Value::Array(out)))?;
    Ok(ExitCode::SUCCESS)
}

/// One run as text: its summary line, prompt, model calls (`alone`: every round), tool calls
/// and how it ended.
fn show_run(r: &kiln::log::RunRow, alone: bool) -> CliResult<()> {
    let session = r
        .session
        .as_deref()
        .map(|s| format!(" session {s}"))
        .unwrap_or_default();
    let session = match r.actor.as_deref() {
        Some(actor) => format!("{session} for {actor}"),
        None => session,
    };
    let cost = r.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default();
    let parent = r
        .parent
        .as_deref()
        .map(|p| format!(" (started by {p})"))
        .unwrap_or_default();
    let trace = r
        .trace_id
        .as_deref()
        .map(|t| format!(", trace {t}"))
        .unwrap_or_default();
    let eval = r
        .eval_id
        .as_deref()
        .map(|e| format!(", eval {e}"))
        .unwrap_or_default();
    outln!(
        "{}  {}  {} ({}/{}){session}{parent}  {}  {} rounds, {} tool calls, {}+{} tokens{cost}{trace}{eval}",
        r.id,
        time(r.started_at),
        r.agent,
        r.provider.as_deref().unwrap_or("?"),
        r.model.as_deref().unwrap_or("?"),
        r.shown_status(),
        r.rounds,
        r.tool_calls.len(),
        r.input_tokens,
        r.output_tokens
    )?;
    outln!(
        "  > {}",
        output::truncate(r.prompt.as_deref().unwrap_or(""), 100)
    )?;
    show_model_calls(r, alone)?;
    show_tool_calls(r)?;
    match (&r.error, &r.answer) {
        (Some(e), _) => outln!("  error: {}", output::truncate(e, 160))?,
        (None, Some(ans)) if !ans.is_empty() => outln!("  < {}", output::truncate(ans, 100))?,
        _ => {}
    }
    Ok(())
}

/// A run's tool calls, one line each: a program's calls indented under it, a rate-limited
/// call marked with the wait the model was told.
fn show_tool_calls(r: &kiln::log::RunRow) -> CliResult<()> {
    for c in &r.tool_calls {
        let mark = if c.is_error { "✗" } else { "→" };
        // A limited call never ran: say so, with the wait the model was told.
        let limited = match c.failure() {
            Some(f) if f.kind == FailureKind::RateLimited => {
                format!("  rate limited: {}", f.message)
            }
            _ => String::new(),
        };
        // A program's calls are shown under it.
        let indent = if c.is_nested() { "    " } else { "" };
        outln!(
            "  {indent}{mark} {}({}) {:.1} ms{limited}",
            c.name,
            output::truncate(&c.args.to_string(), 80),
            c.duration_ms
        )?;
        show_notes(indent, &c.notes)?;
    }
    Ok(())
}

/// What a call told its caller while it ran: its events, one line each, and its last
/// progress.
fn show_notes(indent: &str, notes: &serde_json::Value) -> CliResult<()> {
    let notes = notes.as_array().map(Vec::as_slice).unwrap_or_default();
    let last_progress = notes.iter().rposition(|n| n["kind"] == "progress");
    for (i, n) in notes.iter().enumerate() {
        match n["kind"].as_str() {
            Some("emit") => outln!(
                "  {indent}    · {} {}",
                n["name"].as_str().unwrap_or("?"),
                output::truncate(&n["value"].to_string(), 100)
            )?,
            Some("progress") if Some(i) == last_progress => {
                let total = n["total"]
                    .as_f64()
                    .map(|t| format!("/{t}"))
                    .unwrap_or_default();
                let message = n["message"]
                    .as_str()
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default();
                outln!(
                    "  {indent}    · progress {}{total}{}",
                    n["done"],
                    output::truncate(&message, 100)
                )?
            }
            _ => {}
        }
    }
    Ok(())
}

/// Who answered each round: every round of one run shown alone, else the rounds a fallback
/// model answered.
fn show_model_calls(r: &kiln::log::RunRow, all: bool) -> CliResult<()> {
    for m in &r.model_calls {
        let (Some(provider), Some(model)) = (&m.provider, &m.model) else {
            continue;
        };
        let own = Some(provider) == r.provider.as_ref() && Some(model) == r.model.as_ref();
        if own && !all {
            continue;
        }
        let reasoning = match m.reasoning_tokens {
            Some(n) if n > 0 => format!(" ({n} reasoning)"),
            _ => String::new(),
        };
        let fallback = if own { "" } else { " (fallback)" };
        outln!(
            "  round {}: {provider}/{model}{fallback}, {}+{} tokens{reasoning}",
            m.round,
            m.input_tokens.unwrap_or(0),
            m.output_tokens.unwrap_or(0),
        )?;
    }
    Ok(())
}

/// `kiln db`: the database itself.
#[derive(Args, Debug)]
pub struct DbArgs {
    #[command(subcommand)]
    pub action: DbAction,
}

/// What to do with the database.
#[derive(Subcommand, Debug)]
pub enum DbAction {
    /// Copy everything the database (--db) keeps into another: runs and their steps,
    /// sessions, the store and stored responses. Rows the target has already are kept as
    /// they are, so a copy that stopped can be run again. Then point every kiln at the
    /// target with --db (or `db` in kiln.toml).
    Migrate {
        /// The database to copy into: postgres://USER@HOST:PORT/NAME (the password from
        /// KILN_DB_PASSWORD or PGPASSWORD), or an SQLite file.
        #[arg(long, value_name = "URL|PATH")]
        to: String,
    },
}

/// `kiln db`.
pub fn db(g: &Global, a: DbArgs) -> CliResult<ExitCode> {
    match a.action {
        DbAction::Migrate { to } => {
            let from = g.open_db()?;
            let target = kiln::log::Db::connect(&to)?;
            if from.path() == target.path() {
                return Err(format!(
                    "--to {} is the database kiln reads from (--db): name another",
                    target.path().display()
                )
                .into());
            }
            let copied = from.copy_into(&target, |table, rows| {
                eprintln!("{table}: {rows} rows copied");
            })?;
            for (table, read, added) in &copied.tables {
                let kept = read - added;
                outln!("{table}: {read} rows, {added} added, {kept} already there")?;
            }
            outln!(
                "copied {} into {}",
                from.path().display(),
                target.path().display()
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `kiln sessions`.
pub fn sessions(g: &Global, a: SessionsArgs) -> CliResult<ExitCode> {
    let db = g.open_db()?;
    match a.action.unwrap_or(SessionAction::List) {
        SessionAction::List => {
            let list = db.sessions()?;
            if list.is_empty() {
                outln!("no sessions")?;
            }
            for s in list {
                outln!(
                    "{}  {}  {} messages  {}",
                    s.name,
                    s.agent,
                    s.messages,
                    time(s.updated_at)
                )?;
            }
        }
        SessionAction::Show { name } => match db.session(&name)? {
            Some(s) => outln!("{}", output::json(&serde_json::to_value(&s)?))?,
            None => return Err(kiln::log::DbError::NoSession(name).into()),
        },
        SessionAction::Delete { name } => {
            db.delete_session(&name)?;
            outln!("deleted session {name}")?;
        }
        SessionAction::Compact {
            name,
            keep_last,
            trim,
            json,
        } => compact_session(g, &name, keep_last, trim, json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `kiln sessions compact NAME`: the session's transcript compacted by its agent, written
/// back unless a run went on meanwhile.
fn compact_session(
    g: &Global,
    name: &str,
    keep_last: Option<usize>,
    trim: bool,
    json: bool,
) -> CliResult<()> {
    use kiln::compaction::{CompactRequest, compact_transcript};
    let (host, db) = g.host_with_db()?;
    let session = db
        .session(name)?
        .ok_or_else(|| kiln::log::DbError::NoSession(name.to_string()))?;
    if db.session_busy(name)? {
        return Err(format!(
            "session \"{name}\" has a run in progress: compact it once that run has ended"
        )
        .into());
    }
    let agent = host.agent(&session.agent)?;
    let request = CompactRequest {
        keep_last,
        with: trim.then_some(kiln::model::CompactWith::Trim),
    };
    let cancel = kiln::CancellationToken::new();
    super::ask::cancel_on_ctrl_c(&cancel);
    let runtime = super::one_thread_runtime()?;
    let compacted = runtime
        .block_on(compact_transcript(
            &agent,
            &Default::default(),
            &host.config().providers,
            &session.messages,
            &request,
            &cancel,
        ))
        .map_err(|e| format!("compacting session \"{name}\": {e}"))?;
    let before = session.messages.len();
    let after = compacted.messages();
    if !compacted.head.is_empty() {
        db.replace_session_messages(name, session.updated_at, &after)?;
    }
    // The compaction is a run in the run log, as the door's is.
    kiln::log::log_finished(&db, &compacted.report(&agent, None))?;
    let u = compacted.usage;
    if json {
        let out = serde_json::json!({
            "session": name, "agent": session.agent, "messages_before": before,
            "messages_after": after.len(), "compacted": compacted.covered,
            "summary": compacted.summary(), "model": compacted.model,
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens},
        });
        return Ok(outln!("{}", output::json(&out))?);
    }
    if compacted.head.is_empty() {
        return Ok(outln!(
            "session {name}: {before} messages, nothing to compact (the latest are kept as they are)"
        )?);
    }
    let how = match compacted.summary() {
        Some(_) => format!(
            "a summary by {} ({}+{} tokens)",
            compacted.model, u.input_tokens, u.output_tokens
        ),
        None => "trimmed".to_string(),
    };
    outln!(
        "compacted session {name}: {before} messages → {} ({} replaced by {how}); the run log keeps the originals",
        after.len(),
        compacted.covered
    )?;
    Ok(())
}

/// When a command checks its database's pages (`PRAGMA quick_check`) at its start. The check
/// reads the whole file (about 0.3 s for 300 MB, 100,000 runs, from the page cache), so
/// commands that start once and serve long always pay it, and one-shot commands only while
/// the file is small.
#[derive(Debug, Clone, Copy)]
pub enum DbCheck {
    /// Always (`kiln serve`, `kiln worker`, `kiln mcp`, the REPL).
    Always,
    /// When the file is at most [`DbCheck::SMALL`] bytes (`kiln ask`, `call`, `run`, ...).
    IfSmall,
}

impl DbCheck {
    /// The largest file a one-shot command checks: its check takes about 70 ms.
    pub const SMALL: u64 = 64 << 20;

    /// Checks `db` if this says so.
    pub fn run(self, db: &kiln::log::Db) -> CliResult<()> {
        let small = || std::fs::metadata(db.path()).is_ok_and(|m| m.len() <= Self::SMALL);
        if matches!(self, DbCheck::Always) || small() {
            db.quick_check()?;
        }
        Ok(())
    }
}
