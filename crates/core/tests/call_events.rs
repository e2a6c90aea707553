//! A running tool's progress, events and log messages: bounded, coalesced, checked.

use kiln_core::context::call_events::*;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl CallObserver for Seen {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let line = format!("{progress}/{total:?} {message:?}");
        self.0.lock().expect("seen").push(line);
    }
    fn emit(&self, name: &str, value: serde_json::Value) {
        self.0.lock().expect("seen").push(format!("{name}={value}"));
    }
    fn log(&self, level: LogLevel, message: String) {
        let line = format!("{}: {message}", level.as_str());
        self.0.lock().expect("seen").push(line);
    }
}

#[test]
fn progress_must_increase_and_be_a_count() {
    let seen = Arc::new(Seen::default());
    let events = CallEvents::new(seen.clone());
    progress(Some(&events), 1.0, Some(10.0), Some("one")).expect("ok");
    progress(Some(&events), 1.0, Some(10.0), None).expect("not increasing: dropped");
    progress(Some(&events), 2.0, None, None).expect("ok");
    assert!(progress(Some(&events), f64::NAN, None, None).is_err());
    assert!(progress(Some(&events), -1.0, None, None).is_err());
    assert!(progress(Some(&events), 3.0, Some(0.0), None).is_err());
    let seen = seen.0.lock().expect("seen").clone();
    assert_eq!(seen, ["1/Some(10.0) Some(\"one\")", "2/None None"]);
}

#[test]
fn a_flood_is_cut_off_and_long_messages_are_cut() {
    let seen = Arc::new(Seen::default());
    let events = CallEvents::new(seen.clone());
    for i in 0..1000 {
        log(Some(&events), LogLevel::Debug, &format!("line {i}"));
    }
    log(Some(&events), LogLevel::Error, &"x".repeat(5000));
    let seen = seen.0.lock().expect("seen").clone();
    assert!(
        (BURST as usize..BURST as usize + 4).contains(&seen.len()),
        "{} passed",
        seen.len()
    );
    assert_eq!(seen[0], "debug: line 0");
    let seen = Arc::new(Seen::default());
    let events = CallEvents::new(seen.clone());
    log(
        Some(&events),
        LogLevel::Info,
        &"é".repeat(MAX_MESSAGE_CHARS + 1),
    );
    let long = seen.0.lock().expect("seen")[0].clone();
    assert!(long.starts_with(&format!("info: {}", "é".repeat(MAX_MESSAGE_CHARS))));
    assert!(long.ends_with("… (2 more bytes not shown)"), "{long}");
}

#[test]
fn a_tight_loop_of_events_is_bounded_and_its_last_values_are_not_lost() {
    let seen = Arc::new(Seen::default());
    let events = CallEvents::new(seen.clone());
    for i in 0..100_000 {
        emit(Some(&events), "rows", serde_json::json!(i)).expect("ok");
        progress(Some(&events), f64::from(i + 1), Some(100_000.0), None).expect("ok");
    }
    drop(events);
    let seen = seen.0.lock().expect("seen").clone();
    assert!(seen.len() < 200, "{} passed", seen.len());
    assert_eq!(seen[0], "rows=0");
    // The latest of each waited and came when the call ended.
    assert!(seen.contains(&"rows=99999".to_string()), "{seen:?}");
    assert!(seen.contains(&"100000/Some(100000.0) None".to_string()));
}

#[test]
fn an_event_needs_a_plain_name_and_a_small_value() {
    let seen = Arc::new(Seen::default());
    let events = CallEvents::new(seen.clone());
    assert!(emit(Some(&events), "", serde_json::json!(1)).is_err());
    assert!(emit(Some(&events), "a b", serde_json::json!(1)).is_err());
    // Just within when written plainly, though not surely within by the quick count.
    let near = serde_json::json!("x".repeat(MAX_EMIT_BYTES - 2));
    emit(Some(&events), "near", near).expect("exactly the bound");
    let escaped = serde_json::json!("\"".repeat(MAX_EMIT_BYTES / 2));
    assert!(
        emit(Some(&events), "quotes", escaped).is_err(),
        "escapes count"
    );
    let big = serde_json::json!("x".repeat(MAX_EMIT_BYTES));
    let e = emit(Some(&events), "big", big).expect_err("too big");
    assert!(e.contains("over the 16384 allowed"), "{e}");
    emit(Some(&events), "step:fetch", serde_json::json!({"n": 1})).expect("ok");
    let big = serde_json::json!("x".repeat(MAX_EMIT_BYTES));
    assert!(emit(None, "nobody", big).is_err(), "the same at every door");
    let seen = seen.0.lock().expect("seen");
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1], "step:fetch={\"n\":1}");
}

#[test]
fn levels_parse_by_mcp_name() {
    assert_eq!(LogLevel::parse("warn"), Some(LogLevel::Warning));
    assert_eq!(LogLevel::parse("emergency"), Some(LogLevel::Emergency));
    assert_eq!(LogLevel::parse("loud"), None);
    assert!(LogLevel::Debug < LogLevel::Error);
}
