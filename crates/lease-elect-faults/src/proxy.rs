//! A loopback TCP proxy that injects faults into the connections passing through it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does to traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forwards everything at once.
    Pass,
    /// Delays every chunk sent towards the server by this long (so each round trip takes
    /// this much longer), keeping the order.
    Latency(Duration),
    /// Reads and drops everything, in both directions; connections stay open.
    Blackhole,
    /// Closes every connection at once and every new one on accept.
    Reset,
}

/// A proxy from a free loopback port to `upstream`.
#[derive(Clone)]
pub struct Proxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    /// Bumped to close every current connection.
    epoch: Arc<watch::Sender<u64>>,
    upstream: Arc<Mutex<SocketAddr>>,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let proxy = Proxy {
            addr: listener.local_addr().expect("proxy address"),
            mode: Arc::new(watch::channel(Mode::Pass).0),
            epoch: Arc::new(watch::channel(0).0),
            upstream: Arc::new(Mutex::new(upstream)),
        };
        let p = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let _ = client.set_nodelay(true);
                if *p.mode.borrow() == Mode::Reset {
                    drop(client);
                    continue;
                }
                tokio::spawn(p.clone().serve(client));
            }
        });
        proxy
    }

    /// The address clients connect to.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Switches the mode; `Reset` also closes every open connection.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
        if mode == Mode::Reset {
            self.epoch.send_modify(|e| *e += 1);
        }
    }

    /// Closes every open connection (clients reconnect through the proxy).
    pub fn reset_connections(&self) {
        self.epoch.send_modify(|e| *e += 1);
    }

    async fn serve(self, client: TcpStream) {
        let upstream = *self
            .upstream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Ok(server) = TcpStream::connect(upstream).await else {
            return;
        };
        let _ = server.set_nodelay(true);
        let mut epoch = self.epoch.subscribe();
        epoch.borrow_and_update();
        let (cr, cw) = client.into_split();
        let (sr, sw) = server.into_split();
        let up = pump(cr, sw, self.mode.subscribe(), true);
        let down = pump(sr, cw, self.mode.subscribe(), false);
        tokio::select! {
            () = up => {}
            () = down => {}
            _ = epoch.changed() => {}
        }
        // Dropping both halves closes both connections.
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
    mode: watch::Receiver<Mode>,
    towards_server: bool,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let writer = async move {
        let mut to = to;
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let now = tokio::time::Instant::now();
            let at = match *mode.borrow() {
                Mode::Pass => now,
                Mode::Latency(d) if towards_server => now + d,
                Mode::Latency(_) => now,
                Mode::Blackhole => continue,
                Mode::Reset => return,
            };
            if tx.send((at, buf[..n].to_vec())).is_err() {
                return;
            }
        }
    };
    tokio::join!(reader, writer);
}
