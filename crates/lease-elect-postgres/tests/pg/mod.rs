//! Starts a throw-away PostgreSQL server for a test.

use std::time::Duration;

use lease_elect::testing::process::{ServerProcess, postgres_command, wait_for_port};

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
    let (command, port) =
        postgres_command(&["max_connections=200"]).expect("prepare PostgreSQL")?;
    let server = ServerProcess::start(command).expect("spawn postgres");
    wait_for_port(port, Duration::from_secs(20)).expect("postgres did not start");
    Some(OwnPostgres {
        server,
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        port,
    })
}
