//! Starts a throw-away PostgreSQL server for a test.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use lease_elect::testing::process::{
    ServerCommand, ServerProcess, StopSignal, free_port, wait_for_port,
};

/// The directory with `initdb` and `postgres`.
fn bindir() -> Option<PathBuf> {
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

/// When we are root: the unprivileged user to run PostgreSQL as (`LEASE_ELECT_PG_USER`, or
/// `leaseelect`, or `postgres`), as (uid, gid).
fn server_user() -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt as _;
    let me = std::fs::metadata("/proc/self").ok()?.uid();
    if me != 0 {
        return None;
    }
    let candidates = std::env::var("LEASE_ELECT_PG_USER")
        .into_iter()
        .chain(["leaseelect".to_owned(), "postgres".to_owned()]);
    for user in candidates {
        if let (Some(uid), Some(gid)) = (id_of(&user, "-u"), id_of(&user, "-g")) {
            return Some((uid, gid));
        }
    }
    panic!("running as root, but no unprivileged user to run PostgreSQL as (create `leaseelect`)");
}

/// A PostgreSQL server of the test's own.
pub struct OwnPostgres {
    /// The server process (stop and restart it for fault tests).
    pub server: ServerProcess,
    /// Its URL.
    pub url: String,
    /// Its port.
    pub port: u16,
}

/// Starts PostgreSQL on a free loopback port with its data in a fresh temporary directory,
/// or returns `None` when PostgreSQL is not installed.
pub fn start_postgres() -> Option<OwnPostgres> {
    let bin = bindir()?;
    let user = server_user();
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("pg-data"));
    std::fs::create_dir_all(&dir).expect("create the data directory");
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the data directory");
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
    let out = initdb.output().expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
                "max_connections=200",
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
    let server = ServerProcess::start(command).expect("spawn postgres");
    wait_for_port(port, Duration::from_secs(20)).expect("postgres did not start");
    Some(OwnPostgres {
        server,
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        port,
    })
}
