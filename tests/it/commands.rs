//! The command line: kiln's commands, the REPL in a pseudo-terminal, the language server, kiln.toml.

pub(crate) mod cli;
pub(crate) mod lsp;
pub(crate) mod project;
pub(crate) mod repl;
