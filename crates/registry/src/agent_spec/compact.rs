//! Compaction (`.compact(#{ at, keep_last, how })`): when a run's transcript passes `at`
//! tokens, the part before its last `keep_last` messages is replaced by a summary (a model
//! request kept as a step) or trimmed (tool results shortened first, then the oldest messages
//! dropped), so a long session stays within its model's context. The cut never falls between
//! a tool call and its results.

/// How the older part of a transcript is made smaller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactWith {
    /// A summary the agent's model writes, keeping facts, decisions and open tasks.
    Summary,
    /// Tool results shortened, then the oldest messages dropped, with a note saying so.
    Trim,
}

/// When and how an agent's transcript is compacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The budget, in tokens (the provider's count of the last request, else an estimate of
    /// about four bytes a token).
    pub at: u64,
    /// How many of the latest messages are never compacted (moved back to the start of a
    /// turn, so a tool call keeps its results).
    pub keep_last: usize,
    /// How.
    pub with: CompactWith,
    /// The model that writes the summary (`model: "openai:gpt-5-mini"`); `None`: the
    /// agent's own.
    pub model: Option<crate::fallback::FallbackModel>,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            at: 100_000,
            keep_last: 8,
            with: CompactWith::Summary,
            model: None,
        }
    }
}

/// The system prompt of a summary request.
pub const SUMMARY_PROMPT: &str = "You compact a conversation so it can go on within a limited context. Write a summary of the conversation you are given that keeps every fact stated, every decision made and who made it, every tool result still needed, and every open task or question, with names, numbers and identifiers exactly as written. Leave out greetings and repetition. Answer with the summary only.";

/// The estimated tokens of `bytes` of transcript: about four bytes a token.
pub fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}
