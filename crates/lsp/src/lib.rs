//! `kiln lsp`: a Language Server for kiln's Rhai scripts, over stdio.
//!
//! Diagnostics come from the loader `kiln check` uses (the editor's unsaved buffers read in
//! place of the files), so the two never disagree. Completion, hover, go to definition and
//! document symbols read the DSL from the text around the cursor ([`scan`]) and the names
//! from the host: its engine's functions ([`catalog`]) and its registry's tools and agents.

pub mod catalog;
mod complete;
mod diagnostics;
mod navigate;
mod position;
mod project;
pub mod scan;
mod server;

use std::path::PathBuf;

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The connection with the editor broke or spoke something other than LSP.
    #[error("language server protocol: {0}")]
    Protocol(String),
    /// A host for a scripts folder could not be built.
    #[error("cannot load scripts: {0}")]
    Host(String),
}

/// How the server finds and loads scripts.
#[derive(Debug, Clone)]
pub struct Options {
    /// The scripts folders loaded together (relative ones against the editor's workspace
    /// root), with any the editor names in `initializationOptions.scripts`; none means those of
    /// the project file (`kiln.toml`) at the root or above, else the root's `scripts/`.
    pub scripts: Vec<PathBuf>,
    /// Whether the stdlib's tools are loaded (as `kiln check` does unless `--no-stdlib`).
    pub stdlib: bool,
}

impl Options {
    /// Resolves the scripts folders against the workspace root the editor names (or the
    /// current folder), keeping the ones that exist.
    fn settle(&mut self, init: &lsp_types::InitializeParams) {
        #[allow(deprecated)] // Older editors send only `rootUri`.
        let root = (init.workspace_folders.as_ref())
            .and_then(|f| f.first())
            .map(|f| f.uri.clone())
            .or_else(|| init.root_uri.clone())
            .and_then(|u| u.to_file_path().ok())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        // An editor may name the folders too: `"initializationOptions": {"scripts": [...]}`.
        let named = (init.initialization_options.as_ref())
            .and_then(|o| o.get("scripts"))
            .and_then(|s| s.as_array())
            .map(|a| a.iter().filter_map(|d| d.as_str()).map(PathBuf::from));
        self.scripts.extend(named.into_iter().flatten());
        if self.scripts.is_empty() {
            self.scripts = project_scripts(&root);
        }
        self.scripts = (self.scripts.iter())
            .filter_map(|d| root.join(d).canonicalize().ok())
            .collect();
    }
}

/// The scripts folders of the project file (`kiln.toml`) at `root` or above, as `kiln check`
/// reads them; without one (or if it does not read), the default folder.
fn project_scripts(root: &std::path::Path) -> Vec<PathBuf> {
    let project = kiln_project::Project::discover(root)
        .and_then(|path| kiln_project::Project::load(&path).ok());
    match project {
        Some(project) => project.scripts(),
        None => vec![PathBuf::from(kiln_project::defaults::SCRIPTS_DIR)],
    }
}

/// Serves an editor on stdin and stdout until it shuts down.
pub fn run_stdio(options: Options) -> Result<(), LspError> {
    let (conn, io) = lsp_server::Connection::stdio();
    server::serve(&conn, options)?;
    drop(conn);
    io.join().map_err(|e| LspError::Protocol(e.to_string()))
}

#[cfg(test)]
mod project_tests {
    use super::project_scripts;
    use std::path::PathBuf;

    #[test]
    fn the_scripts_folders_are_the_project_files_from_the_root_or_above() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        assert_eq!(project_scripts(&deep), [PathBuf::from("scripts")]);
        std::fs::write(dir.path().join("kiln.toml"), "scripts = [\"tools\"]\n").expect("write");
        assert_eq!(project_scripts(&deep), [dir.path().join("tools")]);
    }
}
