//! `kiln auth login|status|logout NAME`: OAuth for mounted MCP servers (`--mcp
//! "NAME=https://... oauth"` or a script's `mcp_server(NAME).url(...).oauth(...)`). Tokens are
//! kept per workspace in `.kiln/oauth/NAME.json` (mode 0600) and never printed.

use super::{CliResult, Global, output::outln};
use clap::{Args, Subcommand};
use kiln::mcp::{MountSpec, Target};
use std::process::ExitCode;

/// `kiln auth` options.
#[derive(Args, Debug)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

/// What `kiln auth` does.
#[derive(Subcommand, Debug)]
pub enum AuthCommand {
    /// Authorize kiln for a mounted server: prints the page to open (and opens a browser where
    /// there is one), then takes the authorization server's redirect on 127.0.0.1.
    Login {
        /// The mounted server's name.
        name: String,
        /// Fetch the authorization page and follow it without a browser (an authorization
        /// server that decides without a person).
        #[arg(long)]
        headless: bool,
        /// Ask for this scope too (repeatable), e.g. after a call was refused for lacking it.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
    },
    /// Which mounted servers use OAuth, and whether kiln holds tokens for them.
    Status,
    /// Forget the tokens of a mounted server.
    Logout {
        /// The mounted server's name.
        name: String,
    },
}

/// The servers mounted with OAuth: `--mcp` ones and those scripts declare.
fn oauth_servers(g: &Global) -> CliResult<Vec<MountSpec>> {
    let mut specs = g
        .mcp
        .iter()
        .map(|s| MountSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    // Only the declarations: mounting would reach out to the servers.
    let host = g.builder()?.mount_declared(false).build()?;
    specs.extend(host.registry().mcp_servers().cloned());
    specs.retain(|s| matches!(&s.target, Target::Url { oauth: Some(_), .. }));
    Ok(specs)
}

fn find(g: &Global, name: &str) -> CliResult<MountSpec> {
    let specs = oauth_servers(g)?;
    let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    specs
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| {
            format!(
                "no MCP server \"{name}\" is mounted with OAuth (mounted with OAuth: {}); mount it with --mcp \"{name}=https://... oauth\" or .oauth(...) in a script",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            )
            .into()
        })
}

/// Runs `kiln auth`.
pub fn auth(g: &Global, a: AuthArgs) -> CliResult<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match a.command {
        AuthCommand::Login {
            name,
            headless,
            scopes,
        } => {
            let spec = find(g, &name)?;
            let say = |text: &str| eprintln!("{text}");
            let how = kiln::mcp::oauth::Login {
                headless,
                scopes,
                say: &say,
            };
            let granted = runtime.block_on(kiln::mcp::oauth::login(&spec, &g.workspace, how))?;
            let scopes = if granted.is_empty() {
                String::new()
            } else {
                format!(" (scopes: {})", granted.join(" "))
            };
            outln!("kiln is authorized for MCP server \"{name}\"{scopes}")?;
        }
        AuthCommand::Status => {
            let specs = oauth_servers(g)?;
            if specs.is_empty() {
                outln!("no MCP server is mounted with OAuth")?;
            }
            for spec in specs {
                let path = kiln::mcp::oauth::token_path(&g.workspace, &spec.name);
                let state = match std::fs::metadata(&path) {
                    Ok(_) => "tokens kept",
                    Err(_) => "not authorized (kiln auth login)",
                };
                outln!("{}  {}  {state}", spec.name, spec.target_text())?;
            }
        }
        AuthCommand::Logout { name } => {
            let path = kiln::mcp::oauth::token_path(&g.workspace, &name);
            match std::fs::remove_file(&path) {
                Ok(()) => outln!("forgot the tokens of MCP server \"{name}\"")?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    outln!("kiln holds no tokens for MCP server \"{name}\"")?
                }
                Err(e) => return Err(format!("{}: {e}", path.display()).into()),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
