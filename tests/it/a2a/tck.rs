//! The A2A TCK (a2aproject/a2a-tck, ../shared/peers/a2a-tck) against `kiln serve`: its
//! `mandatory`, `capabilities` and `quality` categories pass over JSON-RPC and HTTP+JSON for
//! the fixture's `helper` agent on `kiln mock`, and `features` is run and its skips reported
//! with their reasons.
//!
//! How the server is started, and why (each is what the TCK needs, said in the spec's words
//! in docs/protocols.md):
//! - `--a2a-root helper`: the TCK reads the card at the origin's root, and its HTTP+JSON
//!   client calls the operations at the root (it drops the interface URL's path);
//! - the model is slow (the scenario's last turn waits 10 minutes) and `--a2a-wait 0.3`: the
//!   TCK expects a task still working after `SendMessage` (it lists, cancels and continues
//!   it), so a blocking send answers after 0.3 s with the task as it is; the few messages its
//!   streaming tests send are answered at once, so those streams end;
//! - `--a2a-push net:localhost:8888`: the TCK's webhook; `--a2a-push net:example.com` with
//!   `--resolve example.com:127.0.0.1`: the push-config tests register
//!   `https://example.com/webhook`, which must be accepted, and whose deliveries then go to
//!   127.0.0.1 (nothing listens on 443 there), never off this machine.
//!
//! It runs twice: on an open server (no security scheme declared), then behind a bearer token
//! (the scheme and the extended card declared), where the TCK's authentication tests run too.
//!
//! `#[ignore]`d: it needs the TCK, which `.ci/run` passes as `KILN_A2A_TCK` (its `run`
//! script), with its Python dependencies installed once in `A2A_TCK_DEPS`.

use super::A2a;
use std::path::PathBuf;
use std::process::Command;

/// The categories that must pass, each over both bindings.
const REQUIRED: [&str; 3] = ["mandatory", "capabilities", "quality"];

fn tck() -> PathBuf {
    let run = std::env::var_os("KILN_A2A_TCK")
        .map(PathBuf::from)
        .expect("KILN_A2A_TCK is not set: .ci/run sets it to ../shared/peers/a2a-tck/run");
    assert!(
        run.exists(),
        "KILN_A2A_TCK={} does not exist",
        run.display()
    );
    run
}

/// Runs one category over both bindings, with `headers` on every request of the TCK's (its
/// default is the version header alone): whether it passed, and its output.
fn category(run: &PathBuf, sut: &str, name: &str, headers: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new(run);
    cmd.args([
        "--sut-url",
        sut,
        "--category",
        name,
        "--transports",
        "jsonrpc,rest",
    ])
    // The skips' reasons in the summary.
    .env("PYTEST_ADDOPTS", "-rs");
    if let Some(h) = headers {
        cmd.env("A2A_AUTH_HEADERS", h);
    }
    let out = cmd.output().expect("run the TCK");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs the required categories (and, when `features`, reports that one); the failures.
fn required(
    run: &PathBuf,
    sut: &str,
    label: &str,
    headers: Option<&str>,
    features: bool,
) -> Vec<String> {
    let mut failed = Vec::new();
    for name in REQUIRED {
        let (ok, text) = category(run, sut, name, headers);
        for line in summary(&text) {
            println!("a2a-tck {label} {name}: {line}");
        }
        if !ok || text.contains(" failed") {
            failed.push(format!("{label} {name}:\n{}", summary(&text).join("\n")));
        }
    }
    if features {
        // `features` is reported, not required: each skip with its reason.
        let (_, text) = category(run, sut, "features", headers);
        for line in summary(&text) {
            println!("a2a-tck {label} features: {line}");
        }
    }
    failed
}

/// The flags the TCK needs (see the module).
const ARGS: [&str; 16] = [
    "--a2a-root",
    "helper",
    "--a2a-wait",
    "0.3",
    "--a2a-push",
    "net:localhost:8888",
    "--a2a-push",
    "net:example.com",
    "--resolve",
    "example.com:127.0.0.1",
    "--max-runs",
    "500",
    "--queue",
    "500",
    "--max-body",
    "4194304",
];

/// The token of the second run's actor.
const TOKEN: &str = "tck-0123456789abcdef-0123";

/// The lines of pytest's summaries: counts, failures and skips with their reasons.
fn summary(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            l.starts_with("FAILED")
                || l.starts_with("SKIPPED")
                || l.starts_with("ERROR ")
                || (l.contains(" passed") && l.contains(" in "))
        })
        .collect()
}

#[test]
#[ignore = "needs the A2A TCK (../shared/peers/a2a-tck/run): run by .ci/run"]
fn a2a_tck_passes_mandatory_capabilities_and_quality_over_both_bindings() {
    let run = tck();
    // An open server (loopback, no tokens): the card declares no security scheme.
    let open = A2a::start(&ARGS, &[]);
    let mut failed = required(
        &run,
        &format!("{}/a2a/helper", open.base),
        "open",
        None,
        true,
    );
    drop(open);
    // Behind a token: the card declares the bearer scheme and the extended card, and the TCK's
    // authentication tests run (a request without the token, or with a wrong one, is a 401).
    let tokens = format!(r#"[{{"token": "{TOKEN}", "actor": "tck", "caps": ["store"]}}]"#);
    let guarded = A2a::start(&ARGS, &[("KILN_TOKENS", &tokens)]);
    let headers = format!(r#"{{"A2A-Version": "1.0", "Authorization": "Bearer {TOKEN}"}}"#);
    let sut = format!("{}/a2a/helper", guarded.base);
    failed.extend(required(&run, &sut, "tokens", Some(&headers), false));
    assert!(
        failed.is_empty(),
        "the A2A TCK failed:\n{}",
        failed.join("\n\n")
    );
}
