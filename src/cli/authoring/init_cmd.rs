//! `kiln init [DIR]`: a new project — `scripts/` with a tool, an agent and a passing test,
//! a commented `kiln.toml` stating every key's default, `.gitignore` for `.kiln/`, and the
//! `kiln definitions` file for editors; `--app` adds a tool with a page (MCP Apps).

use crate::cli::{CliResult, Global, output};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `kiln init` options.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// The project folder (created if missing).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Also write a tool with a face (MCP Apps): scripts/stats.rhai and the page it shows,
    /// scripts/stats.html, which MCP hosts and kiln's console render beside the conversation.
    #[arg(long)]
    pub app: bool,
}

const TOOL: &str = include_str!("init/hello.rhai");
const TEST: &str = include_str!("init/hello.test.rhai");
const APP_TOOL: &str = include_str!("init/stats.rhai");
const APP_PAGE: &str = include_str!("init/stats.html");

/// Writes `text` to `path` unless the file exists (an existing project is never overwritten).
fn create(path: &Path, text: &str) -> CliResult<()> {
    if path.exists() {
        output::outln!("kept     {} (already there)", path.display())?;
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    output::outln!("created  {}", path.display())?;
    Ok(())
}

/// `kiln init`.
pub fn init(g: &Global, a: InitArgs) -> CliResult<ExitCode> {
    let scripts = a.dir.join(kiln::project::defaults::SCRIPTS_DIR);
    std::fs::create_dir_all(&scripts)
        .map_err(|e| format!("cannot create {}: {e}", scripts.display()))?;
    create(&scripts.join("hello.rhai"), TOOL)?;
    create(&scripts.join("hello.test.rhai"), TEST)?;
    if a.app {
        create(&scripts.join("stats.rhai"), APP_TOOL)?;
        create(&scripts.join("stats.html"), APP_PAGE)?;
    }
    let project = a.dir.join(kiln::project::defaults::FILE_NAME);
    create(&project, &kiln::project::template())?;
    let ignore = a.dir.join(".gitignore");
    let current = std::fs::read_to_string(&ignore).unwrap_or_default();
    let state = format!("{}/", kiln::project::defaults::STATE_DIR);
    if !current.lines().any(|l| l.trim() == state) {
        let sep = if current.is_empty() || current.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        std::fs::write(&ignore, format!("{current}{sep}{state}\n"))
            .map_err(|e| format!("cannot write {}: {e}", ignore.display()))?;
        output::outln!("updated  {}", ignore.display())?;
    }
    let host = kiln::Host::builder()
        .scripts(scripts.clone())
        .workspace(a.dir.clone())
        .stdlib(!g.no_stdlib)
        .build()?;
    let defs = a.dir.join("kiln.d.rhai");
    crate::cli::authoring::defs_cmd::write(&host, &defs)?;
    output::outln!("created  {}", defs.display())?;
    output::outln!(
        "\nnext: cd {} && kiln test   (then kiln ask greeter Ada)",
        a.dir.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
