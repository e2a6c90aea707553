//! A file that fails to load contributes nothing: no tool, agent, pipeline or MCP server of
//! it is registered with the settings a cut builder chain dropped.

use crate::common::*;

fn loaded(src: &str) -> (Scripts, std::sync::Arc<kiln::Host>) {
    let s = Scripts::new(&[
        ("f.rhai", src),
        ("ok.rhai", r#"tool("fine").handler(|a| 1);"#),
    ]);
    let h = s.host();
    (s, h)
}

#[test]
fn an_agent_cut_before_its_ask_is_not_registered() {
    let (s, host) = loaded(
        r#"agent("w").provider("script").tools(["write_file"]).capabilities(["fs.write:out"])
    .planner(|m, t| #{ tool_calls: [#{ name: "write_file", args: #{ path: "out/w.txt", text: "x" } }] })
    .akk(["fs.write"]);"#,
    );
    let errors = s.errors(&host);
    assert!(errors.iter().any(|e| e.contains("akk")), "{errors:?}");
    assert!(host.agent("w").is_err(), "the cut agent is live");
    // The rest of the scripts still load.
    assert!(host.tool("fine").is_ok());
    // And through the binary: the run is refused, nothing is written.
    std::fs::create_dir_all(s.path().join("out")).expect("mkdir");
    let out = std::process::Command::new(kiln_bin())
        .args(["ask", "w", "go", "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("kiln");
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(!s.path().join("out/w.txt").exists());
}

#[test]
fn a_tool_file_cut_by_a_typo_registers_none_of_its_tools() {
    let (s, host) = loaded(
        r#"tool("before").handler(|a| 1);
tool("t").requires("net").handler(|a| 1).timeoutt(5);
tool("after").handler(|a| 2);"#,
    );
    assert!(s.errors(&host).iter().any(|e| e.contains("timeoutt")));
    for name in ["before", "t", "after"] {
        assert!(host.tool(name).is_err(), "{name} is live");
    }
}

#[test]
fn a_pipeline_or_mcp_server_in_a_broken_file_is_not_registered() {
    let (s, host) = loaded(
        r#"tool("double").param("n", "integer").handler(|a| a.n * 2);
pipeline("p").input("n", "integer").compute("twice", ["n"], "double").result("twice");
mcp_server("srv").command("python3");
throw "broken at the end";"#,
    );
    assert!(
        s.errors(&host)
            .iter()
            .any(|e| e.contains("broken at the end"))
    );
    assert_eq!(host.registry().pipelines().count(), 0);
    assert_eq!(host.registry().mcp_servers().count(), 0);
    assert!(host.tool("double").is_err());
}
