//! Test servers as child processes: started from the test, stopped and restarted by it (for
//! the fault checks), and never outliving it.
//!
//! A server runs under a small `sh` wrapper that holds a pipe from the test process on its
//! standard input. When the test process exits for any reason (even `SIGKILL` or a panic in
//! a static's constructor) the pipe closes, and the wrapper stops the server. So no server is
//! left behind by a crashed test run.

use std::io::{self, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The signal the wrapper sends to stop a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopSignal {
    /// `SIGTERM`: the usual graceful stop (Redis, etcd).
    Term,
    /// `SIGINT`: PostgreSQL's fast shutdown.
    Int,
    /// `SIGKILL`: a crash.
    Kill,
}

impl StopSignal {
    fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "TERM",
            StopSignal::Int => "INT",
            StopSignal::Kill => "KILL",
        }
    }
}

/// How to start a server: program, arguments, the user to run as, the log file.
#[derive(Clone, Debug)]
pub struct ServerCommand {
    program: PathBuf,
    args: Vec<String>,
    user: Option<(u32, u32)>,
    log: Option<PathBuf>,
    stop: StopSignal,
    remove: Option<PathBuf>,
}

impl ServerCommand {
    /// `program` with no arguments, run as the current user, stopped with `SIGTERM`.
    #[must_use]
    pub fn new(program: impl Into<PathBuf>) -> Self {
        ServerCommand {
            program: program.into(),
            args: Vec::new(),
            user: None,
            log: None,
            stop: StopSignal::Term,
            remove: None,
        }
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs the server as this user and group id (PostgreSQL refuses to run as root).
    #[must_use]
    pub fn user(mut self, uid: u32, gid: u32) -> Self {
        self.user = Some((uid, gid));
        self
    }

    /// Appends the server's output to this file (default: discarded).
    #[must_use]
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// A directory (the server's data) to remove when the server stops for good: on drop of
    /// the [`ServerProcess`] or when the test process exits, not on [`ServerProcess::stop`],
    /// which keeps the data for a restart.
    #[must_use]
    pub fn remove_on_exit(mut self, dir: impl Into<PathBuf>) -> Self {
        self.remove = Some(dir.into());
        self
    }

    /// The signal [`ServerProcess::stop`] sends.
    #[must_use]
    pub fn stop_signal(mut self, signal: StopSignal) -> Self {
        self.stop = signal;
        self
    }
}

/// A running server started by [`ServerProcess::start`]; stopped on [`stop`](Self::stop), on
/// drop, and when the test process exits.
#[derive(Debug)]
pub struct ServerProcess {
    command: ServerCommand,
    child: Option<Child>,
}

impl ServerProcess {
    /// Starts the server. It is not yet ready to answer: poll it (see [`wait_for_port`]).
    ///
    /// # Errors
    /// When the wrapper cannot be spawned.
    pub fn start(command: ServerCommand) -> io::Result<Self> {
        let mut server = ServerProcess {
            command,
            child: None,
        };
        server.restart()?;
        Ok(server)
    }

    /// Starts the server again after [`stop`](Self::stop) (same program, arguments, data).
    /// Does nothing when it runs.
    ///
    /// # Errors
    /// When the wrapper cannot be spawned.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        let c = &self.command;
        // `stop` keeps the data; anything else (drop, or EOF when the test process died)
        // removes the data directory, if one was given.
        let script = format!(
            "\"$@\" & pid=$!; read -r what; kill -{sig} \"$pid\" 2>/dev/null; wait \"$pid\"; \
             if [ \"$what\" != stop ] && [ -n \"$REMOVE_DIR\" ]; then rm -rf \"$REMOVE_DIR\"; fi",
            sig = c.stop.name()
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .arg("lease-elect-test-server")
            .env("REMOVE_DIR", c.remove.as_deref().unwrap_or(Path::new("")))
            .arg(&c.program)
            .args(&c.args)
            .stdin(Stdio::piped());
        match &c.log {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                cmd.stdout(file.try_clone()?).stderr(file);
            }
            None => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        if let Some((uid, gid)) = c.user {
            use std::os::unix::process::CommandExt as _;
            cmd.uid(uid).gid(gid);
        }
        self.child = Some(cmd.spawn()?);
        Ok(())
    }

    /// Stops the server with its stop signal and waits until it has exited. Its data stays
    /// for [`restart`](Self::restart).
    pub fn stop(&mut self) {
        self.end(b"stop\n");
    }

    fn end(&mut self, what: &[u8]) {
        if let Some(mut child) = self.child.take() {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(what);
            }
            let _ = child.wait();
        }
    }

    /// Whether the server was started and not stopped.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.end(b"exit\n");
        if let Some(dir) = &self.command.remove {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it).
///
/// # Panics
/// When no port can be bound.
#[must_use]
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// Waits until something accepts TCP connections on 127.0.0.1:`port`, at most `limit`.
///
/// A connection to itself does not count: with nothing listening on a port of the ephemeral
/// range (where [`free_port`] finds ports), Linux may pick that very port as the source and
/// connect the socket to itself, which also holds the port so the server cannot bind it.
///
/// # Errors
/// When nothing accepted within `limit`.
pub fn wait_for_port(port: u16, limit: Duration) -> io::Result<()> {
    let start = Instant::now();
    loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) if is_self_connection(&stream) => {
                drop(stream);
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() >= limit => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Whether a TCP connection is a socket connected to itself (TCP simultaneous open).
fn is_self_connection(stream: &std::net::TcpStream) -> bool {
    matches!((stream.local_addr(), stream.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

/// Finds `program` in `PATH` (or checks it when it contains a `/`).
#[must_use]
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Reports that a test cannot find its server (`what` says which and how to get it).
///
/// With the environment variable `CI` set (to anything but `false` or `0`) this panics: in
/// CI a backend test without its server fails, it never passes silently. Elsewhere it prints a
/// loud `SKIPPED` line to the terminal (not captured by the test harness), so a developer
/// without the server can still run `cargo test`.
///
/// # Panics
/// Under `CI`, always.
pub fn server_missing(what: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "{what}; CI is set, so this test fails instead of skipping (run it under scripts/servers.sh)"
    );
    let _ = writeln!(
        io::stderr().lock(),
        "\n*** SKIPPED: {what}. Run the tests under `bash scripts/servers.sh` (or set CI=1 to make this fail). ***"
    );
}

/// The newest PostgreSQL server bin directory (`LEASE_ELECT_PG_BINDIR`, else Debian's
/// `/usr/lib/postgresql/<version>/bin`), or `None` when PostgreSQL is not installed.
#[must_use]
pub fn postgres_bindir() -> Option<PathBuf> {
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
/// `leaseelect`, or `postgres`), as (uid, gid); `None` when we are not root.
///
/// # Errors
/// When we are root and no such user exists.
pub fn postgres_user() -> Result<Option<(u32, u32)>, String> {
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

/// A throw-away PostgreSQL server, ready to start: a fresh data directory under the system's
/// temporary directory (removed when the process ends), `initdb` run (as an unprivileged user
/// when we are root), listening on a free loopback port with durability switched off and
/// these extra `-c` settings, stopped with a fast shutdown (SIGINT). Returns the command and
/// the port, or `Ok(None)` when PostgreSQL is not installed.
///
/// # Errors
/// When `initdb` fails or the directory cannot be prepared.
pub fn postgres_command(settings: &[&str]) -> Result<Option<(ServerCommand, u16)>, String> {
    let Some(bin) = postgres_bindir() else {
        return Ok(None);
    };
    let user = postgres_user()?;
    let dir = std::env::temp_dir().join(super::unique_name("pg-data"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "-A", "trust", "-N", "--no-instructions"])
        .stdout(Stdio::null());
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
            .chain(settings)
            .flat_map(|s| ["-c".to_owned(), (*s).to_owned()]),
        )
        .log(dir.join("server.log"))
        .stop_signal(StopSignal::Int)
        .remove_on_exit(&dir);
    if let Some((uid, gid)) = user {
        command = command.user(uid, gid);
    }
    Ok(Some((command, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_connected_to_itself_is_not_a_server() {
        use socket2::{Domain, Socket, Type};
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
        socket
            .bind(
                &"127.0.0.1:0"
                    .parse::<std::net::SocketAddr>()
                    .unwrap()
                    .into(),
            )
            .expect("bind");
        let own = socket.local_addr().unwrap().as_socket().unwrap();
        // Nothing listens on `own`; connecting to it from itself is a simultaneous open.
        socket.connect(&own.into()).expect("self-connect");
        let stream: std::net::TcpStream = socket.into();
        assert!(is_self_connection(&stream));

        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        assert!(!is_self_connection(&client));
        wait_for_port(port, Duration::from_secs(1)).expect("a listener answers");
    }
}
