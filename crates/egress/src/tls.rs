//! The one TLS stack: rustls with the ring provider, shared by kiln's own HTTP clients and the
//! ones rmcp builds for HTTP mounts. reqwest is built without a compiled-in provider (its
//! default pulls aws-lc, a second crypto library), so the provider must be installed as the
//! process default before any client is built; every builder in kiln goes through here.

use std::sync::{Arc, Once, OnceLock};

/// Installs ring as the process-wide rustls provider (once; a provider the embedding
/// application installed first is kept). Call before anything builds a `reqwest::Client`.
pub fn ensure_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another provider is already the default: that one is used, as intended.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS settings every client shares: certificates checked against the operating system's
/// trust store, read once per process. reqwest reads the store from disk for every client it
/// builds (milliseconds of CPU), and a script's `http_get` builds one per request. `None` when
/// the store cannot be read: each client then tries again, and fails with reqwest's error.
fn shared_config() -> Option<rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            ensure_provider();
            let provider = rustls::crypto::CryptoProvider::get_default()?.clone();
            let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).ok()?;
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth();
            // What reqwest offers itself, built without HTTP/2.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(config)
        })
        .clone()
}

/// A `reqwest` client builder whose TLS backend can initialise (the provider is installed).
/// Certificates are checked against the operating system's trust store (read once per
/// process).
#[allow(clippy::disallowed_methods)] // the one place allowed to: the provider is installed here
pub fn client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    let builder = reqwest::Client::builder();
    match shared_config() {
        Some(config) => builder.tls_backend_preconfigured(config),
        None => builder,
    }
}

/// A `reqwest` client builder for plain `http://` only: it trusts no certificate (so should it
/// ever meet `https` it fails closed) and never reads the trust store.
#[allow(clippy::disallowed_methods)] // as above: the provider is installed here
pub fn plain_client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    reqwest::Client::builder().tls_certs_only([])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_tls_ready() {
        let client = super::client_builder().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }

    #[test]
    fn the_shared_settings_offer_what_reqwest_would() {
        let config = super::shared_config().expect("the machine's trust store");
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        assert!(super::plain_client_builder().build().is_ok());
    }
}
