//! The scripts folders the open files belong to: each is a kiln host loading its folder the
//! way `kiln check` does, reading open files from the editor's buffers instead of the disk.

use crate::LspError;
use kiln_core::error::LoadError;
use kiln_host::Host;
use kiln_registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One scripts folder (or one stray file) and what its last load found.
pub struct Project {
    /// The folders (canonical) loaded together, or the single file's path for a stray file.
    pub roots: Vec<PathBuf>,
    /// Whether the project is a single file outside any scripts folder.
    single: bool,
    host: Arc<Host>,
    /// The registry of the last load.
    pub registry: Arc<Registry>,
    /// The registry of the last load without errors: names to offer while a file is broken
    /// half-way through a line.
    last_good: Arc<Registry>,
    /// Files whose diagnostics were last published non-empty.
    pub published: BTreeSet<PathBuf>,
    /// Open files already told they have nothing (told once, not at every change).
    pub told_clean: BTreeSet<PathBuf>,
    /// Whether a buffer changed since the last load.
    pub dirty: bool,
}

/// What a load found for each file: errors and advice.
pub type Findings = BTreeMap<PathBuf, (Vec<LoadError>, Vec<LoadError>)>;

impl Project {
    /// A project loading every script under `roots` together (as `kiln check` does with
    /// several `--scripts`), or only the file `roots[0]` when `single`.
    pub fn open(roots: Vec<PathBuf>, single: bool, stdlib: bool) -> Result<Project, LspError> {
        let mut b = Host::builder().stdlib(stdlib).mount_declared(false);
        for dir in roots.iter().filter(|_| !single) {
            b = b.scripts(dir);
        }
        if let Some(dir) = roots.first().and_then(|r| r.parent()).filter(|_| single) {
            b = b.workspace(dir);
        }
        let host = b.build().map_err(|e| LspError::Host(e.to_string()))?;
        let registry = host.registry();
        Ok(Project {
            roots,
            single,
            host,
            last_good: registry.clone(),
            registry,
            published: BTreeSet::new(),
            told_clean: BTreeSet::new(),
            dirty: true,
        })
    }

    /// The registries to read names from: the last load's, then the last good one's.
    pub fn registries(&self) -> [&Registry; 2] {
        [&self.registry, &self.last_good]
    }

    /// The host's engine (for parsing test files and the catalog).
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Whether `path` is loaded by this project.
    pub fn holds(&self, path: &Path) -> bool {
        match self.single {
            true => self.roots.iter().any(|r| r == path),
            false => self.roots.iter().any(|r| path.starts_with(r)),
        }
    }

    /// Loads the project again, open buffers first, and returns each file's findings.
    pub fn load(&mut self, buffers: &BTreeMap<PathBuf, String>) -> Findings {
        let read = |p: &Path| match buffers.get(p) {
            Some(text) => Ok(text.clone()),
            None => std::fs::read_to_string(p),
        };
        if self.single {
            for file in &self.roots {
                let source = read(file).unwrap_or_default();
                let shown = file.to_string_lossy().to_string();
                self.host
                    .set_source(self.host.check_source(&shown, &source));
            }
        } else {
            if let Err(e) = self.host.load_all_with(read) {
                tracing::warn!("cannot load scripts: {e}");
            }
            // A new file not saved yet is loaded from its buffer alone.
            for (path, text) in buffers {
                if self.holds(path) && !path.exists() && !kiln_script::is_test_file(path) {
                    let shown = path.to_string_lossy().to_string();
                    self.host.set_source(self.host.check_source(&shown, text));
                }
            }
        }
        self.registry = self.host.registry();
        if self.registry.errors.is_empty() || self.last_good.all().next().is_none() {
            self.last_good = self.registry.clone();
        }
        self.dirty = false;
        let mut findings = Findings::new();
        for e in &self.registry.errors {
            findings
                .entry(PathBuf::from(&e.loc.path))
                .or_default()
                .0
                .push(e.clone());
        }
        for w in self.registry.advice() {
            findings
                .entry(PathBuf::from(&w.loc.path))
                .or_default()
                .1
                .push(w);
        }
        // Deprecated spellings, each at its name (renames.rs).
        for (path, text) in self.files(buffers) {
            let deprecated = kiln_script::renames::warnings(&path.to_string_lossy(), &text);
            if !deprecated.is_empty() {
                findings.entry(path).or_default().1.extend(deprecated);
            }
        }
        // Only files of this project: the stdlib's paths are not files here.
        findings.retain(|path, _| path.is_absolute() && self.holds(path));
        findings
    }

    /// Every script file of the project with its text (buffers first).
    pub fn files(&self, buffers: &BTreeMap<PathBuf, String>) -> Vec<(PathBuf, String)> {
        let paths: Vec<PathBuf> = match self.single {
            true => self.roots.clone(),
            false => (self.roots.iter())
                .flat_map(|r| kiln_host::script_files(r).unwrap_or_default())
                .collect(),
        };
        let unsaved = (buffers.keys())
            .filter(|p| self.holds(p) && !p.exists())
            .cloned();
        paths
            .into_iter()
            .chain(unsaved)
            .filter_map(|p| {
                let text = match buffers.get(&p) {
                    Some(t) => t.clone(),
                    None => std::fs::read_to_string(&p).ok()?,
                };
                Some((p, text))
            })
            .collect()
    }
}

/// Where a file's project is: the configured scripts folders when one holds it (they load
/// together), else its own folder, else (a folder that is a whole repository) the file alone.
pub fn roots_for(path: &Path, scripts: &[PathBuf]) -> (Vec<PathBuf>, bool) {
    if scripts.iter().any(|d| path.starts_with(d)) {
        return (scripts.to_vec(), false);
    }
    match path.parent() {
        Some(dir) if !is_repository(dir) => (vec![dir.to_path_buf()], false),
        _ => (vec![path.to_path_buf()], true),
    }
}

/// A folder too big to load as scripts: a repository or a crate's root.
fn is_repository(dir: &Path) -> bool {
    ["Cargo.toml", ".git", "package.json"]
        .iter()
        .any(|f| dir.join(f).exists())
        || dir.parent().is_none()
}
