//! Terminal output: colours that honour NO_COLOR and plain text when not a terminal.

use std::io::IsTerminal;

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
    eprintln!("{} {msg}", paint("1;31", "error:"));
}

/// Prints `warning: msg` on stderr.
pub fn warning(msg: &str) {
    eprintln!("{} {msg}", paint("1;33", "warning:"));
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
