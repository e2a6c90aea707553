//! Who approves a call's use of a needs-approval grant, and what ends the wait for a decision:
//! the seam between a call and the person behind its door (an MCP client, `kiln serve`'s
//! inbox, the terminal). Re-exported by [`crate::context`], where a call's context holds it.

use serde_json::Value;

/// Approves (or not) a call's use of a needs-approval grant, asking the person behind a door.
pub trait Approver: Send + Sync {
    /// Decides about capability `cap` (or `policy:NAME`), asking `question`, and waits for the
    /// answer; `Err` says why nobody could decide (the client cannot answer mid-call, the question
    /// failed to arrive).
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String>;

    /// [`Approver::approve`] told which call asks (a door that shows the call's tool and
    /// arguments beside the question); by default the same as `approve`.
    fn approve_call(&self, ask: &ApprovalAsk<'_>) -> Result<bool, String> {
        self.approve(ask.label, ask.question)
    }
}

/// One approval being asked: the capability (or `policy:NAME`), the question, the tool and
/// the id the model gave the call (`None` outside agent runs).
pub struct ApprovalAsk<'a> {
    /// The capability or `policy:NAME`.
    pub label: &'a str,
    /// What the call wants, as a person reads it.
    pub question: &'a str,
    /// The tool asking.
    pub tool: &'a str,
    /// The call's arguments, when the ask comes before it runs (`None`: from inside it).
    pub args: Option<&'a Value>,
    /// The model's id of the call.
    pub call_id: Option<&'a str>,
    /// When the wait for a decision must end without one: the call's cancellation (its
    /// run cancelled, its program stopped, its client gone) and its deadline.
    pub ends: WaitEnds,
}

impl<'a> ApprovalAsk<'a> {
    /// An ask of `label` with `question` alone, from no known call.
    pub fn plain(label: &'a str, question: &'a str) -> Self {
        ApprovalAsk {
            label,
            question,
            tool: "",
            args: None,
            call_id: None,
            ends: WaitEnds::default(),
        }
    }
}

/// What ends a wait for a person's decision early.
#[derive(Clone, Default)]
pub struct WaitEnds {
    /// Set when the call is cancelled.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// When the call's run must have ended.
    pub deadline: Option<std::time::Instant>,
}

impl WaitEnds {
    /// Why the wait ends now, if it does: "the run was cancelled" or "the run's deadline
    /// passed".
    pub fn ended(&self) -> Option<&'static str> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        {
            return Some("the run was cancelled");
        }
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            return Some("the run's deadline passed");
        }
        None
    }
}
