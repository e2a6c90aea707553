//! kiln: a host for LLM tools and agents written as Rhai scripts.
//!
//! The [`Host`] loads scripts into an immutable [`registry::Registry`] snapshot, runs tool
//! calls through validation, the capability guard and the sandbox, and runs agents against
//! model providers. See ARCHITECTURE.md for the map.

pub mod agent;
pub mod capability;
pub mod context;
pub mod convert;
pub mod db;
pub mod egress;
pub mod error;
pub mod mock;
pub mod provider;
pub mod registry;
pub mod reload;
pub mod repl;
pub mod schema;
pub mod script;
pub mod services;
pub mod stdlib;
pub mod testing;
pub mod tool;

use arc_swap::ArcSwap;
use error::{HostError, LoadError};
use registry::Registry;
use rhai::Engine;
use script::loader::{self, LoadedFile};
use services::Services;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How a host is set up.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Scripts folders (`--scripts`, repeatable).
    pub scripts: Vec<PathBuf>,
    /// The workspace host functions are rooted at.
    pub workspace: PathBuf,
    /// Load the embedded stdlib.
    pub stdlib: bool,
    /// Sandbox limits.
    pub limits: script::sandbox::Limits,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            scripts: vec![PathBuf::from("scripts")],
            workspace: PathBuf::from("."),
            stdlib: true,
            limits: script::sandbox::Limits::default(),
        }
    }
}

/// The host: a shared sandboxed engine, the loaded files and the current registry snapshot.
pub struct Host {
    engine: Arc<Engine>,
    config: HostConfig,
    files: Mutex<BTreeMap<String, Arc<LoadedFile>>>,
    /// Errors of files whose last good version stays live.
    broken: Mutex<BTreeMap<String, Vec<LoadError>>>,
    registry: ArcSwap<Registry>,
    services: Arc<Services>,
    /// Modules compiled for `import`; emptied whenever a script changes.
    modules: script::imports::ModuleCache,
}

impl Host {
    /// Builds a host and loads the stdlib and every `*.rhai` file of the scripts folders.
    pub fn new(config: HostConfig) -> Result<Host, HostError> {
        Self::with_services(config, |_| {})
    }

    /// Like [`Host::new`], letting the caller adjust the services (approver, `--yes`).
    pub fn with_services(
        config: HostConfig,
        adjust: impl FnOnce(&mut Services),
    ) -> Result<Host, HostError> {
        let modules = script::imports::ModuleCache::default();
        let engine = Arc::new(script::engine_with_modules(
            &config.limits,
            config.scripts.clone(),
            modules.clone(),
            None,
        ));
        let mut services = Services::new(config.workspace.clone());
        adjust(&mut services);
        let host = Host {
            engine,
            files: Mutex::new(BTreeMap::new()),
            broken: Mutex::new(BTreeMap::new()),
            registry: ArcSwap::from_pointee(Registry::default()),
            services: Arc::new(services),
            modules,
            config,
        };
        host.load_all()?;
        Ok(host)
    }

    /// The shared engine (for the REPL's Rhai evaluation).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The host services.
    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// The configuration the host was built with.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// The current snapshot; a caller keeps it for as long as it needs one consistent view.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.load_full()
    }

    /// (Re)loads everything from scratch.
    pub fn load_all(&self) -> Result<(), HostError> {
        self.modules.clear();
        let mut files = BTreeMap::new();
        if self.config.stdlib {
            for (name, src) in stdlib::FILES {
                let path = format!("stdlib/{name}");
                files.insert(
                    path.clone(),
                    Arc::new(loader::load_source(&self.engine, &path, src)),
                );
            }
        }
        for dir in &self.config.scripts {
            for path in script_files(dir)? {
                let shown = path.to_string_lossy().to_string();
                let loaded = match std::fs::read_to_string(&path) {
                    Ok(src) => loader::load_source(&self.engine, &shown, &src),
                    Err(e) => LoadedFile {
                        path: shown.clone(),
                        errors: vec![LoadError::at(
                            error::SourceLoc {
                                path: shown.clone(),
                                line: 0,
                                column: 0,
                            },
                            format!("cannot read: {e}"),
                        )],
                        ..LoadedFile::default()
                    },
                };
                files.insert(shown, Arc::new(loaded));
            }
        }
        self.install(files);
        Ok(())
    }

    /// Builds and swaps in a registry for this set of files.
    fn install(&self, files: BTreeMap<String, Arc<LoadedFile>>) {
        if let Ok(mut b) = self.broken.lock() {
            b.clear();
        }
        let reg = self.build(&files);
        self.registry.store(Arc::new(reg));
        if let Ok(mut f) = self.files.lock() {
            *f = files;
        }
    }

    /// A registry for these files, with the errors of broken files that kept an old version.
    fn build(&self, files: &BTreeMap<String, Arc<LoadedFile>>) -> Registry {
        let ordered = ordered_files(files);
        let mut reg = Registry::build(ordered.iter().map(|f| f.as_ref()));
        if let Ok(b) = self.broken.lock() {
            reg.errors.extend(b.values().flatten().cloned());
        }
        reg
    }

    /// Reloads one script file (or forgets it when it no longer exists) and every file that
    /// imports it, directly or through other modules, and swaps the registry. Returns one
    /// report per file, the changed file first.
    ///
    /// A file that fails to load keeps its last good version live; so does a file whose new
    /// version defines a tool another file already defines.
    pub fn reload_path(&self, path: &Path) -> Vec<reload::ReloadReport> {
        self.reload_with_importers(path, false)
    }

    /// [`Host::reload_path`], but an empty read of a file that had tools is reported as
    /// `deferred` and changes nothing (it may be a writer caught between truncate and write).
    pub fn reload_path_settling(&self, path: &Path) -> Vec<reload::ReloadReport> {
        self.reload_with_importers(path, true)
    }

    fn reload_with_importers(&self, path: &Path, defer_empty: bool) -> Vec<reload::ReloadReport> {
        let first = self.reload_file(path, defer_empty);
        if first.deferred {
            return vec![first];
        }
        // Any script may be a module a handler imports at call time, literal path or not.
        self.modules.clear();
        let importers = match self.files.lock() {
            Ok(files) => reload::importers(&files, path),
            Err(_) => Vec::new(),
        };
        let mut reports = vec![first];
        for (importer, via) in importers {
            let report = self.reload_file(Path::new(&importer), false);
            reports.push(reload::ReloadReport { via, ..report });
        }
        reports
    }

    fn reload_file(&self, path: &Path, defer_empty: bool) -> reload::ReloadReport {
        let started = std::time::Instant::now();
        let shown = path.to_string_lossy().to_string();
        let Ok(mut files) = self.files.lock() else {
            return reload::ReloadReport::failed(shown, Vec::new(), started);
        };
        let old = files.get(&shown).cloned();
        let old_names: Vec<String> = old
            .iter()
            .flat_map(|f| f.tools.iter().map(|t| t.name.clone()))
            .collect();
        let source = match std::fs::read_to_string(path) {
            Ok(src) => src,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                files.remove(&shown);
                if let Ok(mut b) = self.broken.lock() {
                    b.remove(&shown);
                }
                self.registry.store(Arc::new(self.build(&files)));
                return reload::ReloadReport::removed(shown, old_names.len(), started);
            }
            Err(e) => {
                let err = LoadError::at(
                    error::SourceLoc {
                        path: shown.clone(),
                        line: 0,
                        column: 0,
                    },
                    format!("cannot read: {e}"),
                );
                return reload::ReloadReport::failed(shown, vec![err], started);
            }
        };
        // A writer that truncates then writes can be caught in between: an empty read of a file
        // that had tools is put off (the watcher looks again once the folder is quiet).
        if defer_empty && source.trim().is_empty() && !old_names.is_empty() {
            return reload::ReloadReport {
                deferred: true,
                ..reload::ReloadReport::loaded(shown, 0, 0, 0, started)
            };
        }
        let loaded = Arc::new(loader::load_source(&self.engine, &shown, &source));
        let mut candidate = files.clone();
        candidate.insert(shown.clone(), loaded.clone());
        let mut errors = loaded.errors.clone();
        if errors.is_empty() {
            let reg = Registry::build(ordered_files(&candidate).iter().map(|f| f.as_ref()));
            errors.extend(
                reg.errors
                    .into_iter()
                    .filter(|e| e.loc.path == shown && e.message.starts_with("duplicate tool")),
            );
        }
        if !errors.is_empty() && old.is_some() {
            if let Ok(mut b) = self.broken.lock() {
                b.insert(shown.clone(), errors.clone());
            }
            self.registry.store(Arc::new(self.build(&files)));
            return reload::ReloadReport::failed(shown, errors, started);
        }
        if let Ok(mut b) = self.broken.lock() {
            b.remove(&shown);
        }
        *files = candidate;
        self.registry.store(Arc::new(self.build(&files)));
        let new_names: Vec<&String> = loaded.tools.iter().map(|t| &t.name).collect();
        let added = new_names.iter().filter(|n| !old_names.contains(n)).count();
        let removed = old_names.iter().filter(|n| !new_names.contains(n)).count();
        let report =
            reload::ReloadReport::loaded(shown, added, new_names.len() - added, removed, started);
        if errors.is_empty() {
            report
        } else {
            reload::ReloadReport { errors, ..report }
        }
    }

    /// A call context holding these grants, with the current registry pinned.
    pub fn context(&self, grants: capability::Grants) -> context::CallContext {
        let mut ctx = context::CallContext::new(grants, self.services.clone());
        ctx.registry = Some(self.registry());
        ctx
    }

    /// Looks up a tool or says which ones exist.
    pub fn tool(&self, name: &str) -> Result<Arc<tool::Tool>, HostError> {
        let reg = self.registry();
        reg.find(name).ok_or_else(|| HostError::UnknownTool {
            name: name.into(),
            known: reg.tool_names().join(", "),
        })
    }

    /// Looks up an agent or says which ones exist.
    pub fn agent(&self, name: &str) -> Result<Arc<agent::AgentSpec>, HostError> {
        let reg = self.registry();
        reg.agent(name).ok_or_else(|| {
            let known: Vec<String> = reg.agents().map(|a| a.name.clone()).collect();
            HostError::UnknownAgent {
                name: name.into(),
                known: if known.is_empty() {
                    "(none)".into()
                } else {
                    known.join(", ")
                },
            }
        })
    }
}

/// stdlib files first, then user files in path order.
fn ordered_files(files: &BTreeMap<String, Arc<LoadedFile>>) -> Vec<Arc<LoadedFile>> {
    let (std, user): (Vec<_>, Vec<_>) = files
        .values()
        .cloned()
        .partition(|f| f.path.starts_with("stdlib/"));
    std.into_iter().chain(user).collect()
}

/// The `*.rhai` files of a folder (recursively), sorted; a missing default folder is empty.
pub fn script_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| HostError::ScriptsFolder {
            path: d.display().to_string(),
            source: e,
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rhai") && !testing::is_test_file(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
