//! Approvals decided asynchronously: an application that asks a person through a web page, a
//! chat or a queue implements [`AsyncApprover`], and a call waiting for the answer parks its
//! own thread only (the runtime's workers go on).
//!
//! ```
//! use kiln_core::approval::{ApprovalFuture, AsyncApprover};
//!
//! /// Approves what the operator's rules allow; here, everything but `fs.write`.
//! struct Rules;
//!
//! impl AsyncApprover for Rules {
//!     fn approve<'a>(&'a self, cap: &'a str, _question: &'a str) -> ApprovalFuture<'a> {
//!         Box::pin(async move { Ok(cap != "fs.write") })
//!     }
//! }
//! # drop(Rules);
//! ```

use crate::context::Approver;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A decision being made: true approves, false denies, `Err` says why nobody could decide.
pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'a>>;

/// Decides whether a call may use an `ask` grant (or go ahead where a call policy asks),
/// without blocking a thread while a person makes up their mind.
pub trait AsyncApprover: Send + Sync {
    /// Decides about capability `cap` (or `policy:NAME`); `question` says what the call wants.
    fn approve<'a>(&'a self, cap: &'a str, question: &'a str) -> ApprovalFuture<'a>;
}

/// An [`AsyncApprover`] as the [`Approver`] a call waits on from its own thread: the decision
/// is awaited on the runtime it was made on (a multi-thread one), or on one of its own.
pub struct BlockingApprover {
    approver: Arc<dyn AsyncApprover>,
    runtime: tokio::runtime::Handle,
}

impl BlockingApprover {
    /// `approver` waited on from a call's thread, on the current runtime; `None` outside one.
    pub fn new(approver: Arc<dyn AsyncApprover>) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(BlockingApprover { approver, runtime })
    }
}

impl Approver for BlockingApprover {
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let (approver, cap, question) =
            (self.approver.clone(), cap.to_string(), question.to_string());
        let decide = async move {
            let _ = tx.send(approver.approve(&cap, &question).await);
        };
        match self.runtime.runtime_flavor() {
            // The call may run on the runtime's only thread, which then cannot drive the
            // decision: it is awaited on a runtime of its own (channels and timers work there).
            tokio::runtime::RuntimeFlavor::CurrentThread => {
                std::thread::spawn(move || {
                    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        rt.block_on(decide);
                    }
                });
            }
            // The call's thread is a blocking one (or out of the workers): waiting holds none.
            _ => {
                self.runtime.spawn(decide);
            }
        }
        rx.recv()
            .map_err(|_| "the approver stopped before it decided".to_string())?
    }
}

/// Why nobody could be asked: no terminal, no client that answers, no approver, and approving
/// every call was not turned on (`kiln --yes` at the command line). Door-neutral: an HTTP
/// client reads it too, so it names no flag.
pub const NO_ONE_TO_ASK: &str = "there is no one to ask (no person can approve it here, and approving every call without asking is off)";

/// The one rule for a person's yes: every `ask` (a grant a tool relies on, a gated host
/// function's grant, a call policy's verdict) goes through here, at every door.
///
/// `--yes` approves; else the door's approver decides (an MCP client, `kiln serve`'s approvals,
/// the decisions a durable run made before the step, an [`AsyncApprover`]); else the host's
/// terminal; else nobody can, and the answer says so. `label` is the capability or
/// `policy:NAME`; the decision is traced on an `approval` span.
pub fn ask_person(
    ctx: &crate::context::CallContext,
    tool: &str,
    args: Option<&serde_json::Value>,
    label: &str,
    question: &str,
) -> Result<bool, String> {
    let span = crate::telemetry::approval_span(label, tool);
    let answer = span.in_scope(|| {
        let ask = crate::context::ApprovalAsk {
            label,
            question,
            tool,
            args,
            call_id: ctx.who.call_id.as_deref(),
            ends: crate::context::WaitEnds {
                cancel: ctx.run.cancel.as_ref().map(|c| c.flag().clone()),
                deadline: ctx.run.deadline,
            },
        };
        decide(ctx.approval.approver.as_ref(), &ctx.run.services, &ask)
    });
    crate::telemetry::record_approval(&span, &answer);
    answer
}

/// `--yes`, else the door's approver, else the terminal, else nobody.
fn decide(
    approver: Option<&Arc<dyn Approver>>,
    services: &crate::services::Services,
    ask: &crate::context::ApprovalAsk<'_>,
) -> Result<bool, String> {
    if services.assume_yes {
        return Ok(true);
    }
    match (approver, &services.approver) {
        (Some(door), _) => door.approve_call(ask),
        (None, Some(terminal)) => Ok(terminal(ask.label, ask.question)),
        (None, None) => Err(NO_ONE_TO_ASK.to_string()),
    }
}

/// The question asked before a tool runs on an `ask` grant it relies on.
pub fn grant_question(tool: &str, grant: &crate::capability::Grant, args: &str) -> String {
    format!(
        "tool \"{tool}\" may use {grant} only when a person approves: run it with {}?",
        shorten(args)
    )
}

/// At most 200 characters of `text`.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The labels a call was already approved for, answered yes without asking again; the rest go
/// to the approver the call had (or the terminal, through [`ask_person`]'s order).
pub struct Approved {
    /// Labels (capability names) approved for this call.
    pub labels: Vec<String>,
    /// The approver the call had before.
    pub inner: Option<Arc<dyn Approver>>,
    /// Where the terminal's approver and `--yes` live.
    pub services: Arc<crate::services::Services>,
}

impl Approver for Approved {
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String> {
        self.approve_call(&crate::context::ApprovalAsk::plain(cap, question))
    }

    fn approve_call(&self, ask: &crate::context::ApprovalAsk<'_>) -> Result<bool, String> {
        if self.labels.iter().any(|l| l == ask.label) {
            return Ok(true);
        }
        decide(self.inner.as_ref(), &self.services, ask)
    }
}
