//! A full disk under `kiln serve`: the database's files are capped (`prlimit --fsize`, with
//! SIGXFSZ ignored so a write past the cap fails instead of killing the process). A run whose
//! step cannot be written fails; a run that cannot be logged is refused before it runs, saying
//! why; once there is room again the log catches up, and the log and the API agree on every
//! run: none stays `running`, none is missing.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const QUICK: &str = r#"
agent("quick").provider("script").planner(|m, t| #{ text: "hi" });
"#;

/// `kiln serve` whose files may grow to `cap` bytes, and its URL.
struct Capped {
    child: Child,
    url: String,
}

impl Capped {
    fn start(dir: &Path, db: &Path, cap: u64) -> Capped {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; exec prlimit --fsize={cap}:unlimited \"$0\" \"$@\""
            ))
            .arg(kiln_bin())
            .args(["serve", "--bind", "127.0.0.1:0", "--no-stdlib", "--scripts"])
            .arg(dir)
            .arg("--db")
            .arg(db)
            .current_dir(dir)
            .env_remove("KILN_TOKENS")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kiln serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("serve prints its address");
        let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "serve said: {line}");
        Capped { child, url }
    }

    /// Lifts the cap: the disk has room again.
    fn room(&self) {
        let pid = self.child.id().to_string();
        let out = Command::new("prlimit")
            .args(["--pid", &pid, "--fsize=unlimited"])
            .output()
            .expect("prlimit");
        assert!(out.status.success(), "{}", stderr(&out));
    }

    fn run(&self, prompt: &str) -> Value {
        let body = json!({"agent": "quick", "input": prompt});
        post(&format!("{}/v1/runs", self.url), &body, &[]).1
    }
}

impl Drop for Capped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The log's status for the API's.
fn logged_as(api: &str) -> &str {
    match api {
        "completed" => "ok",
        "failed" => "error",
        other => other,
    }
}

#[test]
fn after_a_full_disk_the_log_and_the_api_agree_and_a_run_that_cannot_be_logged_is_refused() {
    let s = Scripts::new(&[("q.rhai", QUICK)]);
    let db = s.path().join("k.db");
    let serve = Capped::start(s.path(), &db, 2 << 20);
    let prompt = "x".repeat(300_000);
    let mut runs = Vec::new();
    while runs.len() < 20 {
        let run = serve.run(&prompt);
        let failed = run["status"] == "failed";
        runs.push(run);
        if failed {
            break;
        }
    }
    let failed = runs.last().expect("a run");
    assert_eq!(failed["status"], "failed", "the cap was never reached");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("run log")),
        "{failed}"
    );
    // While the disk is full, a run is refused before its model is asked, saying why.
    let refused = serve.run(&prompt);
    assert_eq!(refused["status"], "failed", "{refused}");
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        why.contains("could not record the run's start"),
        "{refused}"
    );
    assert_eq!(
        refused["report"]["rounds"], 0,
        "the model was not asked: {refused}"
    );
    runs.push(refused);

    serve.room();
    runs.push(serve.run("hello"));
    let out = kiln(
        &["logs", "--json", "--no-stdlib", "--scripts", ".", "--db"]
            .iter()
            .copied()
            .chain([db.to_str().expect("utf-8 path")])
            .collect::<Vec<_>>(),
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let logged: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let logged = logged.as_array().expect("runs");
    assert_eq!(logged.len(), runs.len(), "every run logged");
    for run in &runs {
        let id = run["id"].as_str().expect("id");
        let (_, api) = get(&format!("{}/v1/runs/{id}", serve.url));
        let row = logged.iter().find(|r| r["id"] == id);
        let row = row.unwrap_or_else(|| panic!("{id} is not in the log"));
        let api = api["status"].as_str().unwrap_or_default();
        assert_eq!(row["status"], logged_as(api), "{id}: {}", row["error"]);
    }
}
