//! Why a project file could not be used: each error names the file, line and column, and the
//! key (with the nearest valid one when a key is misspelt).

use std::path::PathBuf;

/// A project file that cannot be read or does not describe a project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key no table of the file has.
    #[error("{}:{line}:{col}: unknown key `{key}` in {table}{hint}", path.display())]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The key as written.
        key: String,
        /// The table it is in (`the top level`, `[serve]`...).
        table: String,
        /// `; did you mean "KEY"?`, or a list of the valid keys.
        hint: String,
    },
    /// A value of the wrong kind, or a key's value that does not read.
    #[error("{}:{line}:{col}: {key}: {message}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The key's dotted path (`serve.max_runs`).
        key: String,
        /// Why the value is refused.
        message: String,
    },
    /// Text that is not TOML.
    #[error("{}:{line}:{col}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What the TOML reader said.
        message: String,
    },
}

impl ProjectError {
    /// The file and the 1-based line and column the error is at (line 1, column 1 when the
    /// file could not be read).
    pub fn place(&self) -> (&std::path::Path, usize, usize) {
        match self {
            ProjectError::Read { path, .. } => (path, 1, 1),
            ProjectError::UnknownKey {
                path, line, col, ..
            }
            | ProjectError::Value {
                path, line, col, ..
            }
            | ProjectError::Syntax {
                path, line, col, ..
            } => (path, *line, *col),
        }
    }
}

/// Turns the TOML reader's error into one that names the place and the key.
pub(crate) fn locate(path: PathBuf, text: &str, e: &toml::de::Error) -> ProjectError {
    let at = e.span().map_or(0, |s| s.start).min(text.len());
    let (line, col) = line_col(text, at);
    let message = e.message().to_string();
    let table = table_at(text, at);
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let quoted = backticked(rest);
        let key = quoted.first().cloned().unwrap_or_default();
        let valid: Vec<&str> = quoted.iter().skip(1).map(String::as_str).collect();
        let hint = match kiln_core::error::suggest::nearest(&key, valid.iter().copied()) {
            Some(near) => format!("; did you mean `{near}`?"),
            None if valid.is_empty() => String::new(),
            None => format!(" (valid keys: {})", valid.join(", ")),
        };
        let table = match table.as_str() {
            "" => "the top level".to_string(),
            t => format!("[{t}]"),
        };
        return ProjectError::UnknownKey {
            path,
            line,
            col,
            key,
            table,
            hint,
        };
    }
    match key_on_line(text, at) {
        Some(key) if e.span().is_some() => ProjectError::Value {
            path,
            line,
            col,
            key: if table.is_empty() {
                key
            } else {
                format!("{table}.{key}")
            },
            message,
        },
        _ => ProjectError::Syntax {
            path,
            line,
            col,
            message,
        },
    }
}

/// 1-based line and column (in characters) of byte `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..floor_char(text, at)];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The table holding the key at byte `at` (`""` at the top level): the `[table]` header above
/// it, and the dotted parts written before it (`serve.max_runs = 3`); on a header line itself
/// (`[providers.opneai]`), the header's parts before the one at `at`.
fn table_at(text: &str, at: usize) -> String {
    let at = floor_char(text, at);
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or_default();
    let before = &text[start..at];
    let header = |l: &str| {
        let inner = l.trim().trim_start_matches('[');
        inner.split(']').next().unwrap_or_default().to_string()
    };
    let (outer, written) = if line.trim_start().starts_with('[') {
        (String::new(), header(before))
    } else {
        let outer = text[..start]
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('['))
            .map(header)
            .unwrap_or_default();
        (
            outer,
            before.split('=').next().unwrap_or_default().to_string(),
        )
    };
    // The parts written before the key at `at`: every dotted part but the last, unfinished one.
    let mut parts: Vec<String> = written
        .split('.')
        .map(|p| p.trim().trim_matches('"').to_string())
        .collect();
    parts.pop();
    std::iter::once(outer.trim().to_string())
        .chain(parts)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(".")
}

/// The key written on the line holding byte `at`, when it is a `key = value` line (the last
/// part of a dotted key; [`table_at`] has the parts before it).
fn key_on_line(text: &str, at: usize) -> Option<String> {
    let at = floor_char(text, at);
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or_default();
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let last = key
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .trim()
        .trim_matches('"');
    (!last.is_empty() && !key.starts_with('[')).then(|| last.to_string())
}

/// The words between backticks, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}
