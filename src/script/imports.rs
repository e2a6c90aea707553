//! Module resolution for `import`: only files inside the scripts folders.

use rhai::module_resolvers::FileModuleResolver;
use rhai::{Engine, EvalAltResult, Module, ModuleResolver, Position};
use std::sync::Arc;

type SharedModule = Arc<Module>;
use std::path::{Path, PathBuf};

/// Resolves `import "x"` relative to the importing script, refusing anything outside the roots.
pub struct RootedResolver {
    roots: Vec<PathBuf>,
    files: FileModuleResolver,
}

impl RootedResolver {
    /// A resolver limited to these folders (canonicalized where they exist).
    pub fn new(roots: Vec<PathBuf>) -> Self {
        let roots = roots
            .into_iter()
            .filter_map(|r| r.canonicalize().ok())
            .collect();
        RootedResolver {
            roots,
            files: FileModuleResolver::new(),
        }
    }

    fn locate(&self, source: Option<&str>, path: &str) -> Option<PathBuf> {
        let rel = Path::new(path);
        if rel.is_absolute() {
            return None;
        }
        let mut file = rel.to_path_buf();
        if file.extension().is_none() {
            file.set_extension("rhai");
        }
        let base = source
            .and_then(|s| Path::new(s).parent().map(Path::to_path_buf))
            .or_else(|| self.roots.first().cloned())?;
        let full = base.join(file).canonicalize().ok()?;
        self.roots
            .iter()
            .any(|r| full.starts_with(r))
            .then_some(full)
    }
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
            Some(full) => {
                let full = full.to_string_lossy().to_string();
                self.files.resolve(engine, None, &full, pos)
            }
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
