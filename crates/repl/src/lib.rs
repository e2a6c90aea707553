//! The interactive REPL (`kiln repl`): call tools, chat with agents, run pipelines, evaluate
//! Rhai, list MCP servers, with hot reload on; line editing and completion by rustyline.
//!
//! May depend on: kiln-core, kiln-registry, kiln-providers, kiln-script, kiln-db, kiln-agent, kiln-host.

#![warn(missing_docs)]

mod helper;

use helper::{COMMANDS, ReplHelper};
use kiln_agent::{Event, Observer, RunOptions, run};
use kiln_core::capability::{Capability, GrantMode, Grants};
use kiln_core::schema::Format;
use kiln_host::Host;
use kiln_providers::Message;
use kiln_registry::Registry;
use kiln_script::{host, sandbox};
use rhai::{AST, Dynamic, Scope};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Editor, ExternalPrinter};
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one line of Rhai may run.
const EVAL_DEADLINE: Duration = Duration::from_secs(60);

/// Where the REPL keeps its history: `KILN_HISTORY`, else the user's data folder.
pub fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KILN_HISTORY") {
        return Some(PathBuf::from(p));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("kiln").join("history"))
}

/// `println!` through the REPL's [`Out`]: a failed write ends the REPL instead of panicking.
macro_rules! say {
    ($out:expr) => {
        $out.write(format_args!("\n"))
    };
    ($out:expr, $($arg:tt)*) => {
        $out.write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

// After `say!`, which it uses.
mod mcp;
mod pipelines;

/// The REPL's stdout. The first write that fails (the reader of a pipe went away) is kept,
/// and the REPL ends after the current command.
#[derive(Clone, Default)]
struct Out {
    failed: Arc<Mutex<Option<std::io::Error>>>,
}

impl Out {
    fn write(&self, args: std::fmt::Arguments) {
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush())
            && let Ok(mut failed) = self.failed.lock()
        {
            failed.get_or_insert(e);
        }
    }

    fn failed(&self) -> bool {
        self.failed.lock().map_or(true, |f| f.is_some())
    }

    /// A closed pipe is a normal end; any other write failure is the REPL's error.
    fn result(&self) -> Result<(), std::io::Error> {
        match self.failed.lock().ok().and_then(|mut f| f.take()) {
            Some(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
            _ => Ok(()),
        }
    }
}

struct Repl {
    out: Out,
    host: Arc<Host>,
    db: Option<Arc<kiln_db::Db>>,
    session: Option<String>,
    grants: Grants,
    agent: Option<String>,
    conversation: Vec<Message>,
    state: Arc<Mutex<Value>>,
    scope: Scope<'static>,
    functions: AST,
    runtime: tokio::runtime::Runtime,
    color: bool,
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Runs the REPL until `:quit` or Ctrl-D.
pub fn run_repl(
    host: Arc<Host>,
    grants: Grants,
    db: Option<Arc<kiln_db::Db>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let color = std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal();
    let mut editor: Editor<ReplHelper, DefaultHistory> = Editor::new()?;
    let chatting = Arc::new(AtomicBool::new(false));
    editor.set_helper(Some(ReplHelper {
        host: host.clone(),
        chatting: chatting.clone(),
    }));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    // Reload notices are printed above the line being typed.
    let printer: Arc<Mutex<Option<Box<dyn ExternalPrinter + Send>>>> = Arc::new(Mutex::new(
        editor
            .create_external_printer()
            .ok()
            .map(|p| Box::new(p) as Box<dyn ExternalPrinter + Send>),
    ));
    let notices = printer.clone();
    let _watcher = kiln_host::reload::watch(host.clone(), move |report| {
        let line = format!("{report}\n");
        match notices.lock().ok().as_mut().and_then(|p| p.as_mut()) {
            Some(p) => {
                let _ = p.print(line);
            }
            None => {
                let _ = write!(std::io::stderr(), "{line}");
            }
        }
    })?;
    let mut repl = Repl {
        out: Out::default(),
        host,
        db,
        session: None,
        grants,
        agent: None,
        conversation: Vec::new(),
        state: Arc::new(Mutex::new(Value::Object(Default::default()))),
        scope: Scope::new(),
        functions: AST::empty(),
        runtime: tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
        color,
    };
    let reg = repl.host.registry();
    say!(
        repl.out,
        "kiln {} — {} tools, {} agents. :help for commands, Ctrl-D to leave.",
        env!("CARGO_PKG_VERSION"),
        reg.all().count(),
        reg.agents().count()
    );
    for e in &reg.errors {
        say!(repl.out, "{} {e}", paint(color, "31", "error:"));
    }
    while !repl.out.failed() {
        let prompt = match &repl.agent {
            Some(a) => format!("kiln[{a}]> "),
            None => "kiln> ".to_string(),
        };
        match editor.readline(&paint(color, "1;36", &prompt)) {
            Ok(line) => {
                if line.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(line.as_str());
                if !repl.handle(line.trim()) {
                    break;
                }
                chatting.store(repl.agent.is_some(), Ordering::Relaxed);
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(h);
    }
    Ok(repl.out.result()?)
}

impl Repl {
    /// Handles one input; false to quit.
    fn handle(&mut self, line: &str) -> bool {
        let (cmd, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(c, r)| (c, r.trim()));
        match cmd {
            ":quit" | ":q" | ":exit" => return false,
            ":help" | ":h" => self.help(),
            ":tools" => self.tools(rest),
            ":schema" => self.schema(rest),
            ":call" => self.call(rest),
            ":agents" => self.agents(),
            ":pipelines" => self.pipelines(),
            ":mcp" => self.mcp(),
            ":run" => self.run_pipeline(rest),
            ":agent" => self.set_agent(rest),
            ":new" => {
                self.session = None;
                self.conversation.clear();
                self.state = Arc::new(Mutex::new(Value::Object(Default::default())));
                say!(self.out, "fresh conversation");
            }
            ":caps" => self.caps(rest),
            ":session" => self.set_session(rest),
            ":reload" => {
                let started = Instant::now();
                match self.host.load_all() {
                    Ok(()) => {
                        for line in self.host.sync_mcp_servers() {
                            say!(self.out, "{line}");
                        }
                        say!(
                            self.out,
                            "reloaded everything: {} tools ({:.1} ms)",
                            self.host.registry().all().count(),
                            started.elapsed().as_secs_f64() * 1e3
                        )
                    }
                    Err(e) => self.error(&e.to_string()),
                }
            }
            ":errors" => {
                let reg = self.host.registry();
                if reg.errors.is_empty() {
                    say!(self.out, "no load errors");
                }
                for e in &reg.errors {
                    say!(self.out, "{e}");
                }
            }
            c if c.starts_with(':') => {
                self.error(&format!("unknown command {c}; :help lists them"))
            }
            _ if self.agent.is_some() => self.chat(line),
            _ => self.eval(line),
        }
        true
    }

    fn error(&self, msg: &str) {
        say!(self.out, "{} {msg}", paint(self.color, "1;31", "error:"));
    }

    fn help(&self) {
        for (c, d) in COMMANDS {
            say!(self.out, "  {c:<9} {d}");
        }
        say!(
            self.out,
            "  anything else is Rhai (variables persist; call_tool(name, #{{...}}) calls a tool),"
        );
        say!(self.out, "  or a message to the agent chosen with :agent");
    }

    fn tools(&self, filter: &str) {
        for t in self
            .host
            .registry()
            .all()
            .filter(|t| t.name.contains(filter) || t.description.contains(filter))
        {
            let req = if t.requires.is_empty() {
                String::new()
            } else {
                format!(
                    " [{}]",
                    t.requires
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            say!(
                self.out,
                "  {}{req}  {}",
                paint(self.color, "1", &t.name),
                t.description
            );
        }
    }

    fn schema(&self, rest: &str) {
        let mut parts = rest.split_whitespace();
        let (Some(name), fmt) = (parts.next(), parts.next().unwrap_or("intermediate")) else {
            return self.error(":schema TOOL [format]");
        };
        let Some(format) = Format::parse(fmt) else {
            return self.error(&format!(
                "unknown format {fmt} (expected {})",
                Format::NAMES.join(", ")
            ));
        };
        match self.host.tool(name) {
            Ok(t) => {
                let (defs, warnings) = Registry::schemas(&[t], format);
                warnings.iter().for_each(|w| say!(self.out, "warning: {w}"));
                say!(
                    self.out,
                    "{}",
                    serde_json::to_string_pretty(&defs[0]).unwrap_or_default()
                );
            }
            Err(e) => self.error(&e.to_string()),
        }
    }

    /// Runs `work` until it ends or Ctrl-C, which sets `cancel` and waits for the work to stop.
    fn cancellable<T>(
        &self,
        cancel: kiln_core::cancel::Cancel,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        self.on_ctrl_c(move || cancel.cancel(), work)
    }

    /// Runs `work` to its end; Ctrl-C meanwhile cancels `token` (the work then ends as
    /// cancelled, and is logged so).
    fn until_ctrl_c<T>(
        &self,
        token: &tokio_util::sync::CancellationToken,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        self.on_ctrl_c(|| token.cancel(), work)
    }

    /// Runs `work` to its end, calling `stop` on Ctrl-C (and then still waiting for the work).
    fn on_ctrl_c<T>(&self, stop: impl FnOnce(), work: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(async {
            tokio::pin!(work);
            tokio::select! {
                r = &mut work => r,
                _ = tokio::signal::ctrl_c() => {
                    stop();
                    work.await
                }
            }
        })
    }

    fn call(&self, rest: &str) {
        let (name, json) = rest
            .split_once(char::is_whitespace)
            .map_or((rest, "{}"), |(n, j)| (n, j.trim()));
        let args: Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(e) => return self.error(&format!("arguments are not valid JSON: {e}")),
        };
        // Through `Host::call`, as every door: validation, the guard and the run log.
        let cancel = tokio_util::sync::CancellationToken::new();
        let opts = kiln_host::CallOptions {
            grants: Some(self.grants.clone()),
            cancel: Some(cancel.clone()),
            state: Some(self.state.clone()),
            ..kiln_host::CallOptions::default()
        };
        let outcome = match self.until_ctrl_c(&cancel, self.host.call(name, args, opts)) {
            Ok(outcome) => outcome,
            Err(e) => return self.error(&e.to_string()),
        };
        say!(
            self.out,
            "{}",
            serde_json::to_string_pretty(&outcome.to_json(true)).unwrap_or_default()
        );
        say!(
            self.out,
            "{}",
            paint(
                self.color,
                "2",
                &format!("({:.2} ms)", outcome.duration.as_secs_f64() * 1e3)
            )
        );
    }

    fn agents(&self) {
        for a in self.host.registry().agents() {
            say!(
                self.out,
                "  {} ({})  tools: {}  {}",
                paint(self.color, "1", &a.name),
                a.provider,
                a.tools.join(", "),
                a.description
            );
        }
    }

    fn set_agent(&mut self, name: &str) {
        if name.is_empty() || name == "off" {
            self.agent = None;
            return say!(self.out, "back to Rhai");
        }
        match self.host.agent(name) {
            Ok(a) => {
                say!(
                    self.out,
                    "chatting with {} ({}); :agent off to leave, :new for a fresh conversation",
                    a.name,
                    a.provider
                );
                self.agent = Some(a.name.clone());
                self.conversation.clear();
            }
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn caps(&mut self, rest: &str) {
        for change in rest.split_whitespace() {
            let (add, text) = match change.split_at(1) {
                ("+", t) => (true, t),
                ("-", t) => (false, t),
                _ => (true, change),
            };
            match Capability::parse(text) {
                Ok(c) if add => self.grants.add(c, GrantMode::Allow),
                Ok(c) => self.grants.remove(&c.to_string()),
                Err(e) => return self.error(&e.to_string()),
            }
        }
        say!(self.out, "capabilities: {}", self.grants.list());
    }

    fn set_session(&mut self, name: &str) {
        let Some(db) = &self.db else {
            return self.error("sessions need the database");
        };
        if name.is_empty() {
            return say!(
                self.out,
                "session: {}",
                self.session.as_deref().unwrap_or("(none)")
            );
        }
        match db.session(name) {
            Ok(Some(s)) => {
                if self.host.agent(&s.agent).is_err() {
                    return self.error(&format!(
                        "session \"{name}\" belongs to agent \"{}\", which is not loaded",
                        s.agent
                    ));
                }
                say!(
                    self.out,
                    "continuing session {name} with {} ({} messages)",
                    s.agent,
                    s.messages.len()
                );
                self.agent = Some(s.agent);
                self.conversation = s.messages;
                self.state = Arc::new(Mutex::new(s.state));
                self.session = Some(name.to_string());
            }
            Ok(None) if self.agent.is_some() => {
                say!(self.out, "new session {name}");
                self.session = Some(name.to_string());
            }
            Ok(None) => self.error("choose an agent with :agent NAME first, then :session NAME"),
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn chat(&mut self, line: &str) {
        let Some(agent) = self.agent.clone() else {
            return;
        };
        let color = self.color;
        let out = self.out.clone();
        let observer: Observer = Arc::new(move |ev: &Event| match ev {
            Event::Text(t) => out.write(format_args!("{t}")),
            Event::ToolFinished(r) => {
                let mark = if r.is_error {
                    paint(color, "31", "✗")
                } else {
                    paint(color, "32", "→")
                };
                say!(
                    out,
                    "\n{mark} {}({}) {:.1} ms",
                    r.name,
                    r.args,
                    r.duration_ms
                );
            }
            _ => {}
        });
        let token = tokio_util::sync::CancellationToken::new();
        let opts = RunOptions {
            history: self.conversation.clone(),
            state: Some(self.state.clone()),
            observer: Some(observer),
            stream: true,
            cancel: token.clone(),
            recorder: self.db.clone().map(|db| {
                Arc::new(kiln_agent::record::runlog::RunLogger::new(
                    db,
                    self.session.clone(),
                )) as Arc<dyn kiln_agent::Recorder>
            }),
            ..RunOptions::default()
        };
        let host = self.host.clone();
        // Ctrl-C is watched on a worker thread: a lone tool call runs in place on this one,
        // and the turn itself must end (and be logged) as cancelled, not be dropped.
        let on_ctrl_c = self.runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                token.cancel();
            }
        });
        let result = self
            .runtime
            .block_on(run(host.as_ref(), &agent, line, opts));
        on_ctrl_c.abort();
        say!(self.out);
        match result {
            Ok(report) => self.conversation = report.messages,
            Err(e) => self.error(&e.to_string()),
        }
    }

    fn eval(&mut self, code: &str) {
        let engine = self.host.engine().clone();
        let ast = match engine.compile_with_scope(&self.scope, code) {
            Ok(a) => a,
            Err(e) => return self.error(&e.to_string()),
        };
        let combined = self.functions.merge(&ast);
        let cancel = kiln_core::cancel::Cancel::new();
        let mut ctx = self.host.context(self.grants.clone());
        ctx.run.cancel = Some(cancel.clone());
        let mut scope = std::mem::take(&mut self.scope);
        let stop = cancel.clone();
        let task = self.runtime.spawn_blocking(move || {
            let deadline = Some(Instant::now() + EVAL_DEADLINE);
            let result = host::with_grants(&ctx, || {
                sandbox::with_watch(deadline, Some(cancel.flag().clone()), || {
                    engine.eval_ast_with_scope::<Dynamic>(&mut scope, &combined)
                })
            });
            (scope, result)
        });
        let outcome = self.cancellable(stop, async {
            tokio::pin!(task);
            task.await
        });
        let Ok((scope, result)) = outcome else {
            return self.error("the evaluation task failed");
        };
        self.scope = scope;
        self.functions = self.functions.merge(&ast.clone_functions_only());
        match result {
            Ok(v) if v.is_unit() => {}
            Ok(v) => say!(self.out, "{}", show(&v)),
            Err(e) => self.error(
                &kiln_script::failure::classify(&e, "repl")
                    .detail
                    .unwrap_or_else(|| e.to_string()),
            ),
        }
    }
}

/// A value as JSON where it can be, else Rhai's own rendering.
fn show(v: &Dynamic) -> String {
    if v.is_string() {
        return format!("{:?}", v.to_string());
    }
    match kiln_script::convert::to_json(v) {
        Ok(j) if j.is_object() || j.is_array() => {
            serde_json::to_string_pretty(&j).unwrap_or_else(|_| v.to_string())
        }
        _ => v.to_string(),
    }
}
