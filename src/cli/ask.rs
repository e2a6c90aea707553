//! `kiln ask AGENT "prompt"`: run an agent, stream its answer, show its tool calls.

use super::tools_cmd::parse_context;
use super::{CliResult, Global, output, parse_caps};
use crate::agent::connect::ProviderOverrides;
use crate::agent::{RunEvent, RunOptions};
use clap::Args;
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
    /// Use this provider instead of the agent's (anthropic, openai, ollama, script).
    #[arg(long)]
    pub provider: Option<String>,
    /// Use this model instead of the agent's.
    #[arg(long)]
    pub model: Option<String>,
    /// Send requests here (any OpenAI-compatible server, a local Ollama, kiln mock).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Grants (instead of the agent's own, for `ask`), context and actor.
    #[command(flatten)]
    pub run: super::ContextArgs,
    /// Tool rounds allowed before the run fails with ToolLoopError.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Print the whole run as JSON (messages, tool calls, results, usage, stop reason).
    #[arg(long)]
    pub json: bool,
    /// Do not print tool-call lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Wait for whole replies instead of streaming.
    #[arg(long)]
    pub no_stream: bool,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Seconds before one model request times out.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub request_timeout: f64,
    /// Continue (or start) the named session: its messages and ctx.state are restored and saved.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Reload changed scripts while the run goes on (each model turn sees the latest tools).
    #[arg(long)]
    pub watch: bool,
    /// Retries of a failed model request (429, 5xx, timeouts).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,
}

fn secs(s: f64) -> Option<Duration> {
    (s.is_finite() && s > 0.0).then(|| Duration::from_secs_f64(s))
}

/// Runs `kiln ask`.
pub fn ask(g: &Global, a: AskArgs) -> CliResult<ExitCode> {
    let prompt = if a.prompt == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        a.prompt.clone()
    };
    let (host, db) = g.host_with_db()?;
    for e in &host.registry().errors {
        output::error(&e.to_string());
    }
    let _watcher = if a.watch {
        Some(crate::reload::watch(host.clone(), |r| eprintln!("{r}"))?)
    } else {
        None
    };
    let agent = host.agent(&a.agent)?;
    let cancel = CancellationToken::new();
    let printed_text = Arc::new(AtomicBool::new(false));
    let progress = std::io::stderr().is_terminal() && !a.quiet;
    let observer: crate::agent::Observer = {
        let (json, quiet, printed) = (a.json, a.quiet, printed_text.clone());
        Arc::new(move |ev: &RunEvent| match ev {
            RunEvent::Text(t) if !json => {
                if progress {
                    eprint!("\r\x1b[K");
                }
                printed.store(true, Ordering::Relaxed);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(t.as_bytes());
                let _ = out.flush();
            }
            RunEvent::ModelStart { round } if progress => {
                eprint!("\r\x1b[K… waiting for the model (round {round})")
            }
            RunEvent::ModelDone { .. } if progress => eprint!("\r\x1b[K"),
            RunEvent::ToolDone(r) if !quiet => {
                let status = if r.is_error {
                    format!(
                        "error: {}",
                        r.outcome["error"]["message"].as_str().unwrap_or("")
                    )
                } else {
                    "ok".into()
                };
                eprintln!(
                    "{} {}({}) {:.1} ms {}",
                    if r.is_error { "✗" } else { "→" },
                    r.name,
                    output::truncate(&r.args.to_string(), 120),
                    r.duration_ms,
                    output::truncate(&status, 200)
                );
            }
            _ => {}
        })
    };
    let (history, state) = match &a.session {
        Some(name) => match db.session(name)? {
            Some(s) if s.agent != a.agent => {
                return Err(format!(
                    "session \"{name}\" belongs to agent \"{}\", not \"{}\"",
                    s.agent, a.agent
                )
                .into());
            }
            Some(s) => (s.messages, Some(Arc::new(std::sync::Mutex::new(s.state)))),
            None => (Vec::new(), None),
        },
        None => (Vec::new(), None),
    };
    let opts = RunOptions {
        overrides: ProviderOverrides {
            provider: a.provider.clone(),
            model: a.model.clone(),
            base_url: a.base_url.clone(),
            timeout: secs(a.request_timeout),
            max_retries: Some(a.retries),
            ..ProviderOverrides::default()
        },
        grants: Some(g.mark_ask(if a.run.caps.is_empty() {
            agent.grants.clone()
        } else {
            parse_caps(&a.run.caps)?
        })),
        context: parse_context(&a.run.context)?,
        actor_id: a.run.actor.clone(),
        max_iterations: a.max_iterations,
        stream: !a.no_stream,
        timeout: a.timeout.and_then(secs),
        cancel: cancel.clone(),
        observer: Some(observer),
        history,
        state,
        // The host has the database: it logs the run under the session.
        recorder: None,
        session: a.session.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                ctrl_c.cancel();
            }
        });
        host.run(&a.agent, &prompt, opts).await
    });
    let (report, error) = match result {
        Ok(r) => (r, None),
        Err(e) => (*e.report.clone(), Some(e)),
    };
    if a.json {
        println!("{}", output::json(&serde_json::to_value(&report)?));
    } else if printed_text.load(Ordering::Relaxed) {
        if !report.answer.ends_with('\n') {
            println!();
        }
    } else if !report.answer.is_empty() {
        // Planner mode (and non-streamed replies without text events) print the answer here.
        println!("{}", report.answer);
    }
    runtime.shutdown_timeout(Duration::from_millis(100));
    match error {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => {
            output::error(&e.to_string());
            Ok(ExitCode::from(
                if matches!(e.kind, crate::agent::RunErrorKind::Cancelled) {
                    130
                } else {
                    1
                },
            ))
        }
    }
}
