//! Which provider errors a fallback chain moves on from.

use kiln_core::model::ProviderError;

fn http(status: u16, message: &str) -> ProviderError {
    ProviderError::Http {
        provider: "anthropic",
        status,
        message: message.into(),
    }
}

#[test]
fn busy_or_unreachable_services_fall_back() {
    for status in [408, 429, 500, 502, 503, 504, 529] {
        assert!(http(status, "x").falls_back(), "{status}");
    }
    assert!(http(400, "overloaded_error: Overloaded").falls_back());
    let transport = ProviderError::Transport {
        provider: "openai",
        message: "connection refused (http://127.0.0.1:9)".into(),
    };
    assert!(transport.falls_back());
    let stream = ProviderError::Stream {
        provider: "anthropic",
        message: "overloaded_error: Overloaded".into(),
    };
    assert!(stream.falls_back());
}

#[test]
fn errors_the_request_caused_do_not_fall_back() {
    for status in [400, 401, 403, 404, 413, 422] {
        assert!(
            !http(status, "invalid_request_error: bad").falls_back(),
            "{status}"
        );
    }
    let others = [
        ProviderError::MissingKey {
            provider: "openai",
            var: "OPENAI_API_KEY".into(),
        },
        ProviderError::Malformed {
            provider: "openai",
            message: "reply is not JSON".into(),
        },
        ProviderError::Truncated {
            provider: "openai",
            tool: "t".into(),
        },
        ProviderError::Stream {
            provider: "openai",
            message: "server_error: boom".into(),
        },
        ProviderError::Planner("x".into()),
    ];
    for e in others {
        assert!(!e.falls_back(), "{e}");
    }
}
