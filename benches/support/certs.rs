//! A test CA and a certificate it signed for 127.0.0.1 and localhost, written as PEM files:
//! `kiln mock --tls-cert --tls-key` (or the benches' fakes) serve with them, and a kiln given
//! `SSL_CERT_FILE=ca.pem` trusts them. Shared by the benches and tests/it.

use std::path::{Path, PathBuf};

/// The PEM files of a test CA and of a server certificate it signed.
pub struct TestCertificates {
    /// The CA's certificate: what `SSL_CERT_FILE` names for the client.
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

impl TestCertificates {
    /// Makes a CA and a certificate for 127.0.0.1 and localhost, written into `dir`.
    pub fn new(dir: &Path) -> TestCertificates {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        (ca_params.distinguished_name).push(DnType::CommonName, "kiln test CA");
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let leaf_params = CertificateParams::new(names).expect("leaf params");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = (leaf_params.signed_by(&leaf_key, &issuer)).expect("leaf certificate");
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write PEM");
            path
        };
        TestCertificates {
            ca: write("ca.pem", ca_cert.pem()),
            cert: write("cert.pem", leaf.pem()),
            key: write("key.pem", leaf_key.serialize_pem()),
        }
    }

    /// `kiln mock` arguments serving TLS with this certificate.
    pub fn mock_args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.cert.display().to_string(),
            "--tls-key".into(),
            self.key.display().to_string(),
        ]
    }
}
