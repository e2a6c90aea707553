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
mod skills;

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
    /// current folder), keeping the ones that exist; returns why the project file found there
    /// does not read, if it does not (the server shows it on the file).
    fn settle(&mut self, init: &lsp_types::InitializeParams) -> Option<kiln_project::ProjectError> {
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
        let mut problem = None;
        if self.scripts.is_empty() {
            match project_of(&root) {
                Ok(Some(project)) => {
                    self.scripts = project.scripts();
                    self.stdlib &= project.settings.stdlib.unwrap_or(true);
                }
                Ok(None) => self.scripts = default_scripts(),
                Err(e) => {
                    self.scripts = default_scripts();
                    problem = Some(e);
                }
            }
        }
        self.scripts = (self.scripts.iter())
            .filter_map(|d| root.join(d).canonicalize().ok())
            .collect();
        problem
    }
}

fn default_scripts() -> Vec<PathBuf> {
    vec![PathBuf::from(kiln_project::defaults::SCRIPTS_DIR)]
}

/// The project file (`kiln.toml`) at `root` or above, read as `kiln check` reads it.
fn project_of(
    root: &std::path::Path,
) -> Result<Option<kiln_project::Project>, kiln_project::ProjectError> {
    kiln_project::Project::discover(root)
        .map(|path| kiln_project::Project::load(&path))
        .transpose()
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
    use super::{Options, project_of};

    #[test]
    fn the_scripts_folders_are_the_project_files_from_the_root_or_above() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        assert!(matches!(project_of(&deep), Ok(None)));
        std::fs::write(dir.path().join("kiln.toml"), "scripts = [\"tools\"]\n").expect("write");
        let project = project_of(&deep).expect("reads").expect("found");
        assert_eq!(project.scripts(), [dir.path().join("tools")]);
    }

    #[test]
    fn the_project_files_stdlib_is_kept_and_a_broken_file_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("scripts")).expect("mkdir");
        let uri = lsp_types::Url::from_file_path(dir.path()).expect("a file URL");
        let init = lsp_types::InitializeParams {
            workspace_folders: Some(vec![lsp_types::WorkspaceFolder {
                uri,
                name: "project".into(),
            }]),
            ..Default::default()
        };
        let settle = |text: &str| {
            std::fs::write(dir.path().join("kiln.toml"), text).expect("write");
            let mut options = Options {
                scripts: Vec::new(),
                stdlib: true,
            };
            let problem = options.settle(&init);
            (options, problem)
        };
        let (options, problem) = settle("stdlib = false\n");
        assert!(problem.is_none());
        assert!(!options.stdlib);
        let (options, problem) = settle("stdlbi = false\n");
        let problem = problem.expect("a misspelt key is reported");
        assert_eq!(problem.place().1, 1);
        assert!(
            problem.to_string().contains("did you mean `stdlib`"),
            "{problem}"
        );
        assert!(options.stdlib);
        let scripts = dir
            .path()
            .join("scripts")
            .canonicalize()
            .expect("canonical");
        assert_eq!(options.scripts, [scripts]);
    }
}
