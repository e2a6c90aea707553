//! `/metrics` in Prometheus text format: runs by outcome, tool calls by tool and outcome, model
//! request latency, tokens, queue depth, active runs and reloads.

use kiln_agent::ToolCallRecord;
use kiln_providers::Usage;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the model latency histogram's buckets.
const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Counter families, with their help text, in the order they are printed.
const COUNTERS: [(&str, &str); 5] = [
    ("kiln_runs_started_total", "Agent runs started."),
    (
        "kiln_runs_finished_total",
        "Agent runs finished, by outcome (ok, error, cancelled, deadline).",
    ),
    (
        "kiln_tool_calls_total",
        "Tool calls, by tool and outcome (ok, error).",
    ),
    ("kiln_tokens_total", "Model tokens, by direction."),
    ("kiln_reloads_total", "Script reloads seen by the server."),
];

#[derive(Default)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Default)]
struct Inner {
    /// `family -> rendered labels -> value`.
    counters: BTreeMap<&'static str, BTreeMap<String, u64>>,
    latency: Histogram,
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Writes `{k="v",...}` into `out`, escaping the values as the text format asks.
fn write_labels(out: &mut String, pairs: &[(&str, &str)]) {
    out.clear();
    out.push('{');
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

/// Label sets one family may hold; later new ones are counted under `_other`.
const MAX_SERIES: usize = 500;

/// A label value as shown: a name (what tools, agents and outcomes are called) or `_invalid`,
/// so a model asking for a 20 KB tool name cannot make the page grow by it.
fn bounded(value: &str) -> &str {
    let name_like = !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if name_like { value } else { "_invalid" }
}

impl Metrics {
    fn add<const N: usize>(&self, family: &'static str, pairs: [(&str, &str); N], n: u64) {
        // Every model reply and tool call counts here: one buffer, and a new key only for a
        // new series.
        let mut key = String::with_capacity(64);
        let mut shown = pairs.map(|(k, v)| (k, bounded(v)));
        write_labels(&mut key, &shown);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let series = inner.counters.entry(family).or_default();
        if let Some(value) = series.get_mut(&key) {
            *value += n;
            return;
        }
        if series.len() >= MAX_SERIES {
            for slot in shown.iter_mut() {
                slot.1 = "_other";
            }
            write_labels(&mut key, &shown);
        }
        *series.entry(key).or_default() += n;
    }

    /// A run of `agent` started.
    pub fn run_started(&self, agent: &str) {
        self.add("kiln_runs_started_total", [("agent", agent)], 1);
    }

    /// A run of `agent` ended with `outcome`.
    pub fn run_finished(&self, agent: &str, outcome: &str) {
        self.add(
            "kiln_runs_finished_total",
            [("agent", agent), ("outcome", outcome)],
            1,
        );
    }

    /// Tool calls of one step.
    pub fn tool_calls(&self, calls: &[ToolCallRecord]) {
        for c in calls {
            let outcome = if c.is_error { "error" } else { "ok" };
            self.add(
                "kiln_tool_calls_total",
                [("tool", &c.name), ("outcome", outcome)],
                1,
            );
        }
    }

    /// A model reply arrived after `took`, reporting `usage`.
    pub fn model_reply(&self, took: Duration, usage: Usage) {
        self.add(
            "kiln_tokens_total",
            [("direction", "input")],
            usage.input_tokens,
        );
        self.add(
            "kiln_tokens_total",
            [("direction", "output")],
            usage.output_tokens,
        );
        let secs = took.as_secs_f64();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let h = &mut inner.latency;
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.buckets[i] += 1;
            }
        }
        h.sum += secs;
        h.count += 1;
    }

    /// The scripts were reloaded.
    pub fn reloaded(&self) {
        self.add("kiln_reloads_total", [], 1);
    }

    /// The text exposition, with the gauges read now.
    pub fn render(&self, active: usize, queued: usize) -> String {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for (family, help) in COUNTERS {
            let _ = writeln!(out, "# HELP {family} {help}\n# TYPE {family} counter");
            match inner.counters.get(family) {
                Some(series) => {
                    for (l, v) in series {
                        let l = if l == "{}" { "" } else { l };
                        let _ = writeln!(out, "{family}{l} {v}");
                    }
                }
                // An unlabelled family is present from the start, so rates work from zero.
                None if family == "kiln_reloads_total" => {
                    let _ = writeln!(out, "{family} 0");
                }
                None => {}
            }
        }
        let h = &inner.latency;
        let name = "kiln_model_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Model request latency, request sent to reply parsed.\n# TYPE {name} histogram"
        );
        for (bound, n) in LATENCY_BUCKETS.iter().zip(h.buckets) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", h.sum, h.count);
        for (gauge, help, v) in [
            ("kiln_runs_active", "Runs holding a run slot.", active),
            ("kiln_queue_depth", "Runs waiting for a run slot.", queued),
        ] {
            let _ = writeln!(
                out,
                "# HELP {gauge} {help}\n# TYPE {gauge} gauge\n{gauge} {v}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histogram_render_as_prometheus_text() {
        let m = Metrics::default();
        m.run_started("shop");
        m.run_finished("shop", "ok");
        m.model_reply(
            Duration::from_millis(20),
            Usage {
                reasoning_tokens: 0,
                input_tokens: 10,
                output_tokens: 3,
            },
        );
        let text = m.render(2, 1);
        for line in [
            "kiln_runs_started_total{agent=\"shop\"} 1",
            "kiln_runs_finished_total{agent=\"shop\",outcome=\"ok\"} 1",
            "kiln_tokens_total{direction=\"input\"} 10",
            "kiln_model_request_duration_seconds_bucket{le=\"0.01\"} 0",
            "kiln_model_request_duration_seconds_bucket{le=\"0.025\"} 1",
            "kiln_model_request_duration_seconds_count 1",
            "kiln_reloads_total 0",
            "kiln_runs_active 2",
            "kiln_queue_depth 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn labels_stay_bounded_whatever_names_a_model_sends() {
        let m = Metrics::default();
        let long = "x".repeat(20_000);
        m.run_started(&long);
        for i in 0..2 * MAX_SERIES {
            m.run_started(&format!("agent{i}"));
        }
        let page = m.render(0, 0);
        assert!(!page.contains(&long));
        assert!(page.contains("agent=\"_invalid\""), "{page}");
        assert!(page.contains("agent=\"_other\"} 501"), "{page}");
        assert!(page.len() < 100_000, "{} bytes", page.len());
    }
}
