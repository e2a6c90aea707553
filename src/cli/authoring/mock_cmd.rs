//! `kiln mock SCENARIO`: serve the fake provider.

use crate::cli::CliResult;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// `kiln mock` options.
#[derive(Args, Debug)]
pub struct MockArgs {
    /// Scenario file (JSON): {"turns": [{"text": ...}, {"tool_calls": [...]}, {"fault": {...}}, ...]}
    pub scenario: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, short = 'p', default_value_t = 0)]
    pub port: u16,
    /// Serve over TLS (https://) with this certificate chain (PEM), offering HTTP/2 and
    /// HTTP/1.1 by ALPN (`h2`, `http/1.1`). Needs --tls-key. Without TLS the mock serves plain
    /// HTTP/1.1, and HTTP/2 to clients that speak it with prior knowledge (h2c).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert's certificate (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve HTTP/1.1 only, as a provider that refuses HTTP/2: over TLS, ALPN offers only
    /// `http/1.1`; in plain HTTP, no h2c.
    #[arg(long)]
    pub http1: bool,
    /// Bedrock: the access key id of the test key pair requests must be signed with (SigV4
    /// is verified; a wrong signature is a 403 as AWS answers it).
    #[arg(
        long,
        env = "KILN_MOCK_AWS_ACCESS_KEY_ID",
        requires = "aws_secret_access_key"
    )]
    pub aws_access_key_id: Option<String>,
    /// Bedrock: the test key pair's secret access key.
    #[arg(
        long,
        env = "KILN_MOCK_AWS_SECRET_ACCESS_KEY",
        hide_env_values = true,
        requires = "aws_access_key_id"
    )]
    pub aws_secret_access_key: Option<String>,
    /// Bedrock: the session token requests must carry.
    #[arg(long, env = "KILN_MOCK_AWS_SESSION_TOKEN", hide_env_values = true)]
    pub aws_session_token: Option<String>,
    /// Bedrock: an API key accepted as `Authorization: Bearer`.
    #[arg(
        long,
        env = "KILN_MOCK_AWS_BEARER_TOKEN_BEDROCK",
        hide_env_values = true
    )]
    pub aws_bearer_token: Option<String>,
}

/// Runs `kiln mock` until Ctrl-C.
pub fn mock(a: MockArgs) -> CliResult<ExitCode> {
    let text = std::fs::read_to_string(&a.scenario)
        .map_err(|e| format!("cannot read scenario {}: {e}", a.scenario.display()))?;
    let mut scenario: kiln_mock::scenario::Scenario = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: {e}", a.scenario.display(), e.line(), e.column()))?;
    if a.aws_access_key_id.is_some() || a.aws_bearer_token.is_some() {
        scenario.aws = Some(kiln_mock::sigv4::AwsKeys {
            access_key_id: a.aws_access_key_id.unwrap_or_default(),
            secret_access_key: a.aws_secret_access_key.unwrap_or_default(),
            session_token: a.aws_session_token,
            bearer: a.aws_bearer_token,
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let options = kiln_mock::ServeOptions {
        tls: a.tls_cert.zip(a.tls_key),
        http1_only: a.http1,
    };
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    runtime.block_on(async {
        let addr = SocketAddr::from(([127, 0, 0, 1], a.port));
        let (addr, server) = kiln_mock::bind_with(scenario, addr, options).await?;
        crate::cli::output::outln!("kiln mock listening on {scheme}://{addr}")?;
        tokio::select! {
            r = server => r?,
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
