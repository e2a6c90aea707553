//! Steering: what a person adds to a run while it runs (`POST /v1/runs/{id}/input`). Each
//! message waits here until the run's next model request, which carries it as a user message
//! (a journaled step, an [`Event::Steered`](crate::Event::Steered) on the run's events); a run
//! that was about to answer asks the model again instead. When the run ends, or is cancelled,
//! the queue closes: what is still in it never runs, and later messages are refused. A durable
//! run's messages come through its Restate workflow instead (kiln-durable): its journal moves
//! them here before each request, journaled ([`StepJournal::gather_steering`]).
//!
//! [`StepJournal::gather_steering`]: crate::StepJournal::gather_steering

use std::collections::VecDeque;
use std::sync::Mutex;

/// How many messages may wait at once.
pub const MAX_QUEUED: usize = 16;

/// The longest message, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 32 << 10;

/// Why a message was not queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SteerError {
    /// The run has ended (or was cancelled): nothing more reaches it.
    #[error("the run has ended: nothing more reaches it")]
    Ended,
    /// Too many messages wait already.
    #[error("{MAX_QUEUED} messages wait for the run's next model request already")]
    Full,
    /// The message is empty or too long.
    #[error("a message holds 1 to {MAX_MESSAGE_BYTES} bytes")]
    Size,
}

/// The messages waiting for a run's next model request.
#[derive(Debug, Default)]
pub struct Steering {
    state: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<String>,
    ended: bool,
}

impl Steering {
    /// Queues `text` for the next model request; how many wait now.
    pub fn add(&self, text: &str) -> Result<usize, SteerError> {
        if text.trim().is_empty() || text.len() > MAX_MESSAGE_BYTES {
            return Err(SteerError::Size);
        }
        let mut q = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match (q.ended, q.waiting.len() >= MAX_QUEUED) {
            (true, _) => Err(SteerError::Ended),
            (_, true) => Err(SteerError::Full),
            _ => {
                q.waiting.push_back(text.to_string());
                Ok(q.waiting.len())
            }
        }
    }

    /// Takes every waiting message, oldest first.
    pub fn take(&self) -> Vec<String> {
        let mut q = self.state.lock().unwrap_or_else(|e| e.into_inner());
        q.waiting.drain(..).collect()
    }

    /// Whether a message waits.
    pub fn waiting(&self) -> bool {
        let q = self.state.lock().unwrap_or_else(|e| e.into_inner());
        !q.ended && !q.waiting.is_empty()
    }

    /// Whether another message may be queued now (not ended, not full).
    pub fn has_room(&self) -> bool {
        let q = self.state.lock().unwrap_or_else(|e| e.into_inner());
        !q.ended && q.waiting.len() < MAX_QUEUED
    }

    /// Ends the queue: what waits is dropped, later messages are refused.
    pub fn close(&self) {
        let mut q = self.state.lock().unwrap_or_else(|e| e.into_inner());
        q.ended = true;
        q.waiting.clear();
    }
}

/// The step name of the messages round `round`'s request carries.
pub fn steer_step(round: u32) -> String {
    format!("steer-{round}")
}

#[cfg(test)]
mod tests {
    use crate::steer::{MAX_MESSAGE_BYTES, MAX_QUEUED, SteerError, Steering};

    #[test]
    fn messages_wait_in_order_until_taken_and_none_after_the_end() {
        let s = Steering::default();
        assert_eq!(s.add("first"), Ok(1));
        assert_eq!(s.add("second"), Ok(2));
        assert!(s.waiting());
        assert_eq!(s.take(), ["first", "second"]);
        assert!(!s.waiting());
        assert_eq!(s.add("  "), Err(SteerError::Size));
        assert_eq!(
            s.add(&"x".repeat(MAX_MESSAGE_BYTES + 1)),
            Err(SteerError::Size)
        );
        for i in 0..MAX_QUEUED {
            assert!(s.add(&format!("m{i}")).is_ok());
        }
        assert_eq!(s.add("one more"), Err(SteerError::Full));
        assert!(!s.has_room());
        s.take();
        assert!(s.has_room());
        s.close();
        assert!(!s.has_room());
        assert!(s.take().is_empty(), "what waited never runs");
        assert_eq!(s.add("late"), Err(SteerError::Ended));
    }
}
