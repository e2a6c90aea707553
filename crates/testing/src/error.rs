//! [`TestError`]: what goes wrong finding, loading, running or exporting tests.

/// What goes wrong finding, loading or exporting tests.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    /// A path given on the command line does not exist.
    #[error("{0}: no such file or folder")]
    NoSuchPath(String),
    /// A folder could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The folder or file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime the tests' agent runs and scripted models use could not start.
    #[error("cannot start the test runtime: {0}")]
    Runtime(std::io::Error),
    /// The host could not be built.
    #[error(transparent)]
    Host(#[from] kiln_core::error::HostError),
    /// The log could not be read.
    #[error(transparent)]
    Db(#[from] kiln_db::DbError),
    /// No run with this id was logged.
    #[error("no run \"{0}\" in the log (see `kiln logs`)")]
    UnknownRun(String),
    /// A logged run without a user prompt (a direct tool call's) cannot be an eval case.
    #[error("run \"{0}\" has no user prompt, so it cannot be an eval case (see `kiln logs {0}`)")]
    NoPrompt(String),
    /// The watcher could not start.
    #[error("cannot watch {path}: {message}")]
    Watch {
        /// The folder.
        path: String,
        /// Why.
        message: String,
    },
}
