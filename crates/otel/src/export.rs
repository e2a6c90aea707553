//! Sends kiln's spans to an OpenTelemetry collector over OTLP (HTTP/protobuf), batched on a
//! thread of its own so a run never waits for the collector, through kiln's own reqwest (one
//! HTTP and TLS stack in the binary).
//!
//! The standard variables apply: `OTEL_EXPORTER_OTLP_ENDPOINT` and
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (where), `OTEL_EXPORTER_OTLP_HEADERS` (credentials),
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (what the spans are from),
//! `OTEL_SDK_DISABLED` and `OTEL_TRACES_EXPORTER=none` (off).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tracing_subscriber::Layer;

/// The most spans waiting for export; past it new spans are dropped (and counted), so a
/// collector that is down costs bounded memory.
pub const MAX_QUEUED_SPANS: usize = 4096;

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The collector's address or the exporter's settings are wrong.
    #[error("OTLP exporter: {0}")]
    Build(String),
}

/// Where to send traces, when anything says so: `--otlp URL` first, then the OTLP endpoint
/// variables. `None` when export is off.
pub fn endpoint(flag: Option<&str>) -> Option<String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v == "none")
    {
        return None;
    }
    match flag {
        // A base address gets the traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
        Some(url) => Some(with_traces_path(url)),
        None => env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|u| with_traces_path(&u))),
    }
}

fn with_traces_path(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let has_path = url
        .split_once("://")
        .map(|(_, rest)| rest.contains('/'))
        .unwrap_or(false);
    match has_path {
        true => url.to_string(),
        false => format!("{url}/v1/traces"),
    }
}

/// A running exporter; [`Exporter::shutdown`] sends what is queued before the process ends.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Starts exporting to `endpoint` (a full traces URL, as [`endpoint`] gives).
    pub fn start(endpoint: &str) -> Result<Exporter, ExportError> {
        let client = ReqwestClient::new().map_err(ExportError::Build)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ExportError::Build(e.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUED_SPANS)
            .with_scheduled_delay(Duration::from_millis(500))
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        // Service name and attributes from OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES;
        // "kiln" when neither names one.
        let detected = Resource::builder().build();
        let named = detected
            .get(&opentelemetry::Key::from_static_str("service.name"))
            .is_some_and(|v| !v.as_str().starts_with("unknown_service"));
        let resource = match named {
            true => detected,
            false => Resource::builder().with_service_name("kiln").build(),
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        Ok(Exporter { provider })
    }

    /// The `tracing` layer turning kiln's spans (not its log lines) into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let tracer = self.provider.tracer("kiln");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.is_span()
                    && meta.target().starts_with("kiln")
                    && *meta.level() <= tracing::Level::INFO
            }))
    }

    /// Sends what is queued (waiting at most the export timeout) and stops.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("traces: {e}");
        }
    }
}

/// The exporter's HTTP client: kiln's reqwest, on a small runtime of its own (the batch
/// processor's thread has none).
#[derive(Debug)]
struct ReqwestClient {
    http: reqwest::Client,
    failures: AtomicU64,
}

fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("kiln-otlp")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl ReqwestClient {
    fn new() -> Result<Self, String> {
        let http = kiln_egress::tls::client_builder()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(ReqwestClient {
            http,
            failures: AtomicU64::new(0),
        })
    }

    /// A warning for the first failure and every hundredth after it: a collector that is down
    /// must not flood the log.
    fn failed(&self, why: &str) {
        let n = self.failures.fetch_add(1, Ordering::Relaxed);
        if n.is_multiple_of(100) {
            tracing::warn!("traces not exported ({} so far): {why}", n + 1);
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let http = self.http.clone();
        let (parts, body) = request.into_parts();
        let work = async move {
            let reply = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let mut response = Response::builder().status(reply.status().as_u16());
            for (k, v) in reply.headers() {
                response = response.header(k, v);
            }
            let bytes = reply.bytes().await?;
            Ok::<_, HttpError>(response.body(bytes)?)
        };
        let outcome = match runtime() {
            Ok(rt) => rt.spawn(work).await.map_err(|e| e.into()).and_then(|r| r),
            Err(e) => Err(e.into()),
        };
        match outcome {
            Ok(r) if r.status().is_success() => Ok(r),
            Ok(r) => {
                self.failed(&format!("the collector answered {}", r.status()));
                Ok(r)
            }
            Err(e) => {
                self.failed(&e.to_string());
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_base_address_gets_the_traces_path_and_a_full_one_is_kept() {
        assert_eq!(
            super::with_traces_path("http://127.0.0.1:6006"),
            "http://127.0.0.1:6006/v1/traces"
        );
        assert_eq!(
            super::with_traces_path("http://127.0.0.1:6006/"),
            "http://127.0.0.1:6006/v1/traces"
        );
        assert_eq!(
            super::with_traces_path("http://h:4318/custom/traces"),
            "http://h:4318/custom/traces"
        );
    }
}
