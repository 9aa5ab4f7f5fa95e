//! The lease-elect conformance suite against a real etcd server.
//!
//! The server is the one named by `LEASE_ELECT_ETCD_ENDPOINT` (see `scripts/servers.sh`);
//! without it the test starts its own `etcd` on free loopback ports. Without either, the tests
//! fail under `CI` and are skipped loudly elsewhere.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lease_elect::ResourceLock;
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_outage};
use lease_elect::testing::process::{
    ServerCommand, ServerProcess, find_program, free_port, server_missing, wait_for_port,
};
use lease_elect_etcd::EtcdLock;

struct Factory {
    endpoint: String,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            EtcdLock::builder([self.endpoint.as_str()], name, identity)
                .connect()
                .await
                .expect("connect to etcd"),
        )
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        let mut client = etcd_client::Client::connect([self.endpoint.as_str()], None)
            .await
            .expect("connect to etcd");
        client
            .put(format!("/lease-elect/{name}"), "{not json", None)
            .await
            .expect("put");
        true
    }
}

/// Starts `etcd` with its data in `dir` on a free client port; returns the server and its
/// endpoint.
fn start_etcd(dir: &Path) -> Option<(ServerProcess, String, u16)> {
    let program = find_program("etcd")?;
    let (client, peer) = (free_port(), free_port());
    let endpoint = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let args = [
        "--name".to_owned(),
        "t".to_owned(),
        "--data-dir".to_owned(),
        dir.display().to_string(),
        "--listen-client-urls".to_owned(),
        endpoint.clone(),
        "--advertise-client-urls".to_owned(),
        endpoint.clone(),
        "--listen-peer-urls".to_owned(),
        peer_url.clone(),
        "--initial-advertise-peer-urls".to_owned(),
        peer_url.clone(),
        "--initial-cluster".to_owned(),
        format!("t={peer_url}"),
        "--unsafe-no-fsync".to_owned(),
        "--log-level".to_owned(),
        "error".to_owned(),
    ];
    let server = ServerProcess::start(ServerCommand::new(program).args(args).remove_on_exit(dir))
        .expect("spawn etcd");
    wait_for_port(client, Duration::from_secs(10)).expect("etcd did not start");
    Some((server, endpoint, client))
}

async fn factory() -> Option<Factory> {
    if let Ok(endpoint) = std::env::var("LEASE_ELECT_ETCD_ENDPOINT") {
        return Some(Factory { endpoint });
    }
    static OWN: OnceLock<Option<(ServerProcess, String, u16)>> = OnceLock::new();
    let own = OWN.get_or_init(|| {
        let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("etcd-data"));
        start_etcd(&dir)
    });
    match own {
        Some((_, endpoint, _)) => Some(Factory {
            endpoint: endpoint.clone(),
        }),
        None => {
            server_missing(
                "no etcd server: LEASE_ELECT_ETCD_ENDPOINT is not set and etcd is not installed",
            );
            None
        }
    }
}

lease_elect::conformance_tests!(factory);

/// An etcd server of this test's own, that the test stops and starts.
struct OwnEtcd {
    server: ServerProcess,
    port: u16,
}

impl ServerControl for OwnEtcd {
    async fn stop(&mut self) {
        tokio::task::block_in_place(|| self.server.stop());
    }

    async fn start(&mut self) {
        tokio::task::block_in_place(|| {
            self.server.restart().expect("restart etcd");
            wait_for_port(self.port, Duration::from_secs(10)).expect("etcd restarts");
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("etcd-data"));
    let Some((server, endpoint, port)) = start_etcd(&dir) else {
        server_missing("etcd is not installed: the fault test needs a server of its own");
        return;
    };
    let mut own = OwnEtcd { server, port };
    let factory = Factory { endpoint };
    let timing = Timing::default();
    let report = server_outage(
        &factory,
        &mut own,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound() + Duration::from_secs(1),
    )
    .await;
    println!("{report:?}");
}
