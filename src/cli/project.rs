//! `kiln.toml` under the flags: the project file fills every option the command line left
//! unset. Precedence, highest first:
//!
//! 1. a flag on the command line;
//! 2. the environment variable that flag reads (`KILN_DB`, `KILN_NET_PROXY`, `KILN_TOKENS`),
//!    with a one-line note on stderr when it overrides a key the file sets;
//! 3. the project file;
//! 4. the flag's default (`kiln::project::defaults`).
//!
//! A list given on the command line replaces the file's list (it does not add to it).

pub(crate) mod mounts;

use super::{CliResult, Global};
use clap::ArgMatches;
use clap::parser::ValueSource;
use kiln::project::{Project, defaults};
use std::path::PathBuf;
use std::sync::Arc;

/// Where each option's value came from.
pub struct Given<'a> {
    levels: Vec<&'a ArgMatches>,
}

impl<'a> Given<'a> {
    /// The sources recorded while parsing (the top level and the subcommand's).
    pub fn new(matches: &'a ArgMatches) -> Self {
        let mut levels = vec![matches];
        let mut at = matches;
        while let Some((_, sub)) = at.subcommand() {
            levels.push(sub);
            at = sub;
        }
        Given { levels }
    }

    fn source(&self, id: &str) -> Option<ValueSource> {
        let known = |m: &&&ArgMatches| m.ids().any(|i| i.as_str() == id);
        let sources = self.levels.iter().filter(known);
        sources
            .filter_map(|m| m.value_source(id))
            .min_by_key(|s| match s {
                ValueSource::CommandLine => 0,
                ValueSource::EnvVariable => 1,
                _ => 2,
            })
    }

    /// Whether the option was given as a flag.
    pub fn flag(&self, id: &str) -> bool {
        self.source(id) == Some(ValueSource::CommandLine)
    }

    /// Whether the option came from its environment variable.
    pub fn env(&self, id: &str) -> bool {
        self.source(id) == Some(ValueSource::EnvVariable)
    }
}

/// Says on stderr that `var` overrides `key` of the project file.
pub fn note_env_override(var: &str, key: &str, project: &Project) {
    crate::cli::output::errln!(
        "kiln: {var} overrides `{key}` of {}",
        project.path.display()
    );
}

/// Fills `key`'s option from the file unless a flag gave it (a list flag replaces the list).
macro_rules! fill {
    ($given:expr, $args:expr, $file:expr; $($field:ident),+ $(,)?) => {
        $(
            if !$given.flag(stringify!($field)) {
                if let Some(v) = $file.$field.clone() {
                    $args.$field = v.into();
                }
            }
        )+
    };
}
pub(crate) use fill;

/// The project file this command line names or finds (`--project`, `--no-project`), read.
fn find(g: &Global) -> CliResult<Option<Project>> {
    if g.no_project {
        return Ok(None);
    }
    let path = match &g.project_file {
        Some(path) => path.clone(),
        None => match Project::discover(&std::env::current_dir()?) {
            Some(path) => path,
            None => return Ok(None),
        },
    };
    Ok(Some(Project::load(&path)?))
}

/// Reads the project file this command line names or finds, fills the options every command
/// takes, and returns it (to fill the command's own options).
pub fn apply_global(g: &mut Global, given: &Given) -> CliResult<Option<Arc<Project>>> {
    let Some(project) = find(g)? else {
        return Ok(None);
    };
    let project = Arc::new(project);
    fill_global(g, &project, given);
    g.project = Some(project.clone());
    Ok(Some(project))
}

/// The file's `[grants] caps`, unless `--caps` was given.
pub fn caps(project: &Project, given: &Given) -> Option<Vec<String>> {
    (project.settings.grants.caps.clone()).filter(|_| !given.flag("caps"))
}

/// Gives `caps` the file's grants, when there are any to give.
pub fn fill_caps(caps: &mut Vec<String>, file: Option<Vec<String>>) {
    if let Some(file) = file {
        *caps = file;
    }
}

/// The options every command takes.
fn fill_global(g: &mut Global, project: &Project, given: &Given) {
    let file = &project.settings;
    if !given.flag("scripts") {
        // Named in the file: a missing folder is an error, as with `--scripts`. Not named:
        // the root's `scripts/` when there is one, else the default as without a file.
        let dirs = project.scripts();
        if file.scripts.is_some() || dirs.iter().all(|d| d.is_dir()) {
            g.scripts = dirs;
        }
    }
    if !given.flag("workspace") {
        g.workspace = project.workspace();
    }
    g.max_programs = g.max_programs.or(file.programs.max.filter(|n| *n > 0));
    g.program_memory = g
        .program_memory
        .or(file.programs.memory_mib.map(|m| m.max(128)));
    if !given.flag("no_stdlib")
        && !given.flag("stdlib")
        && let Some(stdlib) = file.stdlib
    {
        g.no_stdlib = !stdlib;
    }
    if given.env("db") && file.db.is_some() {
        note_env_override("KILN_DB", "db", project);
    } else if !given.flag("db") && file.db.is_some() {
        g.db = file.db.clone();
    }
    if given.env("net_proxy") && file.network.proxy.is_some() {
        note_env_override("KILN_NET_PROXY", "network.proxy", project);
    } else if !given.flag("net_proxy")
        && let Some(proxy) = file.network.proxy
    {
        g.net_proxy = proxy;
    }
    if !given.flag("http1") && file.network.http1 == Some(true) {
        g.http1 = true;
    }
    fill!(given, g, file.grants; needs_approval);
    fill!(given, g, file.network; resolve);
    let env = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    for (name, s) in file.providers.iter() {
        let var = kiln::model::ProviderKind::parse(name).and_then(|k| k.base_url_var());
        if let Some(var) = var.filter(|v| s.base_url.is_some() && env(v)) {
            note_env_override(var, &format!("providers.{name}.base_url"), project);
        }
    }
    // A kiln another kiln started as a mount leaves the file's mounts out: mounting them
    // again would start itself over and over.
    let mounted = std::env::var_os(kiln::mcp::MOUNTED_AS_VAR).is_some();
    if !given.flag("mcp") && !file.mounts.is_empty() && !mounted {
        g.mcp = (file.mounts.iter())
            .map(|(name, server)| format!("{name}={server}"))
            .collect();
        g.mounts_from_project = true;
    }
}

/// The file's `[providers.NAME]`, as the host takes them.
pub fn providers(project: &Project) -> kiln::model::ProviderDefaults {
    (project.settings.providers.iter())
        .map(|(name, s)| {
            let default = kiln::model::ProviderDefault {
                base_url: s.base_url.clone(),
                api_key_env: s.api_key_env.clone(),
            };
            (name.to_string(), default)
        })
        .collect()
}

/// The scripts folders a command loads: the flags', the file's, else the default.
pub fn scripts_or_default(g: &Global) -> Vec<PathBuf> {
    if g.scripts.is_empty() {
        vec![PathBuf::from(defaults::SCRIPTS_DIR)]
    } else {
        g.scripts.clone()
    }
}

/// Refuses an `auth_audience` without the `auth_issuer` it belongs to (clap checks the flags;
/// this checks what the file added), rather than ignoring it without a word.
pub fn unused_audience(unused: bool, table: &str, project: &Project) -> CliResult<()> {
    if unused {
        let path = project.path.display();
        return Err(format!(
            "{path}: [{table}] auth_audience needs auth_issuer (a flag or the file's)"
        )
        .into());
    }
    Ok(())
}
