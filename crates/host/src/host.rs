//! The host: the shared sandboxed engine, the loaded files and the current registry snapshot;
//! loading, reloading (keeping the last good version of a broken file) and lookups.

use crate::reload;
use arc_swap::ArcSwap;
use kiln_core::error::{self, HostError, LoadError, LoadErrorKind};
use kiln_core::services::Services;
use kiln_core::{capability, context, tool};
use kiln_db as db;
use kiln_registry::agent_spec::AgentSpec;
use kiln_registry::native::HostFn;
use kiln_registry::{LoadedFile, Origin, Registry};
use kiln_script as script;
use kiln_script::{loader, stdlib};
use rhai::Engine;
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
    /// Where providers are reached when neither a run nor its agent says (`kiln.toml`'s
    /// `[providers.NAME]`), below the providers' environment variables.
    pub providers: kiln_agent::connect::ProviderDefaults,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            scripts: vec![PathBuf::from(kiln_project::defaults::SCRIPTS_DIR)],
            workspace: PathBuf::from(kiln_project::defaults::WORKSPACE),
            stdlib: true,
            limits: script::sandbox::Limits::default(),
            providers: Default::default(),
        }
    }
}

/// The host: a shared sandboxed engine, the loaded files and the current registry snapshot.
pub struct Host {
    pub(crate) engine: Arc<Engine>,
    pub(crate) config: HostConfig,
    pub(crate) files: Mutex<BTreeMap<String, Arc<LoadedFile>>>,
    /// Errors of files whose last good version stays live.
    pub(crate) broken: Mutex<BTreeMap<String, Vec<LoadError>>>,
    pub(crate) registry: ArcSwap<Registry>,
    pub(crate) services: Arc<Services>,
    /// The application's native tools, loaded after the stdlib.
    pub(crate) natives: Arc<LoadedFile>,
    /// The capability of each function the application gave scripts (for the static scan).
    pub(crate) app_caps: BTreeMap<String, String>,
    /// What [`Host::call`] grants by default.
    pub(crate) grants: capability::Grants,
    /// The database runs are logged to, if any.
    pub(crate) db: Option<Arc<db::Db>>,
    /// The watcher [`HostBuilder::watch`] started.
    pub(crate) watcher: Mutex<Option<reload::Watcher>>,
    /// Modules compiled for `import`; emptied whenever a script changes.
    pub(crate) modules: script::imports::ModuleCache,
    /// The host itself when it lives in an `Arc` (built by [`HostBuilder`]), for handlers that
    /// run agents (pipelines).
    pub(crate) this: std::sync::OnceLock<std::sync::Weak<Host>>,
    /// The MCP servers scripts declare (started and stopped with their declarations) and
    /// those mounted with `--mcp`.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: crate::mcp::HostServers,
}

/// What the builder adds to a host beyond its configuration.
#[derive(Default)]
pub(crate) struct Extras {
    pub(crate) natives: LoadedFile,
    pub(crate) host_fns: Vec<HostFn>,
    pub(crate) grants: capability::Grants,
    pub(crate) db: Option<Arc<db::Db>>,
}

impl Host {
    /// Builds a host and loads the stdlib, the native tools and every `*.rhai` file of the
    /// scripts folders.
    pub(crate) fn assemble(
        config: HostConfig,
        services: Services,
        extras: Extras,
    ) -> Result<Host, HostError> {
        let modules = script::imports::ModuleCache::default();
        let mut engine = script::engine_with_modules(
            &config.limits,
            config.scripts.clone(),
            modules.clone(),
            None,
        );
        for f in &extras.host_fns {
            script::host::register_app(&mut engine, f);
        }
        let host = Host {
            engine: Arc::new(engine),
            files: Mutex::new(BTreeMap::new()),
            broken: Mutex::new(BTreeMap::new()),
            registry: ArcSwap::from_pointee(Registry::default()),
            services: Arc::new(services),
            natives: Arc::new(extras.natives),
            app_caps: extras
                .host_fns
                .iter()
                .map(|f| (f.name.clone(), f.capability.clone()))
                .collect(),
            grants: extras.grants,
            db: extras.db,
            watcher: Mutex::new(None),
            modules,
            this: std::sync::OnceLock::new(),
            #[cfg(feature = "mcp")]
            mcp: crate::mcp::HostServers::default(),
            config,
        };
        host.load_all()?;
        Ok(host)
    }

    /// The database, when the host was built with one.
    pub fn database(&self) -> Option<&Arc<db::Db>> {
        self.db.as_ref()
    }

    /// The shared engine (for the REPL's Rhai evaluation).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// What gated host functions reach (store, workspace, approvals, egress).
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
        self.load_all_with(|path| std::fs::read_to_string(path))
    }

    /// [`Host::load_all`] reading each script through `read`: a language server passes its
    /// editors' unsaved buffers, so what it reports is what `kiln check` would say once saved.
    pub fn load_all_with(
        &self,
        read: impl Fn(&Path) -> std::io::Result<String>,
    ) -> Result<(), HostError> {
        self.modules.clear();
        let mut files = BTreeMap::new();
        if self.config.stdlib {
            for (name, src) in stdlib::FILES {
                let path = format!("stdlib/{name}");
                let mut file = self.load_source(&path, src);
                file.origin = Origin::Stdlib;
                files.insert(path, Arc::new(file));
            }
        }
        files.insert(self.natives.path.clone(), self.natives.clone());
        for dir in &self.config.scripts {
            for path in reload::script_files(dir)? {
                let shown = path.to_string_lossy().to_string();
                let loaded = match read(&path) {
                    Ok(src) => self.load_source(&shown, &src),
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

    fn load_source(&self, path: &str, source: &str) -> LoadedFile {
        loader::load_source_with(&self.engine, path, source, &self.app_caps)
    }

    /// Loads one script's text as this host would, without installing it (what a language
    /// server reports for a file outside every scripts folder; [`Host::set_source`] installs it).
    pub fn check_source(&self, path: &str, source: &str) -> LoadedFile {
        self.load_source(path, source)
    }

    /// The functions the application gave scripts, with the capability each needs.
    pub fn host_fn_capabilities(&self) -> &BTreeMap<String, String> {
        &self.app_caps
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
        reports[0].mcp = self.sync_mcp_servers();
        reports
    }

    /// Starts and stops MCP servers to match what the scripts declare now; a line for each
    /// started or stopped. Only a host in an `Arc` runs servers (their tools reach it by a Weak).
    #[cfg(feature = "mcp")]
    pub fn sync_mcp_servers(&self) -> Vec<String> {
        let Some(this) = self.this.get().and_then(std::sync::Weak::upgrade) else {
            return Vec::new();
        };
        let wanted = self.registry().mcp_servers().cloned().collect();
        let sink: Arc<dyn crate::mcp::SourceSink> = this;
        self.mcp.sync(&sink, wanted)
    }

    /// Without the `mcp` feature no server starts: a line for each one the scripts declare.
    #[cfg(not(feature = "mcp"))]
    pub fn sync_mcp_servers(&self) -> Vec<String> {
        self.registry()
            .mcp_servers()
            .map(|s| {
                format!(
                    "mcp_server(\"{}\") not started: kiln was built without the `mcp` feature",
                    s.name
                )
            })
            .collect()
    }

    /// The MCP servers this host runs (declared in scripts, then `--mcp`), with their state.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Vec<crate::mcp::ServerStatus> {
        self.mcp.statuses()
    }

    /// Where lines about script-declared MCP servers go (restarts, list changes).
    #[cfg(feature = "mcp")]
    pub fn on_mcp_report(&self, report: impl Fn(String) + Send + Sync + 'static) {
        self.mcp.set_report(Arc::new(report));
    }

    /// Mounts `--mcp` servers: their tools join the registry as `SERVER__TOOL`, and they are
    /// listed among [`Host::mcp_servers`]. A server that cannot start is an error.
    #[cfg(feature = "mcp")]
    pub fn mount(
        self: &Arc<Self>,
        specs: Vec<crate::mcp::MountSpec>,
        report: impl Fn(String) + Send + Sync + 'static,
    ) -> Result<crate::mcp::Mounts, crate::mcp::McpError> {
        let sink: Arc<dyn crate::mcp::SourceSink> = self.clone();
        crate::mcp::Mounts::start(&sink, specs, report)
    }

    /// Lists a server without starting it (commands that only read the project): its tools
    /// as its last start recorded them, if one did; how many.
    #[cfg(feature = "mcp")]
    pub fn show_unstarted(self: &Arc<Self>, spec: crate::mcp::MountSpec) -> Option<usize> {
        crate::mcp::unstarted::show_unstarted(self.as_ref(), spec)
    }

    /// Reloads the script at `path` after a change and swaps in the registry it makes. A file
    /// that had loaded keeps its old version while its new one has errors (they are kept as the
    /// file's breakage); a file gone is dropped with its tools.
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
                return self.forget_file(&mut files, shown, old_names.len(), started);
            }
            Err(e) => return unreadable(shown, e, started),
        };
        // A writer that truncates then writes can be caught in between: an empty read of a file
        // that had tools is put off (the watcher looks again once the folder is quiet).
        if defer_empty && source.trim().is_empty() && !old_names.is_empty() {
            return reload::ReloadReport {
                deferred: true,
                ..reload::ReloadReport::loaded(shown, 0, 0, 0, started)
            };
        }
        let loaded = Arc::new(self.load_source(&shown, &source));
        let mut candidate = files.clone();
        candidate.insert(shown.clone(), loaded.clone());
        let mut errors = loaded.errors.clone();
        if errors.is_empty() {
            errors.extend(link_errors(&candidate, &shown));
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
        changed_report(shown, &old_names, &loaded, errors, started)
    }

    /// A script file that is gone: its tools and its breakage go, and the registry without it
    /// is swapped in.
    fn forget_file(
        &self,
        files: &mut BTreeMap<String, Arc<LoadedFile>>,
        shown: String,
        old_tools: usize,
        started: std::time::Instant,
    ) -> reload::ReloadReport {
        files.remove(&shown);
        if let Ok(mut b) = self.broken.lock() {
            b.remove(&shown);
        }
        self.registry.store(Arc::new(self.build(files)));
        reload::ReloadReport::removed(shown, old_tools, started)
    }

    /// Adds (or replaces, by path) a source of tools that is not a script file, such as a
    /// mounted MCP server, and swaps in a registry that includes it.
    pub fn set_source(&self, file: LoadedFile) {
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        files.insert(file.path.clone(), Arc::new(file));
        self.registry.store(Arc::new(self.build(&files)));
    }

    /// Forgets a source added with [`Host::set_source`] (a stopped MCP server's tools).
    pub fn remove_source(&self, path: &str) {
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        if files.remove(path).is_some() {
            self.registry.store(Arc::new(self.build(&files)));
        }
    }

    /// A call context holding these grants, with the current registry pinned.
    pub fn context(&self, grants: capability::Grants) -> context::CallContext {
        let mut ctx = context::CallContext::new(grants, self.services.clone());
        ctx.run.registry = Some(self.registry());
        ctx.run.agents = self
            .this
            .get()
            .map(|w| w.clone() as std::sync::Weak<dyn kiln_core::context::runner::AgentRunner>);
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
    pub fn agent(&self, name: &str) -> Result<Arc<AgentSpec>, HostError> {
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

/// A script file that cannot be read (other than gone): its one error.
fn unreadable(
    shown: String,
    e: std::io::Error,
    started: std::time::Instant,
) -> reload::ReloadReport {
    let err = LoadError::at(
        error::SourceLoc {
            path: shown.clone(),
            line: 0,
            column: 0,
        },
        format!("cannot read: {e}"),
    );
    reload::ReloadReport::failed(shown, vec![err], started)
}

/// The errors the registry built from `candidate` has that are the file `shown`'s: a tool
/// named twice, or a pipeline calling what no longer exists.
fn link_errors(candidate: &BTreeMap<String, Arc<LoadedFile>>, shown: &str) -> Vec<LoadError> {
    let reg = Registry::build(ordered_files(candidate).iter().map(|f| f.as_ref()));
    reg.errors
        .into_iter()
        .filter(|e| {
            e.loc.path == shown
                && matches!(
                    e.kind,
                    LoadErrorKind::DuplicateTool | LoadErrorKind::PipelineLink
                )
        })
        .collect()
}

/// The report of a file loaded in: its tools added, kept and removed against `old_names`,
/// what it serves, and its errors when it loaded in with some (it had not loaded before).
fn changed_report(
    shown: String,
    old_names: &[String],
    loaded: &LoadedFile,
    errors: Vec<LoadError>,
    started: std::time::Instant,
) -> reload::ReloadReport {
    let new_names: Vec<&String> = loaded.tools.iter().map(|t| &t.name).collect();
    let added = new_names.iter().filter(|n| !old_names.contains(n)).count();
    let removed = old_names.iter().filter(|n| !new_names.contains(n)).count();
    let report = reload::ReloadReport {
        served: loaded.served.summary(),
        ..reload::ReloadReport::loaded(shown, added, new_names.len() - added, removed, started)
    };
    if errors.is_empty() {
        report
    } else {
        reload::ReloadReport { errors, ..report }
    }
}

/// stdlib files first, then the application's native tools, then user files in path order.
fn ordered_files(files: &BTreeMap<String, Arc<LoadedFile>>) -> Vec<Arc<LoadedFile>> {
    let mut ordered: Vec<Arc<LoadedFile>> = files.values().cloned().collect();
    // Scripts and mounted servers keep their path order among themselves.
    ordered.sort_by_key(|f| f.origin.min(Origin::Script));
    ordered
}

#[cfg(feature = "mcp")]
impl crate::mcp::SourceSink for Host {
    fn set_source(&self, file: LoadedFile) {
        Host::set_source(self, file);
    }

    fn remove_source(&self, path: &str) {
        Host::remove_source(self, path);
    }

    fn workspace(&self) -> PathBuf {
        self.config.workspace.clone()
    }

    fn mounted(&self, spec: crate::mcp::MountSpec, state: crate::mcp::mount::StateCell) {
        self.mcp.add_flagged(spec, state);
    }

    fn approver(&self) -> std::sync::Arc<dyn Fn(&str, &str) -> bool + Send + Sync> {
        let services = self.services.clone();
        std::sync::Arc::new(move |cap, question| services.approve(cap, question))
    }
}

impl reload::Reload for Host {
    fn folders(&self) -> Vec<PathBuf> {
        self.config.scripts.clone()
    }

    fn reload_path(&self, path: &Path) -> Vec<reload::ReloadReport> {
        Host::reload_path(self, path)
    }

    fn reload_path_settling(&self, path: &Path) -> Vec<reload::ReloadReport> {
        Host::reload_path_settling(self, path)
    }

    fn reload_readers(&self, path: &Path) -> Vec<reload::ReloadReport> {
        let readers = match self.files.lock() {
            Ok(files) => reload::importers(&files, path),
            Err(_) => return Vec::new(),
        };
        let reports: Vec<reload::ReloadReport> = readers
            .into_iter()
            .map(|(reader, via)| reload::ReloadReport {
                via,
                ..self.reload_file(Path::new(&reader), false)
            })
            .collect();
        if !reports.is_empty() {
            self.modules.clear();
        }
        reports
    }
}
