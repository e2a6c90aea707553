//! Hot reload with real files in a temp folder while the host runs.

use crate::common::*;
use kiln::tool::ReloadReport;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    // A safety net only: the loop ends as soon as the condition holds.
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

struct Live {
    scripts: Scripts,
    host: Arc<kiln::Host>,
    reports: Arc<Mutex<Vec<ReloadReport>>>,
    /// Drains the watch handle's reports into `reports`; dropping it stops watching.
    _watching: tokio::runtime::Runtime,
}

impl Live {
    fn start(files: &[(&str, &str)]) -> Live {
        let scripts = Scripts::new(files);
        let host = scripts.host();
        let reports = Arc::new(Mutex::new(Vec::new()));
        let r = reports.clone();
        let mut watch = host.watch().expect("watch");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("runtime");
        runtime.spawn(async move {
            while let Some(rep) = futures_util::StreamExt::next(&mut watch).await {
                r.lock().expect("lock").push(rep);
            }
        });
        Live {
            scripts,
            host,
            reports,
            _watching: runtime,
        }
    }

    fn write(&self, name: &str, src: &str) {
        std::fs::write(self.scripts.path().join(name), src).expect("write");
    }

    fn answer(&self, tool: &str) -> Option<serde_json::Value> {
        let outcome = self
            .host
            .call_blocking(tool, json!({}), Default::default())
            .ok()?;
        outcome.result.ok()
    }

    fn wait_answer(&self, tool: &str, want: serde_json::Value) {
        wait_for(&format!("{tool} -> {want}"), || {
            self.answer(tool) == Some(want.clone())
        });
    }

    fn last_report(&self) -> String {
        self.reports
            .lock()
            .expect("lock")
            .last()
            .map(|r| r.to_string())
            .unwrap_or_default()
    }
}

#[test]
fn edits_additions_deletions_breakage_and_fixes_are_picked_up() {
    let live = Live::start(&[("a.rhai", "tool(\"greet\").handler(|a| \"v1\");")]);
    assert_eq!(live.answer("greet"), Some(json!("v1")));

    live.write("a.rhai", "tool(\"greet\").handler(|a| \"v2\");");
    live.wait_answer("greet", json!("v2"));
    wait_for("report", || {
        live.last_report().contains("a.rhai: +0 ~1 -0 tools")
    });

    live.write("b.rhai", "tool(\"extra\").handler(|a| 42);");
    live.wait_answer("extra", json!(42));
    wait_for("report", || {
        live.last_report().contains("b.rhai: +1 ~0 -0 tools")
    });

    live.write(
        "a.rhai",
        "tool(\"greet\").handler(|a| \"v3\");\n\nlet x = ;",
    );
    wait_for("error report", || live.last_report().starts_with("error: "));
    let report = live.last_report();
    assert!(
        report.contains("a.rhai:3:9:") && report.contains("the last good version stays live"),
        "{report}"
    );
    assert_eq!(
        live.answer("greet"),
        Some(json!("v2")),
        "old version keeps answering"
    );
    assert!(
        live.host.registry().errors.iter().any(|e| e.loc.line == 3),
        "the error is listed while broken"
    );

    live.write("a.rhai", "tool(\"greet\").handler(|a| \"v4\");");
    live.wait_answer("greet", json!("v4"));
    assert!(live.host.registry().errors.is_empty(), "fixed");

    std::fs::remove_file(live.scripts.path().join("b.rhai")).expect("rm");
    wait_for("extra removed", || {
        live.host.registry().find("extra").is_none()
    });
    wait_for("report", || {
        live.last_report().starts_with("removed ") && live.last_report().contains("-1 tools")
    });
}

#[test]
fn a_duplicate_across_files_keeps_the_old_state() {
    let live = Live::start(&[
        ("a.rhai", "tool(\"one\").handler(|a| 1);"),
        ("b.rhai", "tool(\"two\").handler(|a| 2);"),
    ]);
    live.write(
        "b.rhai",
        "tool(\"two\").handler(|a| 22);\ntool(\"one\").handler(|a| 11);",
    );
    wait_for("error", || {
        live.last_report().contains("duplicate tool \"one\"")
    });
    assert_eq!(live.answer("one"), Some(json!(1)));
    assert_eq!(
        live.answer("two"),
        Some(json!(2)),
        "b keeps its old version"
    );
}

#[test]
fn rename_saves_like_an_editor_are_seen() {
    let live = Live::start(&[("a.rhai", "tool(\"t\").handler(|a| \"old\");")]);
    let tmp = live.scripts.path().join(".a.rhai.tmp");
    std::fs::write(&tmp, "tool(\"t\").handler(|a| \"renamed\");").expect("write tmp");
    std::fs::rename(&tmp, live.scripts.path().join("a.rhai")).expect("rename");
    live.wait_answer("t", json!("renamed"));
}

#[test]
fn a_running_call_finishes_on_its_version_and_rapid_rewrites_never_fail_a_call() {
    let live = Live::start(&[
        (
            "slow.rhai",
            "tool(\"slow\").handler(|a| { sleep(0.3); \"old\" });",
        ),
        ("hot.rhai", "tool(\"hot\").handler(|a| 0);"),
    ]);
    let host = live.host.clone();
    let running = std::thread::spawn(move || {
        host.call_blocking("slow", json!({}), Default::default())
            .expect("slow")
            .result
    });
    std::thread::sleep(Duration::from_millis(50));
    live.write("slow.rhai", "tool(\"slow\").handler(|a| \"new\");");
    assert_eq!(
        running.join().expect("thread").ok(),
        Some(json!("old")),
        "the call finished on the version it started with"
    );
    live.wait_answer("slow", json!("new"));

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let host = live.host.clone();
            let stop = stop.clone();
            let reports = live.reports.clone();
            std::thread::spawn(move || {
                let mut calls = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(r) = host.call_blocking("hot", json!({}), Default::default()) else {
                        let reg = host.registry();
                        panic!(
                            "hot missing; tools {:?} errors {:?} reports {:?}",
                            reg.tool_names(),
                            reg.errors,
                            reports
                                .lock()
                                .expect("l")
                                .iter()
                                .rev()
                                .take(3)
                                .map(|r| format!("{r} deferred={}", r.deferred))
                                .collect::<Vec<_>>()
                        );
                    };
                    assert!(r.is_ok(), "call failed: {:?}", r.to_json(true));
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    for i in 1..=1000 {
        live.write("hot.rhai", &format!("tool(\"hot\").handler(|a| {i});"));
    }
    live.wait_answer("hot", json!(1000));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let calls: usize = callers
        .into_iter()
        .map(|c| c.join().expect("no failed call"))
        .sum();
    assert!(calls > 0);
}

#[test]
fn kiln_watch_prints_one_line_per_reload() {
    use std::io::BufRead;
    let s = Scripts::new(&[("w.rhai", "tool(\"w\").handler(|a| 1);")]);
    let mut child = std::process::Command::new(kiln_bin())
        .args(["watch", "--scripts", "."])
        .current_dir(s.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.starts_with("watching ."), "{first}");
    std::fs::write(
        s.path().join("w.rhai"),
        "tool(\"w\").handler(|a| 2);\ntool(\"w2\").handler(|a| 2);",
    )
    .expect("write");
    let line = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        line.starts_with("reloaded ./w.rhai: +1 ~1 -0 tools ("),
        "{line}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_file_emptied_on_purpose_loses_its_tools_once_it_stays_empty() {
    let live = Live::start(&[("e.rhai", "tool(\"gone_soon\").handler(|a| 1);")]);
    live.write("e.rhai", "");
    // The registry swap comes before its report line: wait for both.
    wait_for("tools dropped and reported", || {
        live.host.registry().find("gone_soon").is_none() && live.last_report().contains("-1 tools")
    });
}

#[test]
fn an_edited_module_reloads_every_file_that_imports_it_and_says_which() {
    let live = Live::start(&[
        ("util.rhai", "fn version() { \"v1\" }"),
        (
            "helper.rhai",
            "import \"util\" as u;\nfn greeting() { \"hello \" + u::version() }",
        ),
        // Imported when the handler runs: the module cache must not keep the old helper.
        (
            "main.rhai",
            "tool(\"hello\").handler(|a| { import \"helper\" as h; h::greeting() });",
        ),
        // Imported at load time: the tool's very name comes from the module.
        (
            "named.rhai",
            "import \"util\" as u;\ntool(\"named_\" + u::version()).handler(|a| 1);",
        ),
        ("other.rhai", "tool(\"other\").handler(|a| 0);"),
    ]);
    assert_eq!(live.answer("hello"), Some(json!("hello v1")));
    assert!(live.host.registry().find("named_v1").is_some());

    live.write("util.rhai", "fn version() { \"v2\" }");
    live.wait_answer("hello", json!("hello v2"));
    wait_for("the load-time importer reloaded", || {
        let reg = live.host.registry();
        reg.find("named_v2").is_some() && reg.find("named_v1").is_none()
    });
    let dir = live.scripts.path().display().to_string();
    let lines = || -> Vec<String> {
        live.reports
            .lock()
            .expect("lock")
            .iter()
            .map(|r| r.to_string().replace(&dir, "DIR"))
            .collect()
    };
    wait_for("a report for each importer", || lines().len() >= 4);
    let lines = lines();
    let find = |prefix: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {lines:#?}"))
            .clone()
    };
    assert!(
        find("reloaded DIR/util.rhai:").contains("+0 ~0 -0 tools"),
        "{lines:#?}"
    );
    find("reloaded DIR/helper.rhai (imports DIR/util.rhai): ");
    find("reloaded DIR/named.rhai (imports DIR/util.rhai): +1 ~0 -1 tools");
    find("reloaded DIR/main.rhai (imports DIR/helper.rhai, which imports DIR/util.rhai): ");
    assert!(
        !lines.iter().any(|l| l.contains("other.rhai")),
        "a file that imports nothing is left alone: {lines:#?}"
    );

    // A module that breaks: its importers say why they failed and keep their last good version.
    live.write("util.rhai", "fn version() { ");
    wait_for("the importer's error", || {
        live.reports.lock().expect("lock").iter().any(|r| {
            !r.ok() && r.path.ends_with("named.rhai") && r.to_string().contains("(imports ")
        })
    });
    assert!(live.host.registry().find("named_v2").is_some());
}

#[test]
fn kiln_watch_names_the_files_reloaded_because_of_a_module() {
    use std::io::BufRead;
    let s = Scripts::new(&[
        ("lib.rhai", "fn n() { 1 }"),
        (
            "uses.rhai",
            "tool(\"uses\").handler(|a| { import \"lib\" as l; l::n() });",
        ),
    ]);
    let mut child = std::process::Command::new(kiln_bin())
        .args(["watch", "--scripts", "."])
        .current_dir(s.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    let first = next();
    assert!(first.starts_with("watching ."), "{first}");
    std::fs::write(s.path().join("lib.rhai"), "fn n() { 2 }").expect("write");
    let (changed, importer) = (next(), next());
    let _ = child.kill();
    let _ = child.wait();
    assert!(changed.starts_with("reloaded ./lib.rhai: "), "{changed}");
    assert!(
        importer.starts_with("reloaded ./uses.rhai (imports ./lib.rhai): +0 ~1 -0 tools ("),
        "{importer:?}"
    );
}

#[test]
fn creating_a_missing_module_reloads_the_file_waiting_for_it() {
    let live = Live::start(&[(
        "early.rhai",
        "import \"later\" as l;\ntool(\"early_\" + l::suffix()).handler(|a| 1);",
    )]);
    assert!(
        !live.host.registry().errors.is_empty(),
        "the import fails at first"
    );
    live.write("later.rhai", "fn suffix() { \"bird\" }");
    live.wait_answer("early_bird", json!(1));
    assert!(live.host.registry().errors.is_empty());
    wait_for("the reason", || {
        live.last_report().contains("early.rhai (imports ")
    });
}
