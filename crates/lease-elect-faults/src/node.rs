//! Election nodes as child processes (the `fault_node` binary).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// An event a node printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The node's identity.
    pub identity: String,
    /// `LEADING` or `STOPPED`.
    pub kind: String,
    /// The term's fencing token.
    pub token: u64,
    /// When (µs since the epoch).
    pub at_us: u64,
}

/// The signals the fault scenarios send to a node (SIGKILL goes through [`Node::kill`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGSTOP: the process is paused.
    Stop,
    /// SIGCONT: a paused process goes on.
    Cont,
    /// SIGINT: the node releases its lease and exits.
    Int,
}

/// How to start a node: `fault_node <backend> <target> <name> <identity> <store> <lease-s>
/// <renew-ms> <retry-ms>`.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// The `fault_node` binary.
    pub program: String,
    /// `file`, `etcd`, `redis` or `postgres`.
    pub backend: String,
    /// The lock file, endpoint or URL.
    pub target: String,
    /// The lock's name.
    pub name: String,
    /// The fenced store's address.
    pub store: String,
}

/// A running node.
pub struct Node {
    /// Its identity.
    pub identity: String,
    child: Child,
    pid: u32,
}

impl Node {
    /// Starts a node; its events go to `events`.
    ///
    /// # Panics
    /// When the binary cannot be started.
    pub fn start(
        spec: &NodeSpec,
        target: &str,
        identity: &str,
        events: &Arc<Mutex<Vec<Event>>>,
    ) -> Node {
        let mut child = Command::new(&spec.program)
            .args([
                spec.backend.as_str(),
                target,
                spec.name.as_str(),
                identity,
                spec.store.as_str(),
                "2",
                "1000",
                "200",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start fault_node");
        let pid = child.id().expect("node pid");
        let out = child.stdout.take().expect("node stdout");
        let events = events.clone();
        let id = identity.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let parts: Vec<&str> = line.split_whitespace().collect();
                if let [kind, token, at] = parts[..]
                    && let (Ok(token), Ok(at_us)) = (token.parse(), at.parse())
                {
                    events
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(Event {
                            identity: id.clone(),
                            kind: kind.to_owned(),
                            token,
                            at_us,
                        });
                }
            }
        });
        Node {
            identity: identity.to_owned(),
            child,
            pid,
        }
    }

    /// Sends `signal` to the node's process (by the `kill` system call: no `kill` program is
    /// needed on the machine).
    ///
    /// # Errors
    /// When the signal cannot be sent (the process has been reaped, say).
    pub fn signal(&self, signal: Signal) -> std::io::Result<()> {
        let pid = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| std::io::Error::other(format!("bad pid {}", self.pid)))?;
        let sig = match signal {
            Signal::Stop => rustix::process::Signal::STOP,
            Signal::Cont => rustix::process::Signal::CONT,
            Signal::Int => rustix::process::Signal::INT,
        };
        rustix::process::kill_process(pid, sig).map_err(std::io::Error::from)
    }

    /// Kills the node with SIGKILL and reaps it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// Stops the node gracefully (SIGINT: it releases the lease), waiting at most 2 s.
    pub async fn stop(&mut self) {
        // The node may have exited already; the wait below tells.
        let _ = self.signal(Signal::Cont);
        let _ = self.signal(Signal::Int);
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
