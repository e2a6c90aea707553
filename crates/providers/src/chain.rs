//! A fallback chain: several models in order (`.fallback([...])`, `--fallback`). Each request
//! goes to the first member; one that ends, after that member's own retries, in an error
//! [`ProviderError::falls_back`] says is the service's (429, overload, 5xx, a timeout, a
//! refused connection) goes to the next, and so on. An error the request itself caused
//! (400, 401, 403, 404, 422...) is the run's error: the next model would refuse it too.
//!
//! Every member renders every request in its own wire format, through its own incremental
//! cache, so the transcript is whole for whichever member answers (a round answered by
//! another wire is rendered afresh, its [`crate::Replay`] ignored by the others) and a round's
//! cost stays flat however long the run (a chain of n models renders n bodies a round). The
//! reply names the member that wrote it ([`ModelResponse::answered_by`]). A streamed reply
//! that fails part way has sent its text to the sink already; the next member's follows it.

use super::{AnsweredBy, ModelRequest, ModelResponse, Prepared, Provider, ProviderError, TextSink};

/// One model of a chain: its provider, connected with its own key and base URL, and model.
pub struct Member {
    /// The provider.
    pub provider: Provider,
    /// The model it runs.
    pub model: String,
}

impl Member {
    fn answered_by(&self) -> AnsweredBy {
        AnsweredBy {
            provider: self.provider.name().to_string(),
            model: self.model.clone(),
        }
    }
}

/// Models tried in order.
pub struct Chain {
    members: Vec<Member>,
}

impl Chain {
    /// A chain of `first` (the agent's own model), then `rest` in order.
    pub fn new(first: Member, rest: Vec<Member>) -> Chain {
        let mut members = vec![first];
        members.extend(rest);
        Chain { members }
    }

    /// The members, the agent's own model first.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The first member's provider name.
    pub fn name(&self) -> &'static str {
        self.members[0].provider.name()
    }

    /// `req` rendered for every member, each with its own model.
    pub(super) fn prepare(&self, req: &ModelRequest<'_>) -> Vec<Prepared> {
        self.members
            .iter()
            .map(|m| {
                let mut own = req.clone();
                own.model.clone_from(&m.model);
                m.provider.prepare(&own)
            })
            .collect()
    }

    /// Sends the members' requests in order until one answers or fails for a reason of the
    /// request's own; the last member's error when none answers.
    pub(super) async fn send(
        &self,
        requests: Vec<Prepared>,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let count = requests.len().min(self.members.len());
        let mut last = None;
        for (i, (member, request)) in self.members.iter().zip(requests).enumerate() {
            let by = member.answered_by();
            match Box::pin(member.provider.send(request, sink)).await {
                Ok(mut reply) => {
                    reply.answered_by = Some(by);
                    return Ok(reply);
                }
                Err(e) if e.falls_back() && i + 1 < count => {
                    let next = self.members[i + 1].answered_by();
                    tracing::warn!("{by} failed ({e}); falling back to {next}");
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| ProviderError::Malformed {
            provider: self.name(),
            message: "the fallback chain had no request to send".into(),
        }))
    }
}

#[cfg(test)]
mod tests;
