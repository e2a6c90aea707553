//! A failed HTTP request told as a person reads it: what went wrong (timed out, could not
//! connect, ...), the URL, and the innermost cause. Shared by the providers and `http_get`.

/// A transport error in words, without the request's headers.
pub fn describe(e: &reqwest::Error, url: &str) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_redirect() {
        "redirect not followed"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "the reply body broke off"
    } else {
        "failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        format!("{what} ({url})")
    } else {
        format!("{what} ({url}): {detail}")
    }
}
