//! The mock's own serving loop: each accepted TCP connection numbered (1, 2, 3... in accept
//! order) and served by hyper's automatic builder, HTTP/1.1 and HTTP/2 (told apart by the
//! HTTP/2 preface, so a plain connection speaks h2c with prior knowledge), or HTTP/1.1 alone;
//! optionally over TLS (rustls with ring, ALPN `h2` and `http/1.1`). A request's handler
//! learns the connection it came on ([`connection`]) for the record, and can close that whole
//! connection instead of answering ([`reset_connection`], a turn's `reset_connection`).

#[cfg(test)]
mod tests;

use axum::Router;
use axum::http::{Request, Version};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How [`crate::bind_with`] serves: plain or over TLS, HTTP/2 or not.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Serve over TLS with this certificate chain and private key: the paths of two PEM files,
    /// `(certificate chain, private key)`. ALPN offers `h2` and `http/1.1` (only `http/1.1`
    /// with [`http1_only`](Self::http1_only)). `None` serves plain TCP, where a client speaks
    /// HTTP/2 with prior knowledge (h2c) or HTTP/1.1.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Serve HTTP/1.1 only, as a provider that refuses HTTP/2: ALPN offers only `http/1.1`, and
    /// a plain connection opening with the HTTP/2 preface is not understood.
    pub http1_only: bool,
}

/// The connection a request came on, as its handler sees it.
#[derive(Clone)]
struct Connection {
    /// Its number, in accept order from 1.
    number: u64,
    /// The request's HTTP version.
    version: Version,
    /// Cancelled to close the connection at once.
    reset: CancellationToken,
}

tokio::task_local! {
    /// The connection of the request being handled (set around the router's call).
    static CONNECTION: Connection;
}

/// The connection the request being handled came on: its number (1, 2, 3... in accept order)
/// and the request's HTTP version (`HTTP/1.1`, `HTTP/2.0`); `None` outside the mock's own
/// serving loop (the router served by another server).
pub(crate) fn connection() -> Option<(u64, String)> {
    CONNECTION
        .try_with(|c| (c.number, format!("{:?}", c.version)))
        .ok()
}

/// Closes the connection the request being handled came on, abruptly (every HTTP/2 stream on
/// it fails), and never returns, so that no reply is sent for the request. Outside the mock's
/// own serving loop there is no connection to close: it returns at once.
pub(crate) async fn reset_connection() {
    if CONNECTION.try_with(|c| c.reset.cancel()).is_ok() {
        tracing::debug!("kiln mock: closing the connection (reset_connection)");
        std::future::pending::<()>().await;
    }
}

/// Binds `addr` and returns the bound address and the future serving `app` on it as `options`
/// say ([`crate::bind_with`]).
pub(crate) async fn listen(
    app: Router,
    addr: SocketAddr,
    options: &ServeOptions,
) -> io::Result<(SocketAddr, impl Future<Output = io::Result<()>> + use<>)> {
    let tls = match &options.tls {
        Some((cert, key)) => {
            let config = tls_config(cert, key, options.http1_only)?;
            Some(TlsAcceptor::from(Arc::new(config)))
        }
        None => None,
    };
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((local, accept(listener, app, tls, options.http1_only)))
}

/// The server's TLS configuration: rustls with the ring provider, the chain in `cert` and the
/// key in `key` (PEM), ALPN `h2` and `http/1.1` (or `http/1.1` alone).
fn tls_config(cert: &Path, key: &Path, http1_only: bool) -> io::Result<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |path: &Path, what: &str, e: &dyn std::fmt::Display| {
        let message = format!("{}: cannot read the TLS {what}: {e}", path.display());
        io::Error::new(io::ErrorKind::InvalidInput, message)
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, "certificate", &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert, "certificate", &e))?;
    if chain.is_empty() {
        return Err(bad(cert, "certificate", &"no CERTIFICATE in the file"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, "private key", &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            let message = format!(
                "{} with {}: not a usable TLS certificate and key: {e}",
                cert.display(),
                key.display()
            );
            io::Error::new(io::ErrorKind::InvalidInput, message)
        })?;
    config.alpn_protocols = if http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// Accepts connections until dropped (which closes them all), numbering them in accept order.
async fn accept(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    http1_only: bool,
) -> io::Result<()> {
    let mut connections = JoinSet::new();
    let mut number = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    number += 1;
                    tracing::debug!("kiln mock: connection {number} from {peer}");
                    let served = serve(stream, number, app.clone(), tls.clone(), http1_only);
                    connections.spawn(served);
                }
                Err(e) => {
                    // Out of file descriptors, or a connection gone before it was accepted:
                    // the listener stays, as axum's serve keeps it.
                    tracing::debug!("kiln mock: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves one connection (after its TLS handshake, if any) until it ends or a handler resets
/// it; a failed handshake drops it.
async fn serve(
    stream: TcpStream,
    number: u64,
    app: Router,
    tls: Option<TlsAcceptor>,
    http1_only: bool,
) {
    let _ = stream.set_nodelay(true);
    let reset = CancellationToken::new();
    let app = TowerToHyperService::new(app);
    let token = reset.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let connection = Connection {
            number,
            version: req.version(),
            reset: token.clone(),
        };
        CONNECTION.scope(connection, hyper::service::Service::call(&app, req))
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if http1_only {
        builder = builder.http1_only();
    }
    let served = match tls {
        None => {
            until_reset(
                builder.serve_connection(TokioIo::new(stream), service),
                &reset,
            )
            .await
        }
        Some(acceptor) => match acceptor.accept(stream).await {
            Ok(stream) => {
                let io = TokioIo::new(stream);
                until_reset(builder.serve_connection(io, service), &reset).await
            }
            Err(e) => {
                tracing::debug!("kiln mock: connection {number}: TLS handshake failed: {e}");
                return;
            }
        },
    };
    match served {
        Some(Err(e)) => tracing::debug!("kiln mock: connection {number}: {e}"),
        Some(Ok(())) => {}
        None => tracing::debug!("kiln mock: connection {number} closed (reset_connection)"),
    }
}

/// Drives a connection until it ends, or drops it (closing its socket, every stream on it
/// failing) once `reset` is cancelled: `None` then.
async fn until_reset<E>(
    connection: impl Future<Output = Result<(), E>>,
    reset: &CancellationToken,
) -> Option<Result<(), E>> {
    tokio::select! {
        biased;
        () = reset.cancelled() => None,
        r = connection => Some(r),
    }
}
