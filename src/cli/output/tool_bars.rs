//! A terminal's view of running tools: a progress bar on stderr for each call that reports
//! progress or emits events (`kiln ask`, `kiln call`), gone when the call ends. Nothing is
//! drawn when stderr is not a terminal (a pipe, a file, CI), so scripts reading stderr see
//! only the usual lines.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use kiln::{CallObserver, LogLevel, ToolNote};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

/// Longest text of an emitted event shown beside its bar.
const MAX_SHOWN: usize = 60;

/// The bars of the calls running now, by call id.
pub struct ToolBars {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl ToolBars {
    /// Bars on stderr, or `None` when stderr is not a terminal.
    pub fn on_terminal() -> Option<Arc<Self>> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Arc::new(ToolBars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bars: Mutex::new(HashMap::new()),
        }))
    }

    /// Shows what call `id` (of `tool`) said.
    pub fn note(&self, id: &str, tool: &str, note: &ToolNote) {
        let Ok(mut bars) = self.bars.lock() else {
            return;
        };
        let bar = bars.entry(id.to_string()).or_insert_with(|| {
            // Named before it is added: the first frame is drawn at once.
            let bar = ProgressBar::new_spinner()
                .with_style(spinner_style())
                .with_prefix(tool.to_string());
            self.multi.add(bar)
        });
        match note {
            ToolNote::Progress {
                done,
                total,
                message,
            } => {
                if let Some(total) = total
                    && bar.length() != Some(*total as u64)
                {
                    bar.set_style(bar_style());
                    bar.set_length(*total as u64);
                }
                bar.set_position(*done as u64);
                if let Some(m) = message {
                    bar.set_message(cut(m));
                }
            }
            ToolNote::Emit { name, value } => bar.set_message(cut(&format!("{name}: {value}"))),
        }
    }

    /// Call `id` ended: its bar goes.
    pub fn finish(&self, id: &str) {
        if let Some(bar) = self.bars.lock().ok().and_then(|mut b| b.remove(id)) {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }
}

/// A single call's bars (`kiln call`): the call is `call`.
pub struct OneCall {
    /// The bars.
    pub bars: Arc<ToolBars>,
    /// The tool called.
    pub tool: String,
}

impl CallObserver for OneCall {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        let note = ToolNote::Progress {
            done,
            total,
            message,
        };
        self.bars.note("call", &self.tool, &note);
    }

    fn log(&self, _level: LogLevel, _message: String) {
        // Tracing prints the tool's log lines already.
    }

    fn emit(&self, name: &str, value: serde_json::Value) {
        let note = ToolNote::Emit {
            name: name.to_string(),
            value,
        };
        self.bars.note("call", &self.tool, &note);
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix:.bold} {pos} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
