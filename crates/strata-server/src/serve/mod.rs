//! Serving a router on a listener, over plain HTTP or TLS, HTTP/1 or
//! HTTP/2, with graceful shutdown; HTTP/1 request heads hyper would
//! refuse are rewritten first ([`heads`]), so that a GET query as long
//! as Prometheus takes (a megabyte) works.

mod heads;
mod oversize;
mod stream;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use self::stream::HeadRewriting;

/// Longest a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` (over TLS when `tls` is set) until `shutdown` resolves,
/// then lets open connections finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) {
    let app = app.layer(axum::middleware::from_fn(oversize::restore));
    let acceptor = tls.map(TlsAcceptor::from);
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Room for the largest head the scanner hands on, query header and all.
    builder.http1().max_buf_size(heads::MAX_HEAD + (64 << 10));
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little
                    // rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (acceptor, app, builder) = (acceptor.clone(), app.clone(), builder.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Some(acceptor) = acceptor else {
                return connection(&builder, stream, app, watcher, peer).await;
            };
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => connection(&builder, tls, app, watcher, peer).await,
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Serves one connection's requests until it closes.
async fn connection<S>(
    builder: &auto::Builder<TokioExecutor>,
    io: S,
    app: Router,
    watcher: hyper_util::server::graceful::Watcher,
    peer: std::net::SocketAddr,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(HeadRewriting::new(io));
    // Handlers read the client's address as axum's `ConnectInfo` (the
    // authentication failure limiter counts by it).
    let app = tower::util::MapRequest::new(app, move |mut req: axum::http::Request<_>| {
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        req
    });
    let conn = builder.serve_connection(io, TowerToHyperService::new(app));
    if let Err(e) = watcher.watch(conn.into_owned()).await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
