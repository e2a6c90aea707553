//! Typed errors of the library. They are rendered once, at the edge (the CLI).

pub mod public;
pub mod suggest;

use std::fmt;

/// Where something was defined: a script path and a 1-based line and column.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SourceLoc {
    /// Path of the script as the user gave it (or `stdlib/NAME.rhai`).
    pub path: String,
    /// 1-based line; 0 when unknown.
    pub line: usize,
    /// 1-based column; 0 when unknown.
    pub column: usize,
}

impl SourceLoc {
    /// A location from a path and a 1-based line and column (0 when unknown).
    pub fn new(path: &str, line: usize, column: usize) -> Self {
        SourceLoc {
            path: path.to_string(),
            line,
            column,
        }
    }
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path, self.line, self.column)
    }
}

/// What kind of problem a [`LoadError`] is: one in the file itself, or one only the whole
/// registry shows (reload decides by it which errors keep a file's last good version).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// In the file itself: syntax, the DSL, a bad param type, a failed top level.
    #[default]
    Source,
    /// A tool (or pipeline) whose name another source already defines.
    DuplicateTool,
    /// A pipeline node calling a tool, agent or pipeline that is not there.
    PipelineLink,
    /// Another check across sources (agents' tool lists, duplicate agents or MCP servers).
    Registry,
}

/// A problem found while loading scripts: `path:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{loc}: {message}")]
pub struct LoadError {
    /// Where the problem is.
    pub loc: SourceLoc,
    /// What is wrong, for a person.
    pub message: String,
    /// What kind of problem it is.
    #[serde(skip)]
    pub kind: LoadErrorKind,
}

impl LoadError {
    /// Builds a load error at a location, found in the file itself.
    pub fn at(loc: SourceLoc, message: impl Into<String>) -> Self {
        Self::of(LoadErrorKind::Source, loc, message)
    }

    /// Builds a load error of a kind.
    pub fn of(kind: LoadErrorKind, loc: SourceLoc, message: impl Into<String>) -> Self {
        LoadError {
            loc,
            message: message.into(),
            kind,
        }
    }
}

/// Errors from the host API outside of a tool call's own outcome.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The database could not be opened.
    #[error("cannot open database {path}: {message}")]
    Database {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The run log could not keep a run that ran (its database failed): the run's outcome is
    /// not reported as if it had been kept.
    #[error("{0}")]
    RunLog(String),
    /// The scripts folders could not be watched.
    #[error("cannot watch the scripts folders: {0}")]
    Watch(String),
    /// A scripts folder could not be read.
    #[error("cannot read scripts folder {path}: {source}")]
    ScriptsFolder {
        /// The folder.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No tool of that name is loaded.
    #[error("unknown tool \"{name}\"; loaded tools: {known}")]
    UnknownTool {
        /// Requested name.
        name: String,
        /// Comma-separated list of loaded tools.
        known: String,
    },
    /// No agent of that name is loaded.
    #[error("unknown agent \"{name}\"; loaded agents: {known}")]
    UnknownAgent {
        /// Requested name.
        name: String,
        /// Comma-separated list of loaded agents.
        known: String,
    },
    /// No pipeline of that name is loaded.
    #[error("unknown pipeline \"{name}\"; loaded pipelines: {known}")]
    UnknownPipeline {
        /// Requested name.
        name: String,
        /// Comma-separated list of loaded pipelines.
        known: String,
    },
    /// An unknown schema export format.
    #[error(
        "unknown schema format \"{0}\" (expected intermediate, anthropic, openai, openai-strict, ollama)"
    )]
    UnknownFormat(String),
    /// A capability string that does not parse.
    #[error("invalid capability \"{0}\": expected NAME or NAME:SCOPE")]
    BadCapability(String),
    /// A `net:SCOPE` whose scope names no destination.
    #[error("invalid capability \"{cap}\": {why}")]
    BadNetScope {
        /// The capability as written.
        cap: String,
        /// What is wrong with the scope.
        why: String,
    },
}

/// The kind of a [`HostError`], stable for applications to match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A scripts folder could not be read.
    ScriptsFolder,
    /// No such tool.
    UnknownTool,
    /// No such agent.
    UnknownAgent,
    /// No such schema format.
    UnknownFormat,
    /// No such pipeline.
    UnknownPipeline,
    /// A capability that does not parse.
    BadCapability,
    /// The database could not be opened.
    Database,
    /// Watching failed.
    Watch,
}

impl HostError {
    /// The stable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HostError::ScriptsFolder { .. } => ErrorKind::ScriptsFolder,
            HostError::UnknownTool { .. } => ErrorKind::UnknownTool,
            HostError::UnknownAgent { .. } => ErrorKind::UnknownAgent,
            HostError::UnknownPipeline { .. } => ErrorKind::UnknownPipeline,
            HostError::UnknownFormat(_) => ErrorKind::UnknownFormat,
            HostError::BadCapability(_) | HostError::BadNetScope { .. } => ErrorKind::BadCapability,
            HostError::Database { .. } | HostError::RunLog(_) => ErrorKind::Database,
            HostError::Watch(_) => ErrorKind::Watch,
        }
    }
}
