//! Servers of a scenario's own, for the faults that stop or restart the server.

use std::path::PathBuf;
use std::time::Duration;

use lease_elect::testing::process::{
    ServerCommand, ServerProcess, StopSignal, find_program, free_port, postgres_command,
    wait_for_port,
};

/// Starts a server, again on other free ports when it does not come up (another process may
/// take a port between `free_port` and the server's bind).
fn with_retries(start: impl Fn() -> Result<OwnServer, String>) -> Result<OwnServer, String> {
    let mut last = String::new();
    for _ in 0..3 {
        match start() {
            Ok(server) => return Ok(server),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A server started for one scenario: the process, its URL (or endpoint) and its port.
pub struct OwnServer {
    /// The process; stop and restart it.
    pub process: ServerProcess,
    /// The URL the locks use.
    pub url: String,
    /// The port it listens on.
    pub port: u16,
}

impl OwnServer {
    /// Waits until the server accepts connections again (after a restart).
    ///
    /// # Errors
    /// When it does not within `limit`.
    pub fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        wait_for_port(self.port, limit).map_err(|e| format!("the server did not start: {e}"))
    }
}

fn data_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name(prefix));
    std::fs::create_dir_all(&dir).expect("create the data directory");
    dir
}

/// `redis-server` on a free port; with `persist`, with the append-only file fsynced on every
/// write (a restart keeps the data), else without any persistence (a restart loses it).
///
/// # Errors
/// When `redis-server` is missing or does not start.
pub fn redis(persist: bool) -> Result<OwnServer, String> {
    with_retries(|| redis_once(persist))
}

fn redis_once(persist: bool) -> Result<OwnServer, String> {
    let program = find_program("redis-server").ok_or("redis-server is not installed")?;
    let port = free_port();
    let dir = data_dir("faults-redis");
    let mut args = vec![
        "--port".to_owned(),
        port.to_string(),
        "--bind".to_owned(),
        "127.0.0.1".to_owned(),
        "--save".to_owned(),
        String::new(),
        "--dir".to_owned(),
        dir.display().to_string(),
    ];
    if persist {
        args.extend(["--appendonly", "yes", "--appendfsync", "always"].map(str::to_owned));
    } else {
        args.extend(["--appendonly", "no"].map(str::to_owned));
    }
    let process = ServerProcess::start(
        ServerCommand::new(program)
            .args(args)
            .stop_signal(StopSignal::Kill)
            .remove_on_exit(&dir),
    )
    .map_err(|e| format!("start redis-server: {e}"))?;
    let server = OwnServer {
        process,
        url: format!("redis://127.0.0.1:{port}/"),
        port,
    };
    server.wait_ready(Duration::from_secs(10))?;
    // What accepted the connection may be another process that took the port first.
    redis_pong(port)?;
    Ok(server)
}

/// Whether the server on `port` answers a Redis PING.
fn redis_pong(port: u16) -> Result<(), String> {
    use std::io::{Read as _, Write as _};
    let failed = |e: std::io::Error| format!("redis-server on port {port} does not answer: {e}");
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(failed)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(failed)?;
    stream.write_all(b"PING\r\n").map_err(failed)?;
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).map_err(failed)?;
    if &reply == b"+PONG\r\n" {
        Ok(())
    } else {
        Err(format!(
            "the server on port {port} is not redis-server: it answered {:?}",
            String::from_utf8_lossy(&reply)
        ))
    }
}

/// A single-member `etcd` on free ports, killed (SIGKILL) on stop; its data survives.
///
/// # Errors
/// When `etcd` is missing or does not start.
pub fn etcd() -> Result<OwnServer, String> {
    with_retries(etcd_once)
}

fn etcd_once() -> Result<OwnServer, String> {
    let program = find_program("etcd").ok_or("etcd is not installed")?;
    let (client, peer) = loop {
        let (client, peer) = (free_port(), free_port());
        if client != peer {
            break (client, peer);
        }
    };
    let dir = data_dir("faults-etcd");
    let endpoint = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let args = [
        "--name",
        "f",
        "--data-dir",
        &dir.join("data").display().to_string(),
        "--listen-client-urls",
        &endpoint,
        "--advertise-client-urls",
        &endpoint,
        "--listen-peer-urls",
        &peer_url,
        "--initial-advertise-peer-urls",
        &peer_url,
        "--initial-cluster",
        &format!("f={peer_url}"),
        "--unsafe-no-fsync",
        "--log-level",
        "error",
    ]
    .map(str::to_owned);
    let process = ServerProcess::start(
        ServerCommand::new(program)
            .args(args)
            .stop_signal(StopSignal::Kill)
            .remove_on_exit(&dir),
    )
    .map_err(|e| format!("start etcd: {e}"))?;
    let server = OwnServer {
        process,
        url: endpoint,
        port: client,
    };
    server.wait_ready(Duration::from_secs(10))?;
    // Something accepting on the port may not be this etcd (another process took the port
    // first, and this etcd exited): only etcd's own health answer counts.
    etcd_healthy(client, Duration::from_secs(10))?;
    Ok(server)
}

/// Waits until etcd's client port answers `GET /health` with `"health":"true"`.
fn etcd_healthy(port: u16, limit: Duration) -> Result<(), String> {
    use std::io::{Read, Write};
    let end = std::time::Instant::now() + limit;
    let mut last = String::new();
    while std::time::Instant::now() < end {
        let answer = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(1)))?;
            s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
            let mut body = String::new();
            s.read_to_string(&mut body)?;
            Ok(body)
        });
        match answer {
            Ok(body) if body.contains(r#""health":"true""#) => return Ok(()),
            Ok(body) => last = body.lines().next().unwrap_or_default().to_owned(),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("etcd on port {port} is not healthy: {last}"))
}

/// PostgreSQL on a free port with a fresh data directory, stopped with a fast shutdown
/// (SIGINT); its data survives a restart.
///
/// # Errors
/// When PostgreSQL is missing or does not start.
pub fn postgres() -> Result<OwnServer, String> {
    with_retries(postgres_once)
}

fn postgres_once() -> Result<OwnServer, String> {
    let (command, port) = postgres_command(&[])?.ok_or("PostgreSQL is not installed")?;
    let process = ServerProcess::start(command).map_err(|e| format!("start postgres: {e}"))?;
    let server = OwnServer {
        process,
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        port,
    };
    server.wait_ready(Duration::from_secs(20))?;
    Ok(server)
}
