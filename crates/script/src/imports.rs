//! Module resolution for `import`: only files inside the scripts folders, compiled once and
//! cached until a script changes; and the static import graph hot reload follows.

use rhai::{
    AST, ASTNode, Engine, EvalAltResult, Expr, Module, ModuleResolver, Position, Scope, Stmt,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type SharedModule = Arc<Module>;

/// Compiled modules by canonical path, shared by the engine's resolver and the host, which
/// empties it when a script changes.
#[derive(Clone, Default)]
pub struct ModuleCache {
    inner: Arc<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    modules: Mutex<HashMap<PathBuf, SharedModule>>,
    /// Bumped by every clear, so a module compiled from a file that changed meanwhile is not
    /// put back into the emptied cache.
    generation: AtomicU64,
}

impl ModuleCache {
    /// Forgets every compiled module. All of them, not only the changed file: a module's
    /// compiled form embeds the modules it imported.
    pub fn clear(&self) {
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, SharedModule>> {
        self.inner.modules.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    fn get(&self, path: &Path) -> Option<SharedModule> {
        self.lock().get(path).cloned()
    }

    fn keep(&self, path: PathBuf, module: SharedModule, compiled_at: u64) {
        let mut modules = self.lock();
        if self.generation() == compiled_at {
            modules.insert(path, module);
        }
    }
}

/// Resolves `import "x"` relative to the importing script, refusing anything outside the roots.
pub struct RootedResolver {
    roots: Vec<PathBuf>,
    cache: ModuleCache,
}

impl RootedResolver {
    /// A resolver limited to these folders (canonicalized where they exist), keeping compiled
    /// modules in `cache`.
    pub fn new(roots: Vec<PathBuf>, cache: ModuleCache) -> Self {
        let roots = roots
            .into_iter()
            .filter_map(|r| r.canonicalize().ok())
            .collect();
        RootedResolver { roots, cache }
    }

    fn locate(&self, source: Option<&str>, path: &str) -> Option<PathBuf> {
        let base = source
            .and_then(|s| Path::new(s).parent().map(Path::to_path_buf))
            .or_else(|| self.roots.first().cloned())?;
        let full = target(&base, path)?.canonicalize().ok()?;
        self.roots
            .iter()
            .any(|r| full.starts_with(r))
            .then_some(full)
    }

    fn compile(
        &self,
        engine: &Engine,
        full: &Path,
        path: &str,
        pos: Position,
    ) -> Result<SharedModule, Box<EvalAltResult>> {
        let in_module = |e: Box<EvalAltResult>| -> Box<EvalAltResult> {
            EvalAltResult::ErrorInModule(path.to_string(), e, pos).into()
        };
        let generation = self.cache.generation();
        let mut ast = engine.compile_file(full.to_path_buf()).map_err(in_module)?;
        // The full path, so the module's own imports resolve next to it.
        ast.set_source(full.to_string_lossy().as_ref());
        let module: SharedModule = Module::eval_ast_as_new(Scope::new(), &ast, engine)
            .map_err(in_module)?
            .into();
        self.cache
            .keep(full.to_path_buf(), module.clone(), generation);
        Ok(module)
    }
}

/// `path` as imported from a script in `base`: relative only, `.rhai` added when it has no
/// extension. Not canonicalized.
fn target(base: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path);
    if rel.is_absolute() {
        return None;
    }
    let mut file = rel.to_path_buf();
    if file.extension().is_none() {
        file.set_extension("rhai");
    }
    Some(base.join(file))
}

impl ModuleResolver for RootedResolver {
    fn resolve(
        &self,
        engine: &Engine,
        source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> Result<SharedModule, Box<EvalAltResult>> {
        match self.locate(source, path) {
            Some(full) => match self.cache.get(&full) {
                Some(module) => Ok(module),
                None => self.compile(engine, &full, path, pos),
            },
            None => Err(EvalAltResult::ErrorInModule(
                path.to_string(),
                EvalAltResult::ErrorRuntime(
                    format!("import \"{path}\" is outside the scripts folders or does not exist")
                        .into(),
                    pos,
                )
                .into(),
                pos,
            )
            .into()),
        }
    }
}

/// The files a script at `importer` imports by a literal path (`import "helper" as h;`
/// anywhere, handlers included), canonicalized. A file that does not exist yet is kept too,
/// so creating it reloads the importer.
pub fn imported_files(ast: &AST, importer: &Path) -> Vec<PathBuf> {
    let Some(base) = importer.parent() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    ast.walk(&mut |path: &[ASTNode]| {
        if let Some(ASTNode::Stmt(Stmt::Import(x, _))) = path.last()
            && let Expr::StringConstant(s, _) = &x.0
            && let Some(file) = target(base, s).and_then(|f| canonical(&f))
            && !found.contains(&file)
        {
            found.push(file);
        }
        true
    });
    found
}

/// A file's canonical path; for a missing file, its canonical folder joined with its name.
pub fn canonical(p: &Path) -> Option<PathBuf> {
    p.canonicalize().ok().or_else(|| {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    })
}
