//! Agents as their users shape them: skills they load when a task needs them, runs a
//! person steers while they run, and many tools deferred to a search (kiln's own, or the
//! provider's), and the connections they reach their providers over (HTTP/2).

pub(crate) mod compact;
pub(crate) mod compact_now;
pub(crate) mod defer;
pub(crate) mod http2;
pub(crate) mod mounted;
pub(crate) mod native_search;
pub(crate) mod skills;
pub(crate) mod steer;

/// `kiln ask AGENT PROMPT [EXTRA...]` on the scripts in `dir` (no stdlib), which must succeed;
/// what it printed on stdout.
pub(crate) fn ask_ok(dir: &std::path::Path, agent: &str, prompt: &str, extra: &[&str]) -> String {
    let mut args = vec![agent, prompt, "--no-stdlib", "--scripts", "."];
    args.extend(extra);
    let out = crate::common::ask(&args, dir);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kiln ask {agent}: {said}{err}");
    said
}
