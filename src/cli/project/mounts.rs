//! Which commands start MCP servers, and what they say about it.
//!
//! A cloned repository's `kiln.toml` (`[mounts]`) or a script's `mcp_server(...).command(...)`
//! names programs kiln would run. Commands that only read the project (`kiln check`, `tools`,
//! `schema`, `agents`, `definitions`, `eval --list`) start none of them: they list a server's
//! tools as its last real start recorded them, or say it was not started. Commands that run
//! tools start them and say so once on stderr. Servers given with `--mcp` on the command line
//! are started by every command: the person typing the command named them.

use crate::cli::output::errln;
use crate::cli::{CliResult, Global, mcp_cmd};
use kiln::Host;
use kiln::mcp::{MountSpec, Target};
use std::sync::Arc;

/// A host for a command that only reads the project: no server the project names starts;
/// a line on stderr says what is shown of each instead.
pub fn reading_host(g: &Global, command: &str) -> CliResult<Arc<Host>> {
    let host = g.builder()?.mount_declared(false).build()?;
    let (project, given) = if g.mounts_from_project {
        (parsed(&g.mcp), Vec::new())
    } else {
        (Vec::new(), g.mcp.clone())
    };
    let declared: Vec<MountSpec> = host.registry().mcp_servers().cloned().collect();
    for spec in project.into_iter().chain(declared) {
        let shown = describe(&spec);
        let listed = match host.show_unstarted(spec) {
            Some(n) => format!("its {n} tools are listed as its last start recorded them"),
            None => "its tools are not listed: it has not been started here yet".to_string(),
        };
        errln!(
            "note: {shown} was not started: `{command}` only reads the project, and {listed} (`kiln ask`, `kiln serve` and `kiln mcp` start it)"
        );
    }
    if !given.is_empty() {
        let g = Global {
            mcp: given,
            ..g.clone()
        };
        report_started_mounts(&parsed(&g.mcp));
        mcp_cmd::mount(&g, &host)?;
    }
    Ok(host)
}

/// Says once on stderr which servers a command that runs tools starts.
pub fn report_started(g: &Global, host: &Host) {
    report_started_mounts(&parsed(&g.mcp));
    for spec in host.registry().mcp_servers() {
        errln!("starting {}", describe(spec));
    }
}

fn report_started_mounts(specs: &[MountSpec]) {
    for spec in specs {
        errln!("starting {}", describe(spec));
    }
}

/// The specs that parse (one that does not is an error where it is started).
fn parsed(mcp: &[String]) -> Vec<MountSpec> {
    mcp.iter()
        .filter_map(|s| MountSpec::parse(s).ok())
        .collect()
}

/// `mount NAME (PROGRAM ARGS)` or `mcp_server("NAME") declared at FILE:LINE (URL)`.
fn describe(spec: &MountSpec) -> String {
    let what = match &spec.target {
        Target::Command { program, args } => {
            let mut shown = vec![program.as_str()];
            shown.extend(args.iter().map(String::as_str));
            shown.join(" ")
        }
        Target::Url { url, .. } => url.clone(),
    };
    match &spec.declared {
        Some(at) => format!(
            "mcp_server(\"{}\") declared at {}:{} ({what})",
            spec.name, at.path, at.line
        ),
        None => format!("mount {} ({what})", spec.name),
    }
}
