//! The worker's HTTP/2 server: the SDK's `HttpServer` accept loop, plus `TCP_NODELAY` on each
//! connection (without it Nagle's algorithm holds back the small frames of each journaled step,
//! a step's completion, then Restate's ack, and every step waits for a delayed ACK), and each
//! response [coalesced](super::coalesce) so a quick step's start and result reach Restate
//! together.

use super::coalesce::Coalesce;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use restate_sdk::endpoint::Endpoint;
use restate_sdk::hyper::HyperEndpoint;
use std::future::Future;
use std::time::Duration;

/// How long shutdown waits for running requests.
const GRACE: Duration = Duration::from_secs(10);

/// Serves `endpoint` on `listener` until `shutdown` completes, then drains for up to [`GRACE`].
pub(super) async fn serve(
    endpoint: Endpoint,
    listener: tokio::net::TcpListener,
    shutdown: impl Future,
) {
    let endpoint = HyperEndpoint::new(endpoint);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, remote) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::warn!("TCP_NODELAY on {remote}: {e}");
                }
                let endpoint = endpoint.clone();
                let service = hyper::service::service_fn(move |req| {
                    let response = endpoint.call(req);
                    async move { response.await.map(|r| r.map(Coalesce::new)) }
                });
                let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::warn!("connection from {remote}: {e:?}");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    if tokio::time::timeout(GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("shutdown: connections still open after {GRACE:?}");
    }
}
