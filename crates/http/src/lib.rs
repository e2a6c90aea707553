//! Serving an axum app on a TCP listener the way a server reachable from a network must: a
//! deadline for each request's headers (which also ends idle keep-alive connections), a
//! deadline for its body, a cap on open connections, and a graceful drain. `kiln serve` and
//! `kiln mcp --http` both serve through it.
//!
//! May depend on: no kiln crate (axum, hyper).

#![warn(missing_docs)]

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The limits of one HTTP door.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// How long a client may take to send a request's headers; a keep-alive connection that
    /// sends no next request within it is closed too.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// Open connections at most; one more is closed at once.
    pub max_connections: usize,
    /// The largest body read (a door may allow less).
    pub max_body: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_body: 4 << 20,
        }
    }
}

/// Connections the kernel may queue before the server accepts them.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` for a server: like `TcpListener::bind`, with a listen backlog of
/// [`LISTEN_BACKLOG`] (the kernel caps it at `net.core.somaxconn`) instead of 1024. A burst of
/// new clients past the backlog would have their connections' first packet dropped, and each
/// would wait a second for it to be sent again.
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // What `TcpListener::bind` does on Unix: a restarted server can bind its port at once.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `app` on `listener` until `stop` is cancelled; then stops accepting and returns once
/// every open connection has finished (callers bound the drain with a timeout).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let app = app.layer(axum::middleware::from_fn(move |req, next| {
        body_deadline(limits, req, next)
    }));
    let graceful = GracefulShutdown::new();
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: wait a little rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tracing::warn!(
                max = limits.max_connections,
                "connection refused: the server holds as many connections as it allows"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Reads a request's body within the body deadline and size limit before the handler sees
/// it: a client trickling its body is answered `408` instead of holding a task.
async fn body_deadline(limits: HttpLimits, req: Request, next: Next) -> Response {
    let bodyless = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .is_some_and(|v| v == "0")
        || matches!(
            *req.method(),
            axum::http::Method::GET | axum::http::Method::HEAD
        ) && !req
            .headers()
            .contains_key(axum::http::header::TRANSFER_ENCODING)
            && !req
                .headers()
                .contains_key(axum::http::header::CONTENT_LENGTH);
    if bodyless {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let read = axum::body::to_bytes(body, limits.max_body);
    match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(_)) => refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is over {} bytes", limits.max_body),
        ),
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} s",
                limits.body_timeout.as_secs_f64()
            ),
        ),
    }
}

/// A refusal before the app saw the request, in the JSON shape the doors' own errors have
/// (`{"error": {"message", "type", "param", "code"}}`, as OpenAI's).
fn refusal(status: StatusCode, message: &str) -> Response {
    let message = message.replace('\\', "\\\\").replace('"', "\\\"");
    let body = format!(
        r#"{{"error":{{"message":"{message}","type":"invalid_request_error","param":null,"code":null}}}}"#
    );
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Serves a one-route app on a loopback port with `limits`; the address and the stop.
    fn start(
        limits: HttpLimits,
    ) -> (
        std::net::SocketAddr,
        CancellationToken,
        std::thread::JoinHandle<()>,
    ) {
        let stop = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let token = stop.clone();
        let server = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                tx.send(listener.local_addr().expect("addr")).expect("send");
                let app = Router::new().route("/", axum::routing::get(|| async { "ok" }));
                serve(listener, app, limits, token).await.expect("serve");
            });
        });
        (rx.recv().expect("address"), stop, server)
    }

    #[test]
    fn a_request_is_answered_and_a_silent_client_is_closed_at_the_header_deadline() {
        let limits = HttpLimits {
            header_timeout: Duration::from_millis(200),
            ..HttpLimits::default()
        };
        let (addr, stop, server) = start(limits);
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        write!(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("send");
        let mut reply = String::new();
        c.read_to_string(&mut reply).expect("read");
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.ends_with("ok"), "{reply}");

        let mut silent = std::net::TcpStream::connect(addr).expect("connect");
        silent
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let started = std::time::Instant::now();
        let mut buf = [0u8; 64];
        // Closed by the server (end of stream), well before the test's own 5 s timeout.
        let n = silent.read(&mut buf).unwrap_or(0);
        assert!(n == 0 || String::from_utf8_lossy(&buf[..n]).contains("408"));
        assert!(started.elapsed() < Duration::from_secs(4));
        stop.cancel();
        server.join().expect("server stops");
    }

    #[test]
    fn a_body_over_the_limit_gets_a_json_error() {
        let limits = HttpLimits {
            max_body: 16,
            ..HttpLimits::default()
        };
        let (addr, stop, server) = start(limits);
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        let body = "x".repeat(64);
        write!(
            c,
            "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 64\r\n\r\n{body}"
        )
        .expect("send");
        let mut reply = String::new();
        c.read_to_string(&mut reply).expect("read");
        assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
        assert!(reply.contains("content-type: application/json"), "{reply}");
        assert!(
            reply.ends_with(
                r#"{"error":{"message":"the request body is over 16 bytes","type":"invalid_request_error","param":null,"code":null}}"#
            ),
            "{reply}"
        );
        stop.cancel();
        server.join().expect("server stops");
    }
}
