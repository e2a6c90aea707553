//! Terminal output: colours that honour NO_COLOR and plain text when not a terminal; stdout
//! written through a writer so a closed pipe (`kiln logs | head`) ends a command quietly.

pub mod tool_bars;

use std::io::{IsTerminal, Write};

/// Stdout's reader is gone (`kiln logs | head`): the command stops and kiln exits 0, as a
/// filter in a pipeline should.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed")]
pub struct StdoutClosed;

/// Writes to stdout and flushes. A closed pipe is [`StdoutClosed`]; any other failure is an
/// error naming stdout.
pub fn out(args: std::fmt::Arguments) -> super::CliResult<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(stdout_error)
}

/// A failed write to stdout as the error a command returns.
pub fn stdout_error(e: std::io::Error) -> Box<dyn std::error::Error> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Box::new(StdoutClosed)
    } else {
        format!("cannot write to stdout: {e}").into()
    }
}

/// True for an error that only says stdout's reader went away.
pub fn is_closed_stdout(e: &(dyn std::error::Error + 'static)) -> bool {
    e.is::<StdoutClosed>()
        || e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `println!` that returns the failure instead of panicking: `outln!(...)?`.
macro_rules! outln {
    () => {
        $crate::cli::output::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// `eprintln!` that never panics: a closed stderr loses the line, nothing else.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // One write per line: stderr is unbuffered, and a line written piecemeal costs a
        // system call per piece and can interleave with another thread's.
        let line = format!("{}\n", format_args!($($arg)*));
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}
pub(crate) use errln;

/// Whether stderr gets colour.
pub fn color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

fn paint(code: &str, text: &str) -> String {
    if color_stderr() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Prints `error: msg` on stderr.
pub fn error(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{} {msg}", paint("1;31", "error:"));
}

/// Prints `warning: msg` on stderr.
pub fn warning(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{} {msg}", paint("1;33", "warning:"));
}

/// Prints a hint, dimmed, on stderr.
pub fn hint(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{}", paint("2", &format!("kiln: {msg}")));
}

/// Pretty JSON, never failing.
pub fn json(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Shortens text to `max` characters with an ellipsis.
pub fn truncate(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
