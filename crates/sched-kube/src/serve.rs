//! The HTTP endpoints kube-scheduler serves: `/healthz` (the process runs and, while it
//! leads, its lease is current), `/readyz` (a standby, or a leader whose watches have
//! listed everything) and `/metrics` (Prometheus text: the driver's, the elector's and the
//! watches' counters).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lease_elect::LeaderElector;
use prometheus_client::registry::Registry;

/// What the endpoints read.
pub(crate) struct Health {
    pub registry: Registry,
    /// Set while this replica leads and its watches have listed every kind.
    pub ready: AtomicBool,
    /// Set while this replica leads.
    pub leading: AtomicBool,
    pub elector: std::sync::OnceLock<LeaderElector>,
}

/// How long past its lease a leader may be before `/healthz` fails (kube-scheduler's
/// leader-election health check allows 20 s).
const MAX_EXPIRED_LEASE: Duration = Duration::from_secs(20);

impl Health {
    fn answer(&self, path: &str) -> (u16, String) {
        match path {
            "/healthz" | "/livez" => match self.elector.get().map(|e| e.check(MAX_EXPIRED_LEASE)) {
                Some(Err(e)) => (500, format!("leaderElection check failed: {e}\n")),
                _ => (200, "ok".into()),
            },
            "/readyz" => {
                if self.leading.load(Ordering::Relaxed) && !self.ready.load(Ordering::Relaxed) {
                    (500, "watches not synced yet\n".into())
                } else {
                    (200, "ok".into())
                }
            }
            "/metrics" => {
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &self.registry) {
                    Ok(()) => (200, text),
                    Err(e) => (500, e.to_string()),
                }
            }
            _ => (404, "not found\n".into()),
        }
    }
}

/// Serves `health` on `addr` until the process ends; returns the bound address (port 0
/// picks one).
pub(crate) async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let health = health.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let (status, body) = health.answer(req.uri().path());
                    let kind = if req.uri().path() == "/metrics" {
                        "application/openmetrics-text; version=1.0.0; charset=utf-8"
                    } else {
                        "text/plain; charset=utf-8"
                    };
                    let response = Response::builder()
                        .status(status)
                        .header("content-type", kind)
                        .body(Full::new(Bytes::from(body)))
                        .unwrap_or_default();
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
