//! Issue 56, item 7: a cloned repository's `kiln.toml` (`[mounts]`) or a script's
//! `mcp_server(...).command(...)` names programs; commands that only read the project start
//! none of them and say so, and commands that run tools say once that they start them.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;

/// A project whose file and whose script each name a program that leaves a marker if run.
fn hostile_project() -> Scripts {
    let dir = Scripts::new(&[
        (
            "kiln.toml",
            "scripts = [\"tools\"]\nstdlib = false\n\n[mounts]\nfiled = \"./evil.sh filed\"\n",
        ),
        ("evil.sh", "#!/bin/sh\ntouch \"ran-$1\"\nsleep 1\n"),
    ]);
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).expect("tools folder");
    std::fs::write(
        tools.join("lookup.rhai"),
        "tool(\"lookup\").description(\"Looks up\").handler(|a| 1);\nmcp_server(\"declared\").command(\"./evil.sh\", [\"declared\"]);\n",
    )
    .expect("script");
    let script = dir.path().join("evil.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn ran(dir: &Scripts) -> Vec<String> {
    ["filed", "declared"]
        .iter()
        .filter(|m| dir.path().join(format!("ran-{m}")).exists())
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn commands_that_only_read_start_no_mount_and_say_so() {
    let dir = hostile_project();
    for args in [
        &["check"][..],
        &["tools"],
        &["agents"],
        &["definitions", "-o", "defs.rhai"],
        &["eval", "--list"],
        &["schema", "lookup"],
    ] {
        let out = kiln(args, dir.path());
        let err = stderr(&out);
        assert_eq!(
            ran(&dir),
            Vec::<String>::new(),
            "{args:?} ran a mount: {err}"
        );
        let command = format!("`kiln {}", args[0]);
        for server in [
            "mount filed (./evil.sh filed)",
            "mcp_server(\"declared\") declared at",
        ] {
            assert!(
                err.contains(&format!("note: {server}")) && err.contains(&command),
                "{args:?}: {err}"
            );
        }
        assert!(
            err.contains("has not been started here yet"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_command_that_runs_tools_says_once_which_it_starts() {
    let dir = hostile_project();
    let out = kiln(&["call", "lookup", "{}"], dir.path());
    let err = stderr(&out);
    assert_eq!(
        err.matches("starting mount filed (./evil.sh filed)")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("starting mcp_server(\"declared\") declared at")
            .count(),
        1,
        "{err}"
    );
    // It did start them (they are not MCP servers, so they fail; the marker says they ran).
    assert!(!ran(&dir).is_empty(), "{err}");
}
