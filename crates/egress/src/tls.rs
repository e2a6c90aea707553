//! The one TLS stack: rustls with the ring provider, shared by kiln's own HTTP clients and the
//! ones rmcp builds for HTTP mounts. reqwest is built without a compiled-in provider (its
//! default pulls aws-lc, a second crypto library), so the provider must be installed as the
//! process default before any client is built; every builder in kiln goes through here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once, OnceLock};

/// Whether clients built from now on speak HTTP/1.1 only (`--http1`).
static HTTP1_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes every client built from now on speak HTTP/1.1 only: TLS offers `http/1.1` alone, so a
/// server that would speak HTTP/2 does not. Set it before the first request (`kiln --http1`,
/// kiln.toml `[network] http1`); clients already built keep what they had.
pub fn set_http1_only(on: bool) {
    HTTP1_ONLY.store(on, Ordering::Relaxed);
}

/// Whether [`set_http1_only`] is on.
pub fn http1_only() -> bool {
    HTTP1_ONLY.load(Ordering::Relaxed)
}

/// The protocols a client offers in TLS's ALPN: HTTP/2 first, where the server serves it.
fn alpn(http1_only: bool) -> Vec<Vec<u8>> {
    if http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    }
}

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
            config.alpn_protocols = alpn(false);
            Some(config)
        })
        .clone()
}

/// A `reqwest` client builder whose TLS backend can initialise (the provider is installed).
/// Certificates are checked against the operating system's trust store (read once per
/// process; `SSL_CERT_FILE` or `SSL_CERT_DIR` name other roots). Over TLS it offers HTTP/2
/// and HTTP/1.1 and speaks what the server picks, unless [`set_http1_only`] is on; plain
/// `http://` is HTTP/1.1 (local model servers do not take HTTP/2 without TLS).
#[allow(clippy::disallowed_methods)] // the one place allowed to: the provider is installed here
pub fn client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    let http1 = http1_only();
    let builder = reqwest::Client::builder();
    let builder = if http1 { builder.http1_only() } else { builder };
    match shared_config() {
        Some(mut config) => {
            config.alpn_protocols = alpn(http1);
            builder.tls_backend_preconfigured(config)
        }
        None => builder,
    }
}

/// A `reqwest` client builder for plain `http://` only: it trusts no certificate (so should it
/// ever meet `https` it fails closed) and never reads the trust store.
#[allow(clippy::disallowed_methods)] // as above: the provider is installed here
pub fn plain_client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    let builder = reqwest::Client::builder().tls_certs_only([]);
    if http1_only() {
        builder.http1_only()
    } else {
        builder
    }
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
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert_eq!(super::alpn(true), [b"http/1.1".to_vec()]);
        assert!(super::plain_client_builder().build().is_ok());
    }
}
