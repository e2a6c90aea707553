//! What a tool tells its run while it runs (`progress(...)`, `emit(...)`): each note goes to
//! the run's observer as [`Event::ToolNote`], to the tool call this run is nested in (a nested
//! agent's notes reach the outer door), to tracing as an event of the call's span, and is kept,
//! bounded, for the call's record in the run log.

use crate::event::{Event, Observer};
use kiln_core::context::call_events::{
    self, Answer, AskError, CallEvents, CallObserver, ClientAsk, LogLevel, ToolNote,
};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Notes the record of one call keeps: the first ones, the latest in the last place.
pub const MAX_KEPT_NOTES: usize = 64;

/// The observer of one tool call of a run.
pub(crate) struct CallNotes {
    round: u32,
    id: String,
    tool: String,
    observer: Option<Observer>,
    outer: Option<Arc<CallEvents>>,
    kept: Mutex<Vec<ToolNote>>,
}

impl CallNotes {
    /// The observer of call `id` (of `tool`, in `round`): telling `observer` and `outer`.
    pub(crate) fn new(
        round: u32,
        id: &str,
        tool: &str,
        observer: Option<Observer>,
        outer: Option<Arc<CallEvents>>,
    ) -> Self {
        CallNotes {
            round,
            id: id.to_string(),
            tool: tool.to_string(),
            observer,
            outer,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The notes kept for the call's record.
    pub(crate) fn kept(&self) -> Vec<ToolNote> {
        self.kept.lock().map(|k| k.clone()).unwrap_or_default()
    }

    fn heard(&self, note: ToolNote) {
        match &note {
            ToolNote::Progress { done, total, .. } => {
                tracing::info!(target: "kiln::tool", call = %self.id, done, total, "progress")
            }
            ToolNote::Emit { name, .. } => {
                tracing::info!(target: "kiln::tool", call = %self.id, event = %name, "emit")
            }
        }
        if let Some(o) = &self.observer {
            o(&Event::ToolNote {
                round: self.round,
                id: self.id.clone(),
                name: self.tool.clone(),
                note: Box::new(note.clone()),
            });
        }
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() < MAX_KEPT_NOTES {
                kept.push(note.clone());
            } else if let Some(last) = kept.last_mut() {
                *last = note.clone();
            }
        }
        call_events::note(self.outer.as_deref(), note);
    }
}

impl CallObserver for CallNotes {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        self.heard(ToolNote::Progress {
            done,
            total,
            message,
        });
    }

    fn log(&self, _level: LogLevel, _message: String) {
        // Logged to tracing already; runs keep no tool log lines.
    }

    fn emit(&self, name: &str, value: Value) {
        self.heard(ToolNote::Emit {
            name: name.to_string(),
            value,
        });
    }

    /// The run's tools ask whoever the run answers to: the tool call it is nested in, or the
    /// door that started it (a form for its person, as input-required on an A2A task).
    fn ask(
        &self,
        asks: &[(String, ClientAsk)],
        lenient: bool,
        timeout: Duration,
    ) -> Result<Vec<Answer>, AskError> {
        let Some(outer) = &self.outer else {
            return Err(AskError::Refused(
                "this run's door cannot ask the person behind it".into(),
            ));
        };
        let keyed = asks.iter().map(|(k, a)| (Some(k.clone()), a.clone()));
        outer.ask(keyed.collect(), lenient, timeout)
    }

    fn lend(&self, request: &str, params: Value) -> Option<Result<Value, String>> {
        self.outer.as_ref()?.lend(request, params)
    }
}

#[cfg(test)]
mod tests {
    use crate::round::notes::*;
    use serde_json::json;

    #[test]
    fn notes_reach_the_observer_the_outer_call_and_the_record() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let observer: Observer = Arc::new(move |ev: &Event| {
            if let Event::ToolNote { id, note, .. } = ev {
                into.lock()
                    .expect("seen")
                    .push((id.clone(), (**note).clone()));
            }
        });
        let outer_notes = Arc::new(CallNotes::new(1, "outer", "helper", None, None));
        let outer = Arc::new(CallEvents::new(outer_notes.clone()));
        let notes = Arc::new(CallNotes::new(2, "c1", "slow", Some(observer), Some(outer)));
        let events = CallEvents::new(notes.clone());
        call_events::emit(Some(&events), "rows", json!(3)).expect("ok");
        for i in 0..100 {
            call_events::progress(Some(&events), f64::from(i + 1), None, None).expect("ok");
        }
        drop(events);
        let seen = seen.lock().expect("seen");
        assert_eq!(seen[0].0, "c1");
        assert_eq!(
            seen[0].1,
            ToolNote::Emit {
                name: "rows".into(),
                value: json!(3)
            }
        );
        let kept = notes.kept();
        assert!(kept.len() <= MAX_KEPT_NOTES);
        assert!(matches!(kept.last(), Some(ToolNote::Progress { done, .. }) if *done == 100.0));
        assert_eq!(
            outer_notes.kept()[0],
            seen[0].1,
            "the outer call heard it too"
        );
    }
}
