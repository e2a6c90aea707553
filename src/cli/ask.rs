//! `kiln ask AGENT "prompt"`: run an agent, stream its answer, show its tool calls.

use super::output::{self, outln};
use super::tools_cmd::parse_context;
use super::{CliResult, Global, parse_caps};
use clap::Args;
use kiln::model::{Attachment, ProviderOverrides, media_type_of};
use kiln::project::{Seconds, defaults as d};
use kiln::{Event, Grants, RunOptions};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `kiln ask` options.
#[derive(Args, Debug)]
pub struct AskArgs {
    /// The agent to run.
    pub agent: String,
    /// What to ask; `-` reads it from stdin.
    pub prompt: String,
    /// Provider, model, base URL, request timeout, retries.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Grants (instead of the agent's own, for `ask`), context and actor.
    #[command(flatten)]
    pub run: super::ContextArgs,
    /// Tool rounds allowed before the run fails with ToolLoopError.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// What the first model request asks of the model: `auto` (its choice, the default),
    /// `none` (answer without tools), `required` (call some tool) or a tool's name (call that
    /// tool). Later requests leave it to the model, so it answers once the tool ran.
    #[arg(long, value_name = "CHOICE", value_parser = parse_tool_choice)]
    pub tool_choice: Option<kiln::model::ToolChoice>,
    /// Ask for at most one tool call per model reply (`parallel_tool_calls: false`; ignored
    /// where the wire has no such switch: Gemini, Bedrock, Ollama).
    #[arg(long)]
    pub no_parallel_tool_calls: bool,
    /// Print the whole run as JSON (messages, tool calls, results, usage, stop reason).
    #[arg(long)]
    pub json: bool,
    /// Do not print tool-call lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Wait for whole replies instead of streaming.
    #[arg(long)]
    pub no_stream: bool,
    /// Give up after this long (`90s`, `5m`; a bare number is seconds).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Seconds>,
    /// Continue (or start) the named session: its messages and ctx.state are restored and saved.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Reload changed scripts while the run goes on (each model turn sees the latest tools).
    #[arg(long)]
    pub watch: bool,
    /// Limits of this run, within the agent's `.budget`: `tool_calls=N`, `input_tokens=N`,
    /// `output_tokens=N`, `cost_usd=X`, comma-separated. Reaching one ends the run (exit 1)
    /// with a budget error naming the limit and the spend.
    #[arg(long, value_name = "LIMITS", value_parser = parse_budget)]
    pub budget: Option<kiln::Budget>,
    /// Attach an image or a PDF to the prompt (repeatable): png, jpg/jpeg, gif, webp or pdf,
    /// by the file's extension. A model whose wire cannot take it (Ollama: images only)
    /// refuses the run before anything is sent.
    #[arg(long, value_name = "FILE")]
    pub attach: Vec<std::path::PathBuf>,
}

/// `--attach`'s files, read: a file of another type or one that cannot be read is an error
/// naming its path.
fn read_attachments(paths: &[std::path::PathBuf]) -> CliResult<Vec<Attachment>> {
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let shown = path.display();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(media_type) = name.as_deref().and_then(media_type_of) else {
            let e = format!(
                "--attach {shown}: not a file kiln attaches (png, jpg, jpeg, gif, webp, pdf, by extension)"
            );
            return Err(e.into());
        };
        let bytes = std::fs::read(path).map_err(|e| format!("--attach {shown}: {e}"))?;
        let mut a = Attachment::from_bytes(media_type, &bytes);
        a.filename = name;
        out.push(a);
    }
    Ok(out)
}

fn parse_budget(text: &str) -> Result<kiln::Budget, String> {
    kiln::Budget::parse(text)
}

/// Where model requests go and how they are retried (`ask`, `worker`).
#[derive(Args, Debug, Clone)]
pub struct ProviderArgs {
    /// Use this provider instead of the agent's (anthropic, openai, openai-responses, azure,
    /// azure-responses, gemini, bedrock, ollama, script).
    #[arg(long)]
    pub provider: Option<String>,
    /// Use this model instead of the agent's.
    #[arg(long)]
    pub model: Option<String>,
    /// Send requests here (any OpenAI-compatible server, a local Ollama, kiln mock).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How long a model reply may take; for a streamed one, how long until it starts.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::REQUEST_TIMEOUT))]
    pub request_timeout: Seconds,
    /// How long a streamed reply may go without sending anything.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::IDLE_TIMEOUT))]
    pub idle_timeout: Seconds,
    /// How long one streamed reply may take in all.
    #[arg(long, value_name = "DURATION", default_value_t = Seconds(d::STREAM_TIMEOUT))]
    pub stream_timeout: Seconds,
    /// Largest model reply accepted, in bytes (`K`, `M`, `G` suffixes; default 32M, or the
    /// agent's `.max_reply_bytes`).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_reply_bytes: Option<usize>,
    /// Largest line of a streamed reply, in bytes (default 4M, or `.max_line_bytes`).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_line_bytes: Option<usize>,
    /// Largest model request a run sends, in bytes: its transcript as the wire renders it,
    /// reasoning items included (`K`, `M`, `G` suffixes; default 16M). A run past it ends
    /// with a `limit` error.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_transcript_bytes: Option<usize>,
    /// Retries of a failed model request (429, 5xx, timeouts).
    #[arg(long, value_name = "N", default_value_t = d::MAX_RETRIES)]
    pub retries: u32,
    /// Models to fall back to, in order, when the agent's is busy or unreachable after its
    /// retries (429, overload, 5xx, timeouts): `PROVIDER[:MODEL],...`, instead of the agent's
    /// `.fallback`. Each reaches its provider by its own environment (`OPENAI_BASE_URL`...).
    #[arg(long, value_name = "LIST", value_parser = parse_fallback)]
    pub fallback: Option<FallbackList>,
    /// Recover tool calls the model writes as text (off, auto, hermes, qwen, mistral, llama, deepseek, gemma, json),
    /// instead of the agent's `.text_tool_calls`.
    #[arg(long, value_name = "FORMAT", value_parser = parse_text_calls)]
    pub text_tool_calls: Option<kiln::model::TextCallFormat>,
}

/// `--fallback`'s models, in order.
#[derive(Debug, Clone)]
pub struct FallbackList(pub Vec<kiln::model::FallbackModel>);

fn parse_fallback(text: &str) -> Result<FallbackList, String> {
    kiln::model::FallbackModel::parse_list(text).map(FallbackList)
}

fn parse_text_calls(text: &str) -> Result<kiln::model::TextCallFormat, String> {
    kiln::model::TextCallFormat::parse(text).ok_or_else(|| {
        let names = kiln::model::TextCallFormat::names();
        format!("unknown format \"{text}\" (expected one of: {names})")
    })
}

/// `--tool-choice`: `auto`, `none`, `required`, else the name of the tool to call.
fn parse_tool_choice(text: &str) -> Result<kiln::model::ToolChoice, String> {
    use kiln::model::ToolChoice;
    Ok(match text.trim() {
        "" => return Err("expected auto, none, required or a tool's name".into()),
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        name => ToolChoice::Tool(name.to_string()),
    })
}

impl ProviderArgs {
    /// The overrides these flags describe.
    pub fn overrides(&self) -> ProviderOverrides {
        ProviderOverrides {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            timeout: self.request_timeout.nonzero(),
            max_retries: Some(self.retries),
            max_reply_bytes: self.max_reply_bytes,
            max_line_bytes: self.max_line_bytes,
            max_transcript_bytes: self.max_transcript_bytes,
            idle_timeout: self.idle_timeout.nonzero(),
            stream_timeout: self.stream_timeout.nonzero(),
            fallback: self.fallback.clone().map(|f| f.0),
            text_tool_calls: self.text_tool_calls,
            ..ProviderOverrides::default()
        }
    }
}

/// A positive byte count: `1048576`, `512K`, `32M`, `1G` (binary multiples; `KiB` etc. too).
fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("unknown unit \"{unit}\" (use K, M or G)")),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1usize << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("\"{text}\" is not a positive size (like 4096, 512K, 32M)"))
}

/// Runs `kiln ask`.
pub fn ask(g: &Global, a: AskArgs) -> CliResult<ExitCode> {
    let prompt = read_prompt(&a.prompt)?;
    let attachments = read_attachments(&a.attach)?;
    let (host, db) = g.host_with_db()?;
    for e in &host.registry().errors {
        output::error(&e.to_string());
    }
    let _watcher = start_watcher(&host, a.watch)?;
    let agent = host.agent(&a.agent)?;
    let cancel = CancellationToken::new();
    let printed_text = Arc::new(AtomicBool::new(false));
    let progress = std::io::stderr().is_terminal() && !a.quiet;
    let observer = observer(a.json, a.quiet, progress, printed_text.clone());
    let resumed = match &a.session {
        Some(name) => db.resume_session(name, name, &a.agent)?,
        None => Default::default(),
    };
    let steering = steered_from_terminal(&a);
    let run = RunInputs {
        agent_grants: &agent.grants,
        cancel: cancel.clone(),
        observer,
        resumed,
        attachments,
        steering: steering.clone(),
    };
    let opts = run_options(g, &a, run)?;
    // One thread: the loop, the connection and the run log's commits take turns on it without
    // cross-thread wake-ups (a streamed reply wakes the loop once per chunk); tool handlers
    // still run on the blocking pool, so a long call never stalls Ctrl-C or a deadline.
    let runtime = super::one_thread_runtime()?;
    cancel_on_ctrl_c(&cancel);
    let result = runtime.block_on(host.run(&a.agent, &prompt, opts));
    // Lines typed from now on reach no run.
    steering.inspect(|s| s.close());
    let (report, error) = match result {
        Ok(r) => (r, None),
        Err(e) => (*e.report.clone(), Some(e)),
    };
    // The run is over and logged either way; a closed stdout only ends the printing.
    let json = a.json.then(|| serde_json::to_value(&report)).transpose()?;
    let printed = print_report(json, printed_text.load(Ordering::Relaxed), &report.answer);
    runtime.shutdown_timeout(Duration::from_millis(100));
    exit_code(printed, error)
}

/// Steering from the terminal, when stdin is one (not the prompt's pipe): a line typed while
/// the run runs, answering no approval, is added to it before its next model request.
fn steered_from_terminal(a: &AskArgs) -> Option<Arc<kiln::steer::Steering>> {
    if a.prompt == "-" || !std::io::stdin().is_terminal() {
        return None;
    }
    let steering = Arc::new(kiln::steer::Steering::default());
    if !super::approve::steer_from_terminal(steering.clone()) {
        return None;
    }
    if std::io::stderr().is_terminal() && !a.quiet && !a.json {
        output::hint("type a line and Enter to add it to the run while it runs");
    }
    Some(steering)
}

/// The prompt: the argument itself, or stdin when it is `-` (for long or piped prompts).
fn read_prompt(arg: &str) -> CliResult<String> {
    Ok(if arg == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        arg.to_string()
    })
}

/// `--watch`'s script watcher, reporting reloads on stderr; kept alive by the caller for the
/// run's length, so each model turn sees the latest tools.
fn start_watcher(host: &Arc<kiln::Host>, watch: bool) -> CliResult<Option<impl Sized>> {
    if !watch {
        return Ok(None);
    }
    Ok(Some(kiln::reload::watch(host.clone(), |r| {
        let _ = writeln!(std::io::stderr(), "{r}");
    })?))
}

/// The run's observer: streams text to stdout (unless `--json`), shows the waiting line on a
/// terminal, and prints one stderr line per tool call (unless `--quiet`). `printed` records
/// whether any text went out, so the answer is not printed twice afterwards.
fn observer(
    json: bool,
    quiet: bool,
    progress: bool,
    printed: Arc<AtomicBool>,
) -> kiln::durable::Observer {
    let bars = if progress {
        super::output::tool_bars::ToolBars::on_terminal()
    } else {
        None
    };
    Arc::new(move |ev: &Event| match ev {
        Event::ToolNote { id, name, note, .. } => {
            if let Some(bars) = &bars {
                bars.note(id, name, note);
            }
        }
        Event::ToolFinished(r) => {
            if let Some(bars) = &bars {
                bars.finish(&r.id);
            }
            if !quiet {
                print_tool_call(r);
            }
        }
        Event::Text(t) if !json => {
            if progress {
                let _ = write!(std::io::stderr(), "\r\x1b[K");
            }
            printed.store(true, Ordering::Relaxed);
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(t.as_bytes());
            let _ = out.flush();
        }
        Event::ModelRequest { round } if progress => {
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[K… waiting for the model (round {round})"
            );
        }
        Event::ModelReply { .. } if progress => {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
        _ => {}
    })
}

/// One finished tool call on stderr: its name, arguments, time and outcome, shortened to fit
/// a line.
fn print_tool_call(r: &kiln::durable::ToolCallRecord) {
    let status = if r.is_error {
        format!(
            "error: {}",
            r.outcome.error().map_or("", |e| e.message.as_str())
        )
    } else {
        "ok".into()
    };
    crate::cli::output::errln!(
        "{} {}({}) {:.1} ms {}",
        if r.is_error { "✗" } else { "→" },
        r.name,
        output::truncate(&r.args.to_string(), 120),
        r.duration_ms,
        output::truncate(&status, 200)
    );
}

/// What `run_options` takes besides the flags: pieces made earlier in `ask`.
struct RunInputs<'a> {
    /// The agent's own grants, which `--caps` narrows.
    agent_grants: &'a Grants,
    /// Cancelled on Ctrl-C.
    cancel: CancellationToken,
    /// Prints the run as it goes.
    observer: kiln::durable::Observer,
    /// The session's messages and state (empty without `--session`).
    resumed: kiln::log::Resumed,
    /// `--attach`'s files.
    attachments: Vec<Attachment>,
    /// Lines typed at the terminal while the run runs (stdin a terminal).
    steering: Option<Arc<kiln::steer::Steering>>,
}

/// The run's options from the flags: provider overrides, grants, context and limits.
fn run_options(g: &Global, a: &AskArgs, run: RunInputs<'_>) -> CliResult<RunOptions> {
    Ok(RunOptions {
        overrides: ProviderOverrides {
            tool_choice: a.tool_choice.clone(),
            parallel_tool_calls: a.no_parallel_tool_calls.then_some(false),
            ..a.provider.overrides()
        },
        // `--caps` narrows the agent's own grants (the run takes their meet); `--ask` marks
        // either as needing approval.
        grants: Some(
            g.mark_ask(Grants::effective(&[
                Some(run.agent_grants),
                (!a.run.caps.is_empty())
                    .then(|| parse_caps(&a.run.caps))
                    .transpose()?
                    .as_ref(),
            ])),
        ),
        context: parse_context(&a.run.context)?,
        actor_id: a.run.actor.clone(),
        max_iterations: a.max_iterations,
        stream: !a.no_stream,
        timeout: a.timeout.and_then(Seconds::nonzero),
        cancel: run.cancel,
        observer: Some(run.observer),
        history: run.resumed.messages,
        attachments: run.attachments,
        state: run.resumed.state,
        // The host has the database: it logs the run under the session.
        recorder: None,
        session: a.session.clone(),
        run_id: None,
        budget: a.budget.clone(),
        // The terminal asks (the host's approver).
        approver: None,
        depth: 0,
        parent: None,
        client_tools: Vec::new(),
        eval_id: None,
        tool_events: None,
        // Lines typed that answer no approval's question reach the run.
        steering: run.steering,
    })
}

/// The end of the answer on stdout: the whole run as JSON (`--json`: `json` is the report),
/// a final newline after streamed text, or the answer itself when nothing was streamed.
fn print_report(
    json: Option<serde_json::Value>,
    printed_text: bool,
    answer: &str,
) -> CliResult<()> {
    if let Some(json) = json {
        outln!("{}", output::json(&json))
    } else if printed_text && !answer.ends_with('\n') {
        outln!()
    } else if !printed_text && !answer.is_empty() {
        // Planner mode (and non-streamed replies without text events) print the answer here.
        outln!("{answer}")
    } else {
        Ok(())
    }
}

/// The exit status: success when the run and its printing went well; a failed run is
/// reported on stderr and exits 1 (130 when cancelled).
fn exit_code(printed: CliResult<()>, error: Option<kiln::RunError>) -> CliResult<ExitCode> {
    match error {
        None => printed.map(|()| ExitCode::SUCCESS),
        Some(e) => {
            output::error(&e.to_string());
            Ok(ExitCode::from(
                if matches!(e.kind, kiln::RunErrorKind::Cancelled) {
                    130
                } else {
                    1
                },
            ))
        }
    }
}

/// Cancels `token` on Ctrl-C, from a thread of its own: the run's thread may be busy running a
/// tool in place, and a cancel must still reach it (the tool sees the run's cancel flag).
pub(super) fn cancel_on_ctrl_c(token: &CancellationToken) {
    let token = token.clone();
    let listening = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map(|rt| {
            std::thread::spawn(move || {
                if rt.block_on(tokio::signal::ctrl_c()).is_ok() {
                    token.cancel();
                }
            })
        });
    if let Err(e) = listening {
        tracing::warn!("Ctrl-C will not cancel the run: {e}");
    }
}
