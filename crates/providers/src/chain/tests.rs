//! The chain's order and classification, with in-process members (no network).

use super::{Chain, Member};
use crate::{
    LocalModel, LocalReply, ModelRequest, ModelResponse, Provider, ProviderError, StopReason,
    TextSink, Usage,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A member that fails with `error` (or answers `text`) and counts its requests.
struct Fake {
    name: &'static str,
    error: Option<ProviderError>,
    asked: AtomicUsize,
}

impl LocalModel for Fake {
    fn name(&self) -> &'static str {
        self.name
    }
    fn send<'a>(&'a self, _input: &'a [u8], _sink: &'a TextSink) -> LocalReply<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let result = match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(ModelResponse {
                text: format!("from {}", self.name),
                tool_calls: Vec::new(),
                stop: StopReason::EndTurn,
                usage: Usage::new(1, 1),
                replay: None,
                answered_by: None,
            }),
        };
        Box::pin(std::future::ready(result))
    }
}

fn fake(name: &'static str, error: Option<ProviderError>) -> Arc<Fake> {
    Arc::new(Fake {
        name,
        error,
        asked: AtomicUsize::new(0),
    })
}

fn http(status: u16) -> Option<ProviderError> {
    Some(ProviderError::Http {
        provider: "first",
        status,
        message: "x".into(),
    })
}

fn chain(members: &[&Arc<Fake>]) -> Provider {
    let mut all = members.iter().map(|f| Member {
        provider: Provider::Local((*f).clone()),
        model: format!("{}-model", f.name),
    });
    let first = all.next().expect("a member");
    Provider::Chain(Chain::new(first, all.collect()))
}

fn ask(provider: &Provider) -> Result<ModelResponse, ProviderError> {
    let req = ModelRequest {
        model: "first-model".into(),
        system: None,
        messages: Vec::new().into(),
        tools: Vec::new(),
        temperature: None,
        max_tokens: 10,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    };
    let prepared = provider.prepare(&req);
    let sink: TextSink = Arc::new(|_: &str| {});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(provider.send(prepared, &sink))
}

#[test]
fn a_busy_member_hands_the_request_to_the_next_which_is_named() {
    let (first, second, third) = (
        fake("first", http(529)),
        fake("second", None),
        fake("third", None),
    );
    let provider = chain(&[&first, &second, &third]);
    assert_eq!(provider.name(), "first");
    let reply = ask(&provider).expect("the second answers");
    assert_eq!(reply.text, "from second");
    let by = reply.answered_by.expect("named");
    assert_eq!(
        (by.provider.as_str(), by.model.as_str()),
        ("second", "second-model")
    );
    assert_eq!(third.asked.load(Ordering::SeqCst), 0);
}

#[test]
fn a_request_error_stops_the_chain_and_the_last_busy_error_ends_it() {
    let (first, second) = (fake("first", http(400)), fake("second", None));
    let e = ask(&chain(&[&first, &second])).expect_err("a 400 is the run's");
    assert!(matches!(e, ProviderError::Http { status: 400, .. }), "{e}");
    assert_eq!(second.asked.load(Ordering::SeqCst), 0, "never asked");
    let (first, second) = (fake("first", http(503)), fake("second", http(429)));
    let e = ask(&chain(&[&first, &second])).expect_err("both busy");
    assert!(matches!(e, ProviderError::Http { status: 429, .. }), "{e}");
    assert_eq!(first.asked.load(Ordering::SeqCst), 1);
}
