//! The rustyline helper: completion of commands, tool and agent names and formats, and a
//! validator that keeps reading while Rhai input is incomplete.

use kiln_core::schema::Format;
use kiln_host::Host;
use rhai::{LexError, ParseErrorType};
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use std::sync::Arc;

/// REPL commands, for help and completion.
pub const COMMANDS: &[(&str, &str)] = &[
    (":help", "this list"),
    (":tools", "[filter]  list tools"),
    (
        ":schema",
        "TOOL [format]  a tool's definition (intermediate, anthropic, openai, openai-strict, ollama)",
    ),
    (
        ":call",
        "TOOL {json}  call a tool and print its result and duration",
    ),
    (":agents", "list agents"),
    (":pipelines", "list pipelines"),
    (":mcp", "list MCP servers and their state"),
    (
        ":run",
        "PIPELINE k=v ... | {json}  run a pipeline: each node, then its outputs",
    ),
    (
        ":agent",
        "NAME | off  chat with an agent: plain lines go to it",
    ),
    (":new", "start a fresh conversation"),
    (":caps", "[+cap | -cap]  show or change the REPL's grants"),
    (
        ":session",
        "NAME  continue (or start) a saved conversation with the current agent",
    ),
    (":reload", "reload every script"),
    (":errors", "current load errors"),
    (":quit", "leave (Ctrl-D works too)"),
];

/// Completion and validation for the REPL line editor.
pub struct ReplHelper {
    /// The host whose registry names are completed.
    pub host: Arc<Host>,
    /// Set while plain lines go to an agent: they are chat, not Rhai, so never "incomplete".
    pub chatting: Arc<std::sync::atomic::AtomicBool>,
}

fn candidates(word: &str, options: impl IntoIterator<Item = String>) -> Vec<Pair> {
    options
        .into_iter()
        .filter(|o| o.starts_with(word))
        .map(|o| Pair {
            display: o.clone(),
            replacement: format!("{o} "),
        })
        .collect()
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        if !before.starts_with(':') {
            return Ok((pos, Vec::new()));
        }
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &before[start..];
        let words: Vec<&str> = before.split_whitespace().collect();
        let index = if before.ends_with(char::is_whitespace) {
            words.len()
        } else {
            words.len().saturating_sub(1)
        };
        let reg = self.host.registry();
        let tools = || reg.tool_names();
        let found = match (words.first().copied().unwrap_or(""), index) {
            (_, 0) => candidates(word, COMMANDS.iter().map(|(c, _)| c.to_string())),
            (":call" | ":schema", 1) => candidates(word, tools()),
            (":schema", 2) => candidates(word, Format::NAMES.iter().map(|f| f.to_string())),
            (":run", 1) => candidates(word, reg.pipelines().map(|p| p.name.clone())),
            (":agent", 1) => candidates(
                word,
                reg.agents()
                    .map(|a| a.name.clone())
                    .chain(["off".to_string()]),
            ),
            _ => Vec::new(),
        };
        Ok((start, found))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let chatting = self.chatting.load(std::sync::atomic::Ordering::Relaxed);
        Ok(
            if !chatting && is_incomplete(self.host.engine(), ctx.input()) {
                ValidationResult::Incomplete
            } else {
                ValidationResult::Valid(None)
            },
        )
    }
}

impl Helper for ReplHelper {}

/// True when Rhai input needs more lines (open brace, unterminated string).
pub fn is_incomplete(engine: &rhai::Engine, input: &str) -> bool {
    if input.trim_start().starts_with(':') || input.trim().is_empty() {
        return false;
    }
    match engine.compile(input) {
        Ok(_) => false,
        Err(e) => {
            matches!(
                e.err_type(),
                ParseErrorType::UnexpectedEOF
                    | ParseErrorType::MissingToken(..)
                    | ParseErrorType::BadInput(LexError::UnterminatedString)
            ) && e.position().line().unwrap_or(0) >= input.lines().count()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::helper::is_incomplete;

    #[test]
    fn open_input_asks_for_more_lines_and_whole_input_does_not() {
        let engine = rhai::Engine::new();
        assert!(is_incomplete(&engine, "fn f(x) {"));
        assert!(is_incomplete(&engine, "let s = \"open"));
        assert!(!is_incomplete(&engine, "let x = 1 + 2;"));
        assert!(!is_incomplete(&engine, ":tools"), "commands are one line");
        assert!(
            !is_incomplete(&engine, "let = ;"),
            "an error in the middle is an error, not more input"
        );
    }
}
