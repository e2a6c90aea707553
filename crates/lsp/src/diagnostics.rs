//! kiln's load errors and advice as LSP diagnostics, at the line and column `kiln check`
//! prints.

use crate::position;
use kiln_core::error::LoadError;
use lsp_types::{Diagnostic, DiagnosticSeverity, DiagnosticTag, NumberOrString};

/// The diagnostics of one file from its errors and advice, ranged over the token each
/// points at; a deprecated spelling is tagged as such.
pub fn of(text: &str, errors: &[LoadError], advice: &[LoadError]) -> Vec<Diagnostic> {
    let one = |e: &LoadError, severity| {
        let start = position::from_line_col(text, e.loc.line, e.loc.column);
        let end = token_end(text, start);
        let deprecated =
            severity == DiagnosticSeverity::WARNING && kiln_script::renames::is_deprecation(e);
        Diagnostic {
            range: position::range(text, start..end),
            severity: Some(severity),
            code: Some(NumberOrString::String(
                if deprecated {
                    "deprecated"
                } else {
                    code(severity)
                }
                .into(),
            )),
            source: Some("kiln".into()),
            message: e.message.clone(),
            tags: deprecated.then(|| vec![DiagnosticTag::DEPRECATED]),
            ..Diagnostic::default()
        }
    };
    (errors.iter().map(|e| one(e, DiagnosticSeverity::ERROR)))
        .chain(advice.iter().map(|w| one(w, DiagnosticSeverity::WARNING)))
        .collect()
}

/// The diagnostic of a project file (`kiln.toml`) that does not read, at its line and column.
pub fn of_project(text: &str, line: usize, col: usize, message: String) -> Diagnostic {
    let start = position::from_line_col(text, line, col);
    let end = token_end(text, start);
    Diagnostic {
        range: position::range(text, start..end),
        severity: Some(DiagnosticSeverity::ERROR),
        code: Some(NumberOrString::String("project-file".into())),
        source: Some("kiln".into()),
        message,
        ..Diagnostic::default()
    }
}

fn code(severity: DiagnosticSeverity) -> &'static str {
    match severity {
        DiagnosticSeverity::ERROR => "load-error",
        _ => "check-warning",
    }
}

/// The end of the identifier or string starting at `start` (at least one character).
fn token_end(text: &str, start: usize) -> usize {
    let rest = &text[start..];
    let len = match rest.chars().next() {
        None => 0,
        Some('"') => rest[1..].find('"').map_or(1, |n| n + 2),
        Some(c) if c.is_alphanumeric() || c == '_' => rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len()),
        Some(c) => c.len_utf8(),
    };
    start + len
}

/// A test file's parse error (test files are run by `kiln test`, not loaded as scripts).
pub fn parse_only(engine: &rhai::Engine, text: &str) -> Vec<Diagnostic> {
    match engine.compile(text) {
        Ok(_) => Vec::new(),
        Err(e) => {
            let pos = e.position();
            let start =
                position::from_line_col(text, pos.line().unwrap_or(0), pos.position().unwrap_or(0));
            vec![Diagnostic {
                range: position::range(text, start..token_end(text, start)),
                severity: Some(DiagnosticSeverity::ERROR),
                source: Some("kiln".into()),
                message: e.err_type().to_string(),
                ..Diagnostic::default()
            }]
        }
    }
}
