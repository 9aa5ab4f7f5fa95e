//! An election node for the fault tests:
//!
//! ```text
//! fault_node <backend> <target> <name> <identity> <store-addr> <lease-s> <renew-ms> <retry-ms>
//! ```
//!
//! Backends: `file`, `etcd`, `redis`, `postgres` (target: the path, endpoint or URL),
//! `redis-postgres` (client-go's `MultiLock`, Redis primary and PostgreSQL secondary; target
//! `<redis-url>|<pg-url>`), and over a Kubernetes API server `lease`, `configmap`, `endpoints`
//! (client-go's annotation locks), `configmapsleases` and `endpointsleases` (the annotation lock
//! as primary, a Lease as secondary); the target is the URL of the loopback API server, or
//! `<url>|<token>|<ca-file>` for a real kube-apiserver (TLS, bearer token).
//!
//! It competes for the lock; while it leads it writes `W <identity> <token> <checked-µs>` to
//! the fenced store every 20 ms, each right after `guard.lost()` (polled first in a `biased`
//! select) said the term still holds; `checked-µs` is taken just before that last look, so
//! that the term held at that time. It
//! prints `LEADING <token> <µs>` and `STOPPED <token> <µs>` (µs since the epoch).

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use lease_elect::{
    ElectionConfig, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard, ResourceLock, RunOutcome,
};
use lease_elect_faults::now_us;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

fn say(kind: &str, token: u64) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{kind} {token} {}", now_us());
    let _ = out.flush();
}

struct Node {
    store: String,
}

#[lease_elect::async_trait]
impl LeaderCallbacks for Node {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        let token = guard.token().0;
        say("LEADING", token);
        let Ok(stream) = TcpStream::connect(&self.store).await else {
            eprintln!("{}: cannot reach the store", guard.identity());
            guard.lost().await;
            return;
        };
        let _ = stream.set_nodelay(true);
        let (read, mut write) = stream.into_split();
        let mut replies = BufReader::new(read).lines();
        loop {
            // No `is_valid` check: `lost()` alone must end the loop by the term's deadline,
            // also when a pause (SIGSTOP) made both branches ready at once.
            tokio::select! {
                biased;
                () = guard.lost() => break,
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            // The time is taken before the guard is looked at again: a pause (SIGSTOP)
            // between the two can then only make the stamp earlier than the check, never
            // later than the term's end.
            let checked = now_us();
            tokio::select! {
                biased;
                () = guard.lost() => break,
                () = std::future::ready(()) => {}
            }
            let line = format!("W {} {token} {checked}\n", guard.identity());
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
            if !matches!(replies.next_line().await, Ok(Some(_))) {
                break;
            }
        }
        say("STOPPED", token);
        guard.lost().await;
    }
}

/// A lock over the Kubernetes API server `target` (a URL, or `<url>|<token>|<ca-file>`), in
/// the namespace `kube-system`.
async fn kube_lock(
    kind: &str,
    target: &str,
    name: &str,
    identity: &str,
    timeout: Duration,
) -> Result<Arc<dyn ResourceLock>, Box<dyn std::error::Error>> {
    use lease_elect_kube::testing::apiserver::Connection;
    use lease_elect_kube::{ConfigMapLock, EndpointsLock, LeaseLock};
    let ns = "kube-system";
    let config = if target.contains('|') {
        Connection::from_target(target)?
            .config(ns, Some(timeout))
            .await?
    } else {
        let mut config = lease_elect_kube::kube::Config::new(target.parse()?);
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config
    };
    let client = lease_elect_kube::kube::Client::try_from(config)?;
    let configmap = || ConfigMapLock::new(client.clone(), ns, name, identity).with_timeout(timeout);
    let endpoints = || EndpointsLock::new(client.clone(), ns, name, identity).with_timeout(timeout);
    let lease = || LeaseLock::new(client.clone(), ns, name, identity).with_timeout(timeout);
    Ok(match kind {
        "lease" => Arc::new(lease()),
        "configmap" => Arc::new(configmap()),
        "endpoints" => Arc::new(endpoints()),
        "configmapsleases" => Arc::new(lease_elect::MultiLock::new(configmap(), lease())),
        _ => Arc::new(lease_elect::MultiLock::new(endpoints(), lease())),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 9 {
        eprintln!(
            "usage: fault_node <file|etcd|redis|postgres|redis-postgres|lease|configmap|endpoints|configmapsleases|endpointsleases> <target> <name> <identity> <store> <lease-s> <renew-ms> <retry-ms>"
        );
        std::process::exit(2);
    }
    let (backend, target, name, identity) = (&args[1], &args[2], &args[3], &args[4]);
    let timeout = Duration::from_millis(args[7].parse()?);
    let lock: Arc<dyn ResourceLock> = match backend.as_str() {
        "file" => Arc::new(
            FileLock::new(target, identity.clone()).with_poll_interval(Duration::from_millis(50)),
        ),
        "etcd" => Arc::new(
            lease_elect_etcd::EtcdLock::builder([target.as_str()], name, identity)
                .timeout(timeout)
                .connect()
                .await?,
        ),
        "redis" => Arc::new(
            lease_elect_redis::RedisLock::builder(target, name, identity)
                .timeout(timeout)
                // The suite runs Redis with and without persistence on purpose (a restart
                // without data); its fenced store judges what that allows.
                .allow_without_persistence(true)
                .build()?,
        ),
        "postgres" => Arc::new(
            lease_elect_postgres::PostgresLock::builder(target, name, identity)
                .timeout(timeout)
                .build()?,
        ),
        "redis-postgres" => {
            let (redis, pg) = target
                .split_once('|')
                .ok_or("target: <redis-url>|<pg-url>")?;
            Arc::new(lease_elect::MultiLock::new(
                lease_elect_redis::RedisLock::builder(redis, name, identity)
                    .timeout(timeout)
                    .allow_without_persistence(true)
                    .build()?,
                lease_elect_postgres::PostgresLock::builder(pg, name, identity)
                    .timeout(timeout)
                    .build()?,
            ))
        }
        "lease" | "configmap" | "endpoints" | "configmapsleases" | "endpointsleases" => {
            kube_lock(backend, target, name, identity, timeout).await?
        }
        other => return Err(format!("unknown backend {other}").into()),
    };
    let config = ElectionConfig::builder()
        .shared_lock(lock)
        .lease_duration(Duration::from_secs(args[6].parse()?))
        .renew_deadline(Duration::from_millis(args[7].parse()?))
        .retry_period(Duration::from_millis(args[8].parse()?))
        .release_on_cancel(true)
        .build()?;
    let elector = LeaderElector::new(config);
    let node = Node {
        store: args[5].clone(),
    };
    // After a lost term, compete again; SIGINT ends the node (releasing the lease).
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        let outcome = elector
            .run(&node, async {
                let _ = (&mut interrupt).await;
            })
            .await;
        if outcome == RunOutcome::Cancelled {
            return Ok(());
        }
    }
}
