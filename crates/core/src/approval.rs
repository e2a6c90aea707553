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

use crate::context::Asker;
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

/// An [`AsyncApprover`] as the [`Asker`] a call asks from its own thread: the decision is
/// awaited on the runtime the asker was made on (a multi-thread one), or on one of its own.
pub struct AsyncAsker {
    approver: Arc<dyn AsyncApprover>,
    runtime: tokio::runtime::Handle,
}

impl AsyncAsker {
    /// The asker of `approver`, on the current runtime; `None` outside one.
    pub fn new(approver: Arc<dyn AsyncApprover>) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(AsyncAsker { approver, runtime })
    }
}

impl Asker for AsyncAsker {
    fn ask(&self, cap: &str, question: &str) -> Result<bool, String> {
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
