//! OAuth mounts from the outside: how they are declared (and mistaken), what `kiln auth`
//! says about them, and what a mount without tokens tells the person. The flows themselves
//! run against the conformance suite's authorization servers (mcp_conformance.rs).

use crate::common::*;

#[test]
fn oauth_mounts_are_declared_checked_and_listed_by_kiln_auth() {
    let s = Scripts::new(&[(
        "servers.rhai",
        r#"mcp_server("gh").url("https://127.0.0.1:9/mcp").oauth(#{ scopes: ["repo", "read:org"] });
mcp_server("ci").url("https://127.0.0.1:7/mcp").oauth(#{ grant: "client_credentials", client_id: "kiln", client_secret_env: "CI_SECRET" });
"#,
    )]);
    // Nothing listens at these loopback ports: the mounts fail at once, the listing stands.
    let out = kiln(
        &["auth", "status", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.contains("gh  https://127.0.0.1:9/mcp  not authorized (kiln auth login)"),
        "{text}"
    );
    assert!(text.contains("ci  https://127.0.0.1:7/mcp"), "{text}");
    let out = kiln(
        &["auth", "logout", "gh", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert!(
        stdout(&out).contains("kiln holds no tokens for MCP server \"gh\""),
        "{}",
        stdout(&out)
    );
    let out = kiln(
        &["auth", "login", "nope", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert_eq!(out.status.code(), Some(2), "a usage mistake");
    assert!(
        stderr(&out)
            .contains("no MCP server \"nope\" is mounted with OAuth (mounted with OAuth: gh, ci)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn mistakes_in_an_oauth_mount_are_load_errors_at_their_place() {
    let s = Scripts::new(&[(
        "bad.rhai",
        r#"mcp_server("a").url("https://127.0.0.1:9/a").bearer_env("A_TOKEN").oauth();
mcp_server("b").url("https://127.0.0.1:9/b").oauth(#{ colour: "red" });
mcp_server("c").url("https://127.0.0.1:9/c").oauth(#{ grant: "password" });
"#,
    )]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], s.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "bad.rhai:1:46: mcp_server \"a\": a server takes .bearer_env(...) or .oauth(...), not both",
        "bad.rhai:2:46: mcp_server \"b\": unknown OAuth option \"colour\"",
        "bad.rhai:3:46: mcp_server \"c\": grant \"password\": authorization_code (a person logs in) or client_credentials",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let out = kiln(
        &[
            "tools",
            "--no-stdlib",
            "--mcp",
            "x=https://127.0.0.1:9/x oauth colour=red",
        ],
        s.path(),
    );
    assert!(
        stderr(&out).contains("unknown OAuth option \"colour\""),
        "{}",
        stderr(&out)
    );
}
