//! TLS to PostgreSQL through the project's one rustls (ring): `sslmode=require` (and libpq's
//! `verify-ca`, `verify-full`) always verifies the server's certificate and name, against
//! `sslrootcert=PATH` when the URL names one, else the operating system's trust store.

use std::sync::Arc;

/// How connections to the server are made.
#[derive(Clone)]
pub(crate) enum Link {
    /// In the clear (no `sslmode`, or `disable`/`prefer`: kiln never downgrades silently,
    /// so `prefer` is the clear).
    Plain,
    /// TLS, the server's certificate and name verified (`sslmode=require`, `verify-ca`,
    /// `verify-full`).
    Tls(tokio_postgres_rustls::MakeRustlsConnect),
}

/// `url` with libpq's options tokio-postgres does not read taken care of: `sslrootcert=PATH`
/// taken out (returned: the certificates trusted instead of the system's), and `verify-ca` or
/// `verify-full` read as `require` (kiln verifies the certificate and the name always).
pub(crate) fn options(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut root = None;
    let kept: Vec<String> = query
        .split('&')
        .filter_map(|pair| match pair.split_once('=') {
            Some(("sslrootcert", path)) => {
                root = Some(path.to_string());
                None
            }
            Some(("sslmode", "verify-ca" | "verify-full")) => Some("sslmode=require".into()),
            _ => Some(pair.to_string()),
        })
        .collect();
    match kept.is_empty() {
        true => (base.to_string(), root),
        false => (format!("{base}?{}", kept.join("&")), root),
    }
}

/// TLS through the project's one rustls (ring): the server's certificate checked against the
/// PEM certificates at `root`, else the operating system's trust store.
pub(crate) fn connector(
    root: Option<&str>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match root {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("sslrootcert={path}: {e}"))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("sslrootcert={path}: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("sslrootcert={path}: {e}"))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => {
            let verifier = rustls_platform_verifier::Verifier::new(provider)
                .map_err(|e| format!("the system's trust store: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        }
    };
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use crate::postgres::tls::options;

    #[test]
    fn libpq_options_tokio_postgres_cannot_read_are_taken_care_of() {
        assert_eq!(
            options("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem&connect_timeout=5"),
            (
                "postgres://u@h/db?sslmode=require&connect_timeout=5".into(),
                Some("/ca.pem".into())
            )
        );
        assert_eq!(
            options("postgres://u@h/db?sslrootcert=/ca.pem"),
            ("postgres://u@h/db".into(), Some("/ca.pem".into()))
        );
        assert_eq!(
            options("postgres://u@h/db"),
            ("postgres://u@h/db".into(), None)
        );
    }
}
