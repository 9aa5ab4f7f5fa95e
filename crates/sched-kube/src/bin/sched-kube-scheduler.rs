//! `sched-kube-scheduler`: sched-core's engine as a second scheduler on a Kubernetes API
//! server (see the `sched_kube` crate).
//!
//! ```text
//! sched-kube-scheduler [--config FILE] [--kubeconfig FILE] [--identity ID]
//!                      [--address HOST:PORT] [--max-concurrent-binds N]
//! ```
//! - `--config`: a `KubeSchedulerConfiguration` (kubescheduler.config.k8s.io/v1): profiles,
//!   extenders, `leaderElection`. Default: kube's defaults, one `default-scheduler` profile.
//! - `--kubeconfig`: the API server and credentials; default: in-cluster, else
//!   `$KUBECONFIG` or `~/.kube/config`.
//! - `--identity`: this replica's name in the Lease (default: the hostname and the start
//!   time in nanoseconds).
//! - `--address`: where `/healthz`, `/readyz` and `/metrics` are served (default
//!   `0.0.0.0:10251`; port 0 picks one, printed at start).
//!
//! Exits 0 after SIGTERM or SIGINT (a leader releases its Lease first), 1 when the lease
//! is lost or on an error, 2 on bad flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use sched_core::config::SchedulerConfiguration;
use sched_kube::{KubeScheduler, Options};

struct Flags {
    config: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
    identity: Option<String>,
    address: SocketAddr,
    max_concurrent_binds: usize,
}

fn parse_flags() -> Result<Flags, String> {
    let mut flags = Flags {
        config: None,
        kubeconfig: None,
        identity: None,
        address: SocketAddr::from(([0, 0, 0, 0], 10251)),
        max_concurrent_binds: 64,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--config" => flags.config = Some(value()?.into()),
            "--kubeconfig" => flags.kubeconfig = Some(value()?.into()),
            "--identity" => flags.identity = Some(value()?),
            "--address" => {
                let v = value()?;
                flags.address = v.parse().map_err(|e| format!("--address {v}: {e}"))?;
            }
            "--max-concurrent-binds" => {
                let v = value()?;
                flags.max_concurrent_binds =
                    v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        format!("--max-concurrent-binds {v}: not a positive number")
                    })?;
            }
            "-h" | "--help" => {
                return Err(
                    "usage: sched-kube-scheduler [--config FILE] [--kubeconfig FILE] \
                            [--identity ID] [--address HOST:PORT] [--max-concurrent-binds N]"
                        .into(),
                );
            }
            other => return Err(format!("unknown flag {other} (see --help)")),
        }
    }
    Ok(flags)
}

async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, String> {
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn run(flags: Flags) -> Result<(), String> {
    let config = match &flags.config {
        Some(path) => SchedulerConfiguration::from_file(path).map_err(|e| e.to_string())?,
        None => SchedulerConfiguration::v1_34_default(),
    };
    let identity = flags.identity.clone().unwrap_or_else(|| {
        // kube: the hostname and a UUID. A container's process ID is always 1, so the
        // start time makes the identity unique instead.
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("{}_{nanos:x}", host.trim())
    });
    let client = client(flags.kubeconfig.as_ref()).await?;
    let mut options = Options::new(config, identity.clone());
    options.max_concurrent_binds = flags.max_concurrent_binds;
    let scheduler = KubeScheduler::new(client, options).map_err(|e| e.to_string())?;
    let addr = scheduler
        .serve(flags.address)
        .await
        .map_err(|e| format!("--address {}: {e}", flags.address))?;
    println!("sched-kube-scheduler {identity} serving /healthz, /readyz, /metrics on {addr}");
    scheduler
        .run(shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::stderr)
        .init();
    let flags = match parse_flags() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(flags)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sched-kube-scheduler: {e}");
            ExitCode::FAILURE
        }
    }
}
