//! A run as a stream of its events ([`Host::run_stream`]), or with its events left to its
//! observer and only its end streamed ([`Host::run_spawned`]).

use crate::Host;
use futures_util::Stream;
use kiln_agent::{Event, RunOptions};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Host {
    /// [`Host::run`] as a stream of [`Event`]s, ending with [`Event::Finished`]. Dropping the
    /// stream cancels the run. Needs a tokio runtime (the run is spawned on it).
    pub fn run_stream(
        self: &Arc<Self>,
        agent: &str,
        prompt: &str,
        mut opts: RunOptions,
    ) -> RunStream {
        // Boxed in the channel: its first block holds 32 slots, 7 KB a run of `Event`s inline,
        // and a waiting run keeps that block as long as it waits.
        let (tx, rx) = mpsc::unbounded_channel::<Box<Event>>();
        let outer = opts.observer.take();
        let events = tx.clone();
        opts.observer = Some(Arc::new(move |ev: &Event| {
            if let Some(o) = &outer {
                o(ev);
            }
            let _ = events.send(Box::new(ev.clone()));
        }));
        self.spawn_run(agent, prompt, opts, tx, rx)
    }

    /// [`Host::run_stream`] for a caller that takes the run's events from `opts.observer`
    /// (called in order as they happen, on the run's task or a tool's thread): the stream
    /// carries only the [`Event::Finished`], and ends with it; an event a tool's thread sends
    /// after the end reaches the observer only. A server keeping every run's events saves a
    /// channel send, an allocation and a task woken per event.
    pub fn run_spawned(self: &Arc<Self>, agent: &str, prompt: &str, opts: RunOptions) -> RunStream {
        let (tx, rx) = mpsc::unbounded_channel::<Box<Event>>();
        self.spawn_run(agent, prompt, opts, tx, rx)
    }

    /// Spawns the run; its end goes to `tx`, the stream reads `rx`.
    fn spawn_run(
        self: &Arc<Self>,
        agent: &str,
        prompt: &str,
        opts: RunOptions,
        tx: mpsc::UnboundedSender<Box<Event>>,
        rx: mpsc::UnboundedReceiver<Box<Event>>,
    ) -> RunStream {
        let cancel = opts.cancel.clone();
        let (host, agent, prompt) = (self.clone(), agent.to_string(), prompt.to_string());
        // The run's spans stay children of the caller's (a server's request span).
        let span = tracing::Span::current();
        // Boxed: what the task captures it keeps for as long as the run waits.
        let opts = Box::new(opts);
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let result = host.run(&agent, &prompt, *opts).await;
                let _ = tx.send(Box::new(Event::Finished(Box::new(result))));
            },
            span,
        ));
        RunStream { rx, cancel }
    }
}

/// The events of a running agent ([`Host::run_stream`]); dropping it cancels the run.
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Box<Event>>,
    cancel: CancellationToken,
}

impl RunStream {
    /// A token that cancels the run (the stream then ends with a `cancelled` error).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

impl Stream for RunStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx).map(|event| event.map(|boxed| *boxed))
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
