//! The loopback execution counter of the durable-run tests: each tool execution reports
//! there, and a test can hold one step until it releases it (the rendezvous for a kill).

use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for what a run does (a step, a worker, Restate).
pub const WAIT: Duration = Duration::from_secs(60);

/// Counts tool executions (`POST /count/STEP` with the call's idempotency key) and can hold
/// the first execution of one step until released: the rendezvous for the kill.
#[derive(Default)]
pub struct CounterState {
    /// `(step, idempotency key, arrival)` in order.
    pub hits: Vec<(String, String, Instant)>,
    hold: Option<String>,
    pub holding: bool,
    /// Holds begun and releases made: a held execution waits for its own release (so a step
    /// may be held again before the last one is let go).
    held: u64,
    releases: u64,
    /// Whether the held execution is answered once released (else its worker is dead).
    answer: bool,
}

#[derive(Clone, Default)]
pub struct Counter(Arc<(Mutex<CounterState>, Condvar)>);

impl Counter {
    pub fn start(&self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind counter");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let me = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let me = me.clone();
                std::thread::spawn(move || me.serve(stream));
            }
        });
        url
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0u8; len];
        let _ = reader.read_exact(&mut body);
        let step = head
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.strip_prefix("/count/"))
            .unwrap_or("?")
            .to_string();
        let key = serde_json::from_slice::<Value>(&body).unwrap_or_default()["key"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let (lock, cv) = &*self.0;
        let mut s = lock.lock().expect("counter");
        s.hits.push((step.clone(), key, Instant::now()));
        if s.hold.as_deref() == Some(step.as_str()) {
            s.hold = None;
            s.holding = true;
            s.held += 1;
            let (mine, answer) = (s.held, s.answer);
            cv.notify_all();
            let held = cv
                .wait_timeout_while(s, WAIT, |s| s.releases < mine)
                .expect("counter");
            if !answer {
                // The worker that sent this is dead by now: nobody reads the answer.
                return;
            }
            s = held.0;
        }
        cv.notify_all();
        drop(s);
        let mut stream = stream;
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
        );
    }

    pub fn hold(&self, step: &str) {
        self.hold_with(step, false);
    }

    /// Holds the next execution of `step` and answers it once released (its worker lives on).
    pub fn hold_answering(&self, step: &str) {
        self.hold_with(step, true);
    }

    fn hold_with(&self, step: &str, answer: bool) {
        let mut s = self.0.0.lock().expect("counter");
        s.hold = Some(step.to_string());
        s.holding = false;
        s.answer = answer;
    }

    pub fn wait_until(&self, what: &str, f: impl Fn(&CounterState) -> bool) {
        let (lock, cv) = &*self.0;
        let s = lock.lock().expect("counter");
        let (_s, timeout) = cv.wait_timeout_while(s, WAIT, |s| !f(s)).expect("counter");
        assert!(!timeout.timed_out(), "timed out waiting for {what}");
    }

    pub fn release(&self) {
        let (lock, cv) = &*self.0;
        lock.lock().expect("counter").releases += 1;
        cv.notify_all();
    }

    /// Executions per step (steps named with `prefix`), and each step's idempotency keys.
    pub fn counts(&self, prefix: &str) -> HashMap<String, Vec<String>> {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for (step, key, _) in &self.0.0.lock().expect("counter").hits {
            if step.starts_with(prefix) {
                out.entry(step.clone()).or_default().push(key.clone());
            }
        }
        out
    }

    pub fn arrivals(&self, step: &str) -> Vec<Instant> {
        let s = self.0.0.lock().expect("counter");
        s.hits.iter().filter(|h| h.0 == step).map(|h| h.2).collect()
    }
}
