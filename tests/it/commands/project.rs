//! `kiln.toml`: the real binary reading a real project file, found from a subfolder; `kiln
//! serve` started with only the file behaves as with the equivalent flags, a flag overrides the
//! file, an environment variable overrides it with a note, a misspelt key is an error at
//! file:line:col with the nearest key.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const TOKEN: &str = "t-project-0123456789";

/// A project: `tools/shop.rhai` (a tool, `lookup`, and an agent), `tokens.json`, and `kiln.toml`.
pub(crate) fn project(toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    std::fs::write(
        tools.join("shop.rhai"),
        r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{ sku: a.sku });
agent("shop").provider("openai").model("m").base_url("http://127.0.0.1:9/v1").tools(["lookup"]);"#,
    )
    .expect("write script");
    let tokens = json!([{"token": TOKEN, "actor": "ada"}]);
    std::fs::write(dir.path().join("tokens.json"), tokens.to_string()).expect("tokens");
    std::fs::write(dir.path().join("kiln.toml"), toml).expect("kiln.toml");
    dir
}

const SERVE_TOML: &str = r#"scripts = ["tools"]
db = "k.db"

[serve]
bind = "127.0.0.1:0"
tokens = "tokens.json"
max_body = 300
"#;

/// A running `kiln serve` (killed on drop).
struct Served {
    url: String,
    child: Child,
    /// Its stderr up to its line about tokens.
    said: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut cmd = Command::new(kiln_bin());
    cmd.arg("serve")
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("KILN_TOKENS")
        .env_remove("KILN_DB")
        .env_remove("KILN_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start kiln serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("serve prints its address");
    let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "serve said: {line}");
    // Its first stderr lines come before the address: what kiln said about its settings.
    let mut said = String::new();
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    while err.read_line(&mut said).is_ok_and(|n| n > 0) && !said.contains("kiln serve:") {}
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Served { url, child, said }
}

/// What a client sees: the agents listed with the token, the status without it, and the
/// status of a body larger than 300 bytes.
fn probe(s: &Served) -> (Value, u16, u16) {
    let auth = ("authorization", format!("Bearer {TOKEN}"));
    let auth = [(auth.0, auth.1.as_str())];
    let (status, _, body) = http("GET", &format!("{}/v1/models", s.url), &auth, None);
    assert_eq!(status, 200, "{body}");
    let models: Value = serde_json::from_str(&body).expect("json");
    let ids = json!(
        (models["data"].as_array().expect("data").iter())
            .map(|m| m["id"].clone())
            .collect::<Vec<_>>()
    );
    let (anonymous, _, _) = http("GET", &format!("{}/v1/models", s.url), &[], None);
    let big = json!({"model": "shop", "messages": [{"role": "user", "content": "x".repeat(400)}]});
    let url = format!("{}/v1/chat/completions", s.url);
    let (too_big, _, _) = http("POST", &url, &auth, Some(&big));
    (ids, anonymous, too_big)
}

#[test]
fn kiln_serve_with_only_kiln_toml_behaves_as_with_the_flags() {
    let dir = project(SERVE_TOML);
    let db = dir.path().join("k.db");
    let from_file = probe(&serve(dir.path(), &[], &[]));
    assert!(db.exists(), "the file's db is used");
    std::fs::remove_file(&db).expect("remove the db");
    let flags = [
        "--no-project",
        "--scripts",
        "tools",
        "--db",
        "k.db",
        "--bind",
        "127.0.0.1:0",
        "--tokens",
        "tokens.json",
        "--max-body",
        "300",
    ];
    let from_flags = probe(&serve(dir.path(), &flags, &[]));
    assert!(db.exists(), "--db is used");
    assert_eq!(from_file, from_flags);
    assert_eq!(from_file, (json!(["shop"]), 401, 413));
}

#[test]
fn a_flag_overrides_the_file() {
    let dir = project(SERVE_TOML);
    let (ids, anonymous, too_big) = probe(&serve(dir.path(), &["--max-body", "100000"], &[]));
    assert_eq!((ids, anonymous), (json!(["shop"]), 401));
    assert_ne!(too_big, 413, "--max-body overrides serve.max_body");
}

#[test]
fn an_environment_variable_overrides_the_file_and_says_so() {
    let dir = project("db = \"file.db\"\n");
    let env_db = dir.path().join("env.db");
    let out = Command::new(kiln_bin())
        .args(["sessions"])
        .current_dir(dir.path())
        .env("KILN_DB", &env_db)
        .env("NO_COLOR", "1")
        .output()
        .expect("run kiln");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env_db.exists(), "KILN_DB is used");
    assert!(!dir.path().join("file.db").exists(), "the file's db is not");
    assert!(
        stderr(&out).contains("kiln: KILN_DB overrides `db` of "),
        "{}",
        stderr(&out)
    );
    // A flag beats both, silently.
    let flag_db = dir.path().join("flag.db");
    let flag = flag_db.to_str().expect("utf-8");
    let out = Command::new(kiln_bin())
        .args(["sessions", "--db", flag])
        .current_dir(dir.path())
        .env("KILN_DB", &env_db)
        .output()
        .expect("run kiln");
    assert!(out.status.success() && flag_db.exists(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("overrides"), "{}", stderr(&out));
    // Without the variable, the file's db (relative to the file's folder).
    let out = kiln(&["sessions"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("file.db").exists());
}

#[test]
fn a_misspelt_key_is_an_error_at_its_line_and_column_with_the_nearest_key() {
    let dir = project("scripts = [\"tools\"]\n\n[serve]\n  max_rnus = 3\n");
    let out = kiln(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let file = dir.path().join("kiln.toml");
    let want = format!(
        "{}:4:3: unknown key `max_rnus` in [serve]; did you mean `max_runs`?",
        file.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    // A value of the wrong kind names its key and why.
    std::fs::write(&file, "[serve]\nrun_timeout = \"5 parsecs\"\n").expect("write");
    let out = kiln(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(":2:15: serve.run_timeout: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_project_is_found_from_a_subfolder_and_no_project_ignores_it() {
    let dir = project("scripts = [\"tools\"]\nstdlib = false\n");
    let deep = dir.path().join("a/b");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let out = kiln(&["tools"], &deep);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = (stdout(&out).lines().skip(1))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert_eq!(names, ["lookup"], "{}", stdout(&out));
    let out = kiln(&["check"], &deep);
    assert_eq!(
        stdout(&out).trim(),
        "ok: 1 tools, 1 agents",
        "{}",
        stderr(&out)
    );
    let out = kiln(&["--no-project", "tools"], &deep);
    assert!(!stdout(&out).contains("lookup"), "{}", stdout(&out));
}

#[test]
fn kiln_init_writes_a_commented_kiln_toml_that_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kiln(&["init", "."], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("kiln.toml")).expect("kiln.toml");
    assert_eq!(text, kiln::project::template());
    assert_eq!(
        kiln::project::Project::parse(&text, Path::new("kiln.toml")).expect("parses"),
        kiln::project::Settings::default()
    );
    // The project works with it: its test passes, found from a subfolder too.
    let out = kiln(&["test", "--timeout", "30s"], dir.path());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    std::fs::create_dir(dir.path().join("docs")).expect("mkdir");
    let out = kiln(&["check"], &dir.path().join("docs"));
    assert!(out.status.success(), "{}", stderr(&out));
    // An existing kiln.toml is kept.
    std::fs::write(dir.path().join("kiln.toml"), "stdlib = false\n").expect("write");
    let out = kiln(&["init", "."], dir.path());
    assert!(stdout(&out).contains("kept"), "{}", stdout(&out));
    let kept = std::fs::read_to_string(dir.path().join("kiln.toml")).expect("read");
    assert_eq!(kept, "stdlib = false\n");
}

#[test]
fn durations_on_the_command_line_take_a_unit() {
    let dir = project("");
    let s = serve(
        dir.path(),
        &[
            "--bind",
            "127.0.0.1:0",
            "--run-timeout",
            "2m",
            "--queue-timeout",
            "500ms",
        ],
        &[],
    );
    drop(s);
    let out = kiln(&["logs", "--since", "1500ms"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kiln(&["serve", "--run-timeout", "5parsecs"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown unit"), "{}", stderr(&out));
}

#[test]
fn providers_are_reached_where_the_file_says_below_their_environment_variables() {
    let mock = Mock::start(&json!({"turns": [{"text": "Hello from the project's provider."}]}));
    let toml = format!(
        "scripts = [\"agents\"]\nstdlib = false\n\n[providers.openai]\nbase_url = \"{}/v1\"\napi_key_env = \"PROJECT_OPENAI_KEY\"\n",
        mock.url
    );
    let dir = project(&toml);
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).expect("mkdir");
    std::fs::write(
        agents.join("helper.rhai"),
        r#"agent("helper").provider("openai").model("m").system("Help.");"#,
    )
    .expect("write");
    let out = ask_command(&["helper", "hi"], dir.path())
        .env_remove("OPENAI_API_KEY")
        .env("PROJECT_OPENAI_KEY", TEST_KEY)
        .output()
        .expect("run kiln ask");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello from the project's provider.");
    // The provider's variable comes before the file, and says so.
    let out = ask_command(&["helper", "hi", "--retries", "0"], dir.path())
        .env("PROJECT_OPENAI_KEY", TEST_KEY)
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .expect("run kiln ask");
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("kiln: OPENAI_BASE_URL overrides `providers.openai.base_url` of "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_transport_defaults_are_the_projects() {
    // kiln-http stands below the project file; its defaults must agree with the ones stated
    // in kiln::project::defaults (the flags', the file's and --help's).
    let http = kiln_http::HttpLimits::default();
    let d = (
        kiln::project::defaults::HEADER_TIMEOUT,
        kiln::project::defaults::BODY_TIMEOUT,
        kiln::project::defaults::MAX_CONNECTIONS,
    );
    assert_eq!(
        (http.header_timeout, http.body_timeout, http.max_connections),
        d
    );
}

#[test]
fn grants_and_approvals_come_from_the_file_and_needs_approval_is_asks_new_spelling() {
    let dir = project("scripts = [\"notes\"]\nstdlib = false\n");
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).expect("mkdir");
    std::fs::write(
        notes.join("n.rhai"),
        r#"tool("note").description("Keeps a note").requires("store").param("text", "string").handler(|a| "kept");"#,
    )
    .expect("write");
    let call = |extra: &[&str]| {
        let mut args = vec!["call", "note", r#"{"text": "x"}"#];
        args.extend_from_slice(extra);
        let out = kiln(&args, dir.path());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            v["success"].clone(),
            v["error"]["kind"].clone(),
            stderr(&out),
        )
    };
    let denied = (json!(false), json!("denied"));
    let ok = (json!(true), Value::Null);
    let (s, k, _) = call(&["--caps", "store", "--needs-approval", "store"]);
    assert_eq!((s, k), denied);
    let (s, k, err) = call(&["--caps", "store", "--ask", "store"]);
    assert_eq!((s, k), denied);
    assert!(
        err.contains("`--ask` is now spelt `--needs-approval`"),
        "{err}"
    );
    let (s, k, _) = call(&["--caps", "store", "--needs-approval", "store", "--yes"]);
    assert_eq!((s, k), ok);
    // The same grants from kiln.toml; a flag still overrides them.
    let toml = "scripts = [\"notes\"]\nstdlib = false\n[grants]\ncaps = [\"store\"]\nneeds_approval = [\"store\"]\n";
    std::fs::write(dir.path().join("kiln.toml"), toml).expect("write");
    let (s, k, _) = call(&[]);
    assert_eq!((s, k), denied);
    let (s, k, _) = call(&["--yes"]);
    assert_eq!((s, k), ok);
    let (s, k, _) = call(&["--caps", "env"]);
    assert_eq!((s, k), (json!(false), json!("capability")));
}

#[test]
fn kiln_tokens_overrides_the_files_tokens_and_says_so() {
    let dir = project(SERVE_TOML);
    let other = json!([{"token": "t-from-the-environment-0123", "actor": "bob"}]).to_string();
    let s = serve(dir.path(), &[], &[("KILN_TOKENS", &other)]);
    assert!(
        s.said
            .contains("kiln: KILN_TOKENS overrides `serve.tokens` of "),
        "{}",
        s.said
    );
    let models = format!("{}/v1/models", s.url);
    let bearer = |t: &str| format!("Bearer {t}");
    let (env, _, _) = http(
        "GET",
        &models,
        &[("authorization", &bearer("t-from-the-environment-0123"))],
        None,
    );
    let (file, _, _) = http("GET", &models, &[("authorization", &bearer(TOKEN))], None);
    assert_eq!((env, file), (200, 401));
}
