//! The one TLS stack: rustls with the ring provider, shared by kiln's own HTTP clients and the
//! ones rmcp builds for HTTP mounts. reqwest is built without a compiled-in provider (its
//! default pulls aws-lc, a second crypto library), so the provider must be installed as the
//! process default before any client is built; every builder in kiln goes through here.

use std::sync::Once;

/// Installs ring as the process-wide rustls provider (once; a provider the embedding
/// application installed first is kept). Call before anything builds a `reqwest::Client`.
pub fn ensure_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another provider is already the default: that one is used, as intended.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A `reqwest` client builder whose TLS backend can initialise (the provider is installed).
/// Certificates are checked against the operating system's trust store.
#[allow(clippy::disallowed_methods)] // the one place allowed to: the provider is installed here
pub fn client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_tls_ready() {
        let client = super::client_builder().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
