//! `kiln.toml`: a project's settings in one file at its root, found from the current folder
//! upward as Cargo finds `Cargo.toml`.
//!
//! Every key is optional and mirrors a flag (see the file `kiln init` writes, [`template`]).
//! Precedence, highest first: a flag on the command line, then an environment variable the
//! flag reads (`KILN_DB`, `KILN_NET_PROXY`, `KILN_TOKENS`, `OPENAI_BASE_URL`...), which the
//! `kiln` binary reports on stderr when it overrides a key of the file, then the file, then the
//! defaults in [`defaults`]. Relative paths in the file are relative to the file's folder. A
//! misspelt key is an error at `kiln.toml:LINE:COL` naming the nearest valid key.

mod checked;
pub mod defaults;
mod error;
mod seconds;
mod settings;
mod template;

pub use error::ProjectError;
pub use seconds::Seconds;
pub use settings::{
    GrantSettings, LogFormat, McpSettings, NetworkSettings, ProviderSettings, Providers,
    ServeSettings, Settings,
};
pub use template::template;

use std::path::{Path, PathBuf};

/// A project file read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The file.
    pub path: PathBuf,
    /// What it sets, its relative paths made relative to its folder.
    pub settings: Settings,
}

impl Project {
    /// The nearest `kiln.toml` in `start` or a folder above it.
    pub fn discover(start: &Path) -> Option<PathBuf> {
        start
            .ancestors()
            .map(|dir| dir.join(defaults::FILE_NAME))
            .find(|file| file.is_file())
    }

    /// Reads and checks the project file at `path`.
    pub fn load(path: &Path) -> Result<Project, ProjectError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProjectError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut settings = Self::parse(&text, path)?;
        let root = path.parent().unwrap_or(Path::new("."));
        settings.anchor(root);
        Ok(Project {
            path: path.to_path_buf(),
            settings,
        })
    }

    /// Reads project settings from `text` (`path` names it in errors); paths stay as written.
    pub fn parse(text: &str, path: &Path) -> Result<Settings, ProjectError> {
        let settings: Settings =
            toml::from_str(text).map_err(|e| error::locate(path.to_path_buf(), text, &e))?;
        if let Some(url) = settings.db.as_ref().and_then(|d| d.to_str())
            && url_has_password(url)
        {
            // The password's place in the file: where the value is written.
            let at = text.find(url).unwrap_or(0);
            let line = text[..at].matches('\n').count() + 1;
            let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
            return Err(ProjectError::Value {
                path: path.to_path_buf(),
                line,
                col,
                key: "db".into(),
                message: "a password does not go in the file: write the URL without it and set KILN_DB_PASSWORD (or PGPASSWORD)".into(),
            });
        }
        Ok(settings)
    }

    /// The project's root: the file's folder.
    pub fn root(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The scripts folders: the file's, else the root's `scripts/`.
    pub fn scripts(&self) -> Vec<PathBuf> {
        match &self.settings.scripts {
            Some(dirs) => dirs.clone(),
            None => vec![self.root().join(defaults::SCRIPTS_DIR)],
        }
    }

    /// The workspace: the file's, else the root.
    pub fn workspace(&self) -> PathBuf {
        (self.settings.workspace.clone()).unwrap_or_else(|| self.root().to_path_buf())
    }
}

/// Whether `url` (`scheme://user:password@host/…`) carries a password.
fn url_has_password(url: &str) -> bool {
    url.split_once("://")
        .and_then(|(_, rest)| rest.split('/').next()?.rsplit_once('@'))
        .is_some_and(|(auth, _)| auth.contains(':'))
}

#[cfg(test)]
mod tests;
