//! Where a run's events go as they happen: into its entry in the run table, pushed on the
//! run's own task. Until the entry exists (the run's id is known only once it has started)
//! they wait here, and go into it first when it is attached, in the order they happened.

use crate::table::RunEntry;
use kiln_agent::Event;
use std::sync::{Arc, Mutex};

/// A run's events, on their way into its entry.
#[derive(Default)]
pub(super) struct EventSink(Mutex<Target>);

/// Where the next event goes.
enum Target {
    /// The entry does not exist yet: the events so far.
    Early(Vec<Event>),
    /// The run's entry.
    Entry(Arc<RunEntry>),
}

impl Default for Target {
    fn default() -> Self {
        Target::Early(Vec::new())
    }
}

impl EventSink {
    /// Takes one event of the run (from its observer).
    pub(super) fn push(&self, ev: &Event) {
        let mut into = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *into {
            Target::Early(events) => events.push(ev.clone()),
            Target::Entry(entry) => entry.push(ev.clone()),
        }
    }

    /// From now on the events go into `entry`, those that came before first.
    pub(super) fn attach(&self, entry: &Arc<RunEntry>) {
        // Held while the early events move, so none comes in between.
        let mut into = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Target::Early(events) = &mut *into {
            for ev in events.drain(..) {
                entry.push(ev);
            }
        }
        *into = Target::Entry(entry.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    fn entry() -> Arc<RunEntry> {
        let approvals = Arc::new(crate::table::approvals::Approvals::new(
            std::time::Duration::from_secs(60),
        ));
        Arc::new(RunEntry::new(
            "run_1".into(),
            "a".into(),
            None,
            CancellationToken::new(),
            approvals,
        ))
    }

    fn texts(entry: &RunEntry) -> Vec<String> {
        (entry.events_so_far().iter())
            .filter_map(|e| match &**e {
                Event::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn events_before_the_entry_go_into_it_first_and_in_order() {
        let (sink, entry) = (EventSink::default(), entry());
        sink.push(&Event::Text("one".into()));
        sink.push(&Event::Text("two".into()));
        assert!(texts(&entry).is_empty());
        sink.attach(&entry);
        sink.push(&Event::Text("three".into()));
        assert_eq!(texts(&entry), ["one", "two", "three"]);
    }

    #[tokio::test]
    async fn a_waiting_request_hears_the_end_even_with_a_late_event_after_it() {
        let (sink, entry) = (EventSink::default(), entry());
        sink.attach(&entry);
        let waiting = tokio::spawn({
            let entry = entry.clone();
            async move { entry.wait().await }
        });
        sink.push(&Event::Text("working".into()));
        assert!(entry.end().is_none());
        let report = kiln_agent::RunReport::new("a", Vec::new());
        entry.push(Event::Finished(Box::new(Ok(report))));
        // A tool's own thread may still say something after the end.
        sink.push(&Event::Text("late".into()));
        let end = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the end woke the request")
            .expect("the task");
        assert!(matches!(*end, Event::Finished(_)));
        assert!(entry.end().is_some(), "still found behind the late event");
    }
}
