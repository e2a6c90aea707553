//! The example chat page (examples/chat_page): bundled with esbuild from npm, served by
//! `kiln serve --static`, and used in Chromium under Playwright: the tool's progress bar shows,
//! the approval button is clicked, the answer comes. And `--static`'s walls over raw HTTP.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::path::Path;

/// The example's scripts, copied into `tmp` (a server writes beside its scripts).
fn example_scripts(tmp: &Path) -> std::path::PathBuf {
    let scripts = tmp.join("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts");
    let from = repo().join("examples/chat_page/scripts/importer.rhai");
    std::fs::copy(from, scripts.join("importer.rhai")).expect("copy");
    scripts
}

/// The page's files in `site`: its HTML and CSS, and `dist/app.js` bundled from `web/app.js`
/// with the front-end peers' esbuild and `ai`.
fn build_page(modules: &Path, site: &Path) {
    let web = repo().join("examples/chat_page/web");
    std::fs::create_dir_all(site.join("dist")).expect("dist");
    for f in ["index.html", "style.css"] {
        std::fs::copy(web.join(f), site.join(f)).expect("copy");
    }
    let out = std::process::Command::new(modules.join("node_modules/.bin/esbuild"))
        .arg(web.join("app.js"))
        .args(["--bundle", "--format=esm", "--platform=browser", "--minify"])
        .arg(format!("--outfile={}", site.join("dist/app.js").display()))
        .env("NODE_PATH", modules.join("node_modules"))
        .output()
        .expect("esbuild");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
#[ignore = "needs esbuild and ai (npm, KILN_FRONTENDS), Playwright (PyPI) and Debian's chromium (run by .ci/run)"]
fn frontends_the_example_chat_page_shows_progress_and_takes_an_approval_in_chromium() {
    let modules = std::env::var("KILN_FRONTENDS").expect("KILN_FRONTENDS names the npm install");
    let tmp = tempfile::tempdir().expect("tmp");
    let site = tmp.path().join("site");
    build_page(Path::new(&modules), &site);
    let scripts = example_scripts(tmp.path());
    let db = tmp.path().join("k.db");
    let site_arg = site.display().to_string();
    let serve = Serve::start(&scripts, &db, &["--static", &site_arg], &[]);
    let shot = repo().join("target/chat_page.png");
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/frontends/chat_page_check.py"))
        .arg(format!("{}/app/", serve.url))
        .arg(&shot)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(v["errors"], json!([]), "{v:#}");
    assert_eq!(v["progress"], json!(["40", "40"]), "{v:#}");
    assert_eq!(v["publish"], "output-available", "{v:#}");
    assert_eq!(
        v["events"].as_array().map(Vec::len),
        Some(4),
        "a checkpoint every 10 rows: {v:#}"
    );
    assert_eq!(v["messages"], 2, "{v:#}");
}

#[test]
#[ignore = "needs Playwright (PyPI) and Debian's chromium (run by .ci/run)"]
fn frontends_the_console_shows_a_tools_progress_live_and_in_its_timeline() {
    let tmp = tempfile::tempdir().expect("tmp");
    let scripts = example_scripts(tmp.path());
    let serve = Serve::start(&scripts, &tmp.path().join("k.db"), &[], &[]);
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/frontends/console_notes_check.py"))
        .arg(&serve.url)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(v["errors"], json!([]), "{v:#}");
    assert_eq!(
        v["live_events"], 4,
        "a checkpoint every 10 rows, live: {v:#}"
    );
    assert_eq!(v["timeline_events"], 4, "{v:#}");
    assert_eq!(v["timeline_progress"], json!(["40", "40"]), "{v:#}");
}

#[test]
fn static_serves_the_folders_plain_files_with_the_consoles_headers_and_nothing_else() {
    let tmp = tempfile::tempdir().expect("tmp");
    let site = tmp.path().join("site");
    std::fs::create_dir_all(&site).expect("site");
    std::fs::write(site.join("index.html"), "<h1>hi</h1>").expect("write");
    std::fs::write(site.join(".env"), "KEY=1").expect("write");
    std::fs::write(tmp.path().join("secret.txt"), "no").expect("write");
    let scripts = Scripts::new(&[("a.rhai", r#"tool("t").description("t").handler(|a| 1);"#)]);
    let site_arg = site.display().to_string();
    let serve = Serve::start(
        scripts.path(),
        &tmp.path().join("k.db"),
        &["--static", &site_arg],
        &[],
    );
    let (status, headers, body) = http("GET", &format!("{}/app/", serve.url), &[], None);
    assert_eq!((status, body.as_str()), (200, "<h1>hi</h1>"));
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert!(header("content-security-policy").is_some_and(|c| c.contains("script-src 'self'")));
    for bad in [
        "/app/.env",
        "/app/../secret.txt",
        "/app/%2e%2e/secret.txt",
        "/app/nope.js",
    ] {
        let (status, _, body) = http("GET", &format!("{}{bad}", serve.url), &[], None);
        assert_eq!(status, 404, "{bad}: {body}");
    }
    drop(serve);
    let missing = tmp.path().join("nowhere");
    let out = kiln(
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--static",
            &missing.display().to_string(),
            "--scripts",
            ".",
        ],
        scripts.path(),
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--static"), "{}", stderr(&out));
}
