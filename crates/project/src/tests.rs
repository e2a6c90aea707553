use super::*;
use std::time::Duration;

fn parse(text: &str) -> Result<Settings, ProjectError> {
    Project::parse(text, Path::new("kiln.toml"))
}

/// The template with every `# key = value` line uncommented.
fn uncommented() -> String {
    template()
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest)
                if rest.split_once(" = ").is_some_and(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                }) =>
            {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The keys a table accepts, as its unknown-key error lists them.
fn keys_of(table: &str) -> Vec<String> {
    let text = match table {
        "" => "zz_unknown = 1\n".to_string(),
        t => format!("[{t}]\nzz_unknown = 1\n"),
    };
    match parse(&text) {
        Err(ProjectError::UnknownKey { hint, .. }) => hint
            .trim_start_matches(" (valid keys: ")
            .trim_end_matches(')')
            .split(", ")
            .map(str::to_string)
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_template_as_written_changes_nothing() {
    assert_eq!(parse(&template()).expect("parses"), Settings::default());
}

#[test]
fn the_template_uncommented_states_the_defaults() {
    let s = parse(&uncommented()).expect("uncommented template parses");
    assert_eq!(s.scripts, Some(vec![PathBuf::from(defaults::SCRIPTS_DIR)]));
    assert_eq!(s.workspace, Some(PathBuf::from(defaults::WORKSPACE)));
    assert_eq!(s.stdlib, Some(true));
    assert_eq!(s.serve.bind, defaults::SERVE_BIND.parse().ok());
    assert_eq!(s.serve.max_runs, Some(defaults::MAX_RUNS));
    assert_eq!(s.serve.queue, Some(defaults::QUEUE));
    assert_eq!(s.serve.retry_after, Some(defaults::RETRY_AFTER));
    assert_eq!(s.serve.max_body, Some(defaults::MAX_BODY));
    assert_eq!(s.serve.run_timeout, Some(Seconds(defaults::RUN_TIMEOUT)));
    assert_eq!(
        s.serve.approval_timeout,
        Some(Seconds(defaults::APPROVAL_TIMEOUT))
    );
    assert_eq!(
        s.serve.request_timeout,
        Some(Seconds(defaults::REQUEST_TIMEOUT))
    );
    assert_eq!(s.serve.grace, Some(Seconds(defaults::GRACE)));
    assert_eq!(
        s.serve.queue_timeout,
        Some(Seconds(defaults::QUEUE_TIMEOUT))
    );
    assert_eq!(
        s.serve.header_timeout,
        Some(Seconds(defaults::HEADER_TIMEOUT))
    );
    assert_eq!(s.serve.body_timeout, Some(Seconds(defaults::BODY_TIMEOUT)));
    assert_eq!(s.serve.max_connections, Some(defaults::MAX_CONNECTIONS));
    assert_eq!(s.serve.log_format, Some(LogFormat::Text));
    assert_eq!(s.mcp.max_sessions, Some(defaults::MAX_SESSIONS));
    assert_eq!(s.mcp.session_idle, Some(Seconds(defaults::SESSION_IDLE)));
    assert_eq!(s.mcp.agents, Some(false));
    assert_eq!(s.grants.caps, Some(vec![]));
    assert_eq!(s.network.proxy, Some(false));
}

#[test]
fn the_template_documents_every_key() {
    let text = template();
    for table in [
        "",
        "grants",
        "network",
        "serve",
        "mcp",
        "programs",
        "providers.openai",
    ] {
        for key in keys_of(table) {
            assert!(
                text.contains(&format!("# {key} = "))
                    || text.contains(&format!("# e.g. {key} = "))
                    || text.contains(&format!("[{key}")),
                "kiln.toml template lacks `{key}` of [{table}]"
            );
        }
    }
}

#[test]
fn a_misspelt_key_names_its_place_and_the_nearest_key() {
    let e = parse("scripts = [\"s\"]\n\n[serve]\nmax_rusn = 3\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "kiln.toml:4:1: unknown key `max_rusn` in [serve]; did you mean `max_runs`?"
    );
    let e = parse("scrpits = [\"s\"]\n").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "kiln.toml:1:1: unknown key `scrpits` in the top level; did you mean `scripts`?"
        ),
        "{e}"
    );
}

#[test]
fn a_bad_value_names_its_key_and_why() {
    let e = parse("[serve]\nrun_timeout = \"5 parsecs\"\n").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("kiln.toml:2:15: serve.run_timeout: "),
        "{text}"
    );
    assert!(text.contains("unit"), "{text}");
    let e = parse("[serve]\nmax_runs = -1\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("kiln.toml:2:12: serve.max_runs: "),
        "{e}"
    );
}

#[test]
fn durations_take_a_unit_or_are_seconds() {
    let s = parse("[serve]\nrun_timeout = 5\ngrace = \"500ms\"\n").expect("parses");
    assert_eq!(s.serve.run_timeout, Some(Seconds(Duration::from_secs(5))));
    assert_eq!(s.serve.grace, Some(Seconds(Duration::from_millis(500))));
}

#[test]
fn found_from_a_subfolder_with_paths_relative_to_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("kiln.toml");
    std::fs::write(
        &file,
        "scripts = [\"tools\"]\n[serve]\ntokens = \"t.json\"\n",
    )
    .expect("write");
    let deep = dir.path().join("a/b");
    std::fs::create_dir_all(&deep).expect("mkdir");
    assert_eq!(Project::discover(&deep), Some(file.clone()));
    let p = Project::load(&file).expect("loads");
    assert_eq!(p.scripts(), vec![dir.path().join("tools")]);
    assert_eq!(p.settings.serve.tokens, Some(dir.path().join("t.json")));
    assert_eq!(p.workspace(), dir.path());
}

#[test]
fn an_unknown_key_on_a_header_or_after_a_dotted_key_names_its_table() {
    let e = parse("[providers.opneai]\nbase_url = \"x\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "kiln.toml:1:12: unknown key `opneai` in [providers]; did you mean `openai`?"
    );
    let e = parse("serve.max_rnus = 3\n").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "kiln.toml:1:7: unknown key `max_rnus` in [serve]; did you mean `max_runs`?"
        ),
        "{e}"
    );
    let e = parse("serve.max_runs = \"three\"\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("kiln.toml:1:18: serve.max_runs: "),
        "{e}"
    );
    let e = parse("[servre]\n").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "kiln.toml:1:2: unknown key `servre` in the top level; did you mean `serve`?"
        ),
        "{e}"
    );
}

#[test]
fn a_bad_capability_or_resolve_entry_is_an_error_at_its_place() {
    let e = parse("[grants]\ncaps = [\"fs.read\", \"fs read\"]\n").unwrap_err();
    assert!(
        e.to_string().starts_with("kiln.toml:2:8: grants.caps: "),
        "{e}"
    );
    let e = parse("[grants]\nneeds_approval = [\"net:\"]\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("kiln.toml:2:18: grants.needs_approval: "),
        "{e}"
    );
    let e = parse("[network]\nresolve = [\"api.local:1.2.3.4\", \"bad\"]\n").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("kiln.toml:2:11: network.resolve: "),
        "{text}"
    );
    assert!(text.contains("`bad`: expected NAME:ADDR"), "{text}");
    let ok = parse(
        "[grants]\ncaps = [\"fs.read,env\", \"net:api.example.com\"]\n[network]\nresolve = [\"api.local:[::1]\"]\n[providers.bedrock]\nbase_url = \"http://127.0.0.1:1\"\n",
    );
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn a_database_url_stays_a_url_and_its_password_is_refused_at_its_place() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("kiln.toml");
    std::fs::write(&file, "db = \"postgres://kiln@db.internal/kiln\"\n").expect("write");
    let project = crate::Project::load(&file).expect("load");
    assert_eq!(
        project.settings.db.as_deref(),
        Some(std::path::Path::new("postgres://kiln@db.internal/kiln"))
    );
    let err = parse("# shared\ndb = \"postgres://kiln:hunter2@db.internal/kiln\"\n")
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains(":2:7: db: a password does not go in the file"),
        "{err}"
    );
    assert!(err.contains("KILN_DB_PASSWORD"), "{err}");
}
