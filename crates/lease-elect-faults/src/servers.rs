//! Servers of a scenario's own, for the faults that stop or restart the server.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use lease_elect::testing::process::{
    ServerCommand, ServerProcess, StopSignal, find_program, free_port, wait_for_port,
};

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
    Ok(server)
}

/// A single-member `etcd` on free ports, killed (SIGKILL) on stop; its data survives.
///
/// # Errors
/// When `etcd` is missing or does not start.
pub fn etcd() -> Result<OwnServer, String> {
    let program = find_program("etcd").ok_or("etcd is not installed")?;
    let (client, peer) = (free_port(), free_port());
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
    Ok(server)
}

fn pg_bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LEASE_ELECT_PG_BINDIR") {
        return Some(PathBuf::from(dir));
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| d.join("initdb").exists() && d.join("postgres").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn id_of(user: &str, flag: &str) -> Option<u32> {
    let out = Command::new("id").arg(flag).arg(user).output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

/// When we are root: the unprivileged user PostgreSQL runs as (`LEASE_ELECT_PG_USER`, or
/// `leaseelect`, or `postgres`).
fn pg_user() -> Result<Option<(u32, u32)>, String> {
    use std::os::unix::fs::MetadataExt as _;
    let me = std::fs::metadata("/proc/self")
        .map_err(|e| e.to_string())?
        .uid();
    if me != 0 {
        return Ok(None);
    }
    let candidates = std::env::var("LEASE_ELECT_PG_USER")
        .into_iter()
        .chain(["leaseelect".to_owned(), "postgres".to_owned()]);
    for user in candidates {
        if let (Some(uid), Some(gid)) = (id_of(&user, "-u"), id_of(&user, "-g")) {
            return Ok(Some((uid, gid)));
        }
    }
    Err("running as root, but no unprivileged user to run PostgreSQL as".to_owned())
}

/// PostgreSQL on a free port with a fresh data directory, stopped with a fast shutdown
/// (SIGINT); its data survives a restart.
///
/// # Errors
/// When PostgreSQL is missing or does not start.
pub fn postgres() -> Result<OwnServer, String> {
    let bin = pg_bindir().ok_or("PostgreSQL is not installed")?;
    let user = pg_user()?;
    let dir = data_dir("faults-pg");
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "-A", "trust", "-N", "--no-instructions"])
        .stdout(std::process::Stdio::null());
    if let Some((uid, gid)) = user {
        use std::os::unix::process::CommandExt as _;
        initdb.uid(uid).gid(gid);
    }
    let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let port = free_port();
    let mut command = ServerCommand::new(bin.join("postgres"))
        .args([
            "-D".to_owned(),
            data.display().to_string(),
            "-p".to_owned(),
            port.to_string(),
            "-k".to_owned(),
            dir.display().to_string(),
        ])
        .args(
            [
                "listen_addresses=127.0.0.1",
                "fsync=off",
                "synchronous_commit=off",
                "full_page_writes=off",
            ]
            .iter()
            .flat_map(|s| ["-c".to_owned(), (*s).to_owned()]),
        )
        .log(dir.join("server.log"))
        .stop_signal(StopSignal::Int)
        .remove_on_exit(&dir);
    if let Some((uid, gid)) = user {
        command = command.user(uid, gid);
    }
    let process = ServerProcess::start(command).map_err(|e| format!("start postgres: {e}"))?;
    let server = OwnServer {
        process,
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        port,
    };
    server.wait_ready(Duration::from_secs(20))?;
    Ok(server)
}
