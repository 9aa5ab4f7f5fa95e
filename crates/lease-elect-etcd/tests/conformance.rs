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
use lease_elect::testing::election::{ServerControl, Timing, server_restart_outage};
use lease_elect::testing::process::{
    ServerCommand, ServerProcess, find_program, free_port, server_missing, wait_for_port,
};
use lease_elect_etcd::EtcdLock;

struct Factory {
    endpoint: String,
    owner_lease: Option<Duration>,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        let mut builder = EtcdLock::builder([self.endpoint.as_str()], name, identity);
        if let Some(ttl) = self.owner_lease {
            builder = builder.owner_lease(ttl);
        }
        Arc::new(builder.connect().await.expect("connect to etcd"))
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
        return Some(Factory {
            endpoint,
            owner_lease: None,
        });
    }
    static OWN: OnceLock<Option<(ServerProcess, String, u16)>> = OnceLock::new();
    let own = OWN.get_or_init(|| {
        let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("etcd-data"));
        start_etcd(&dir)
    });
    match own {
        Some((_, endpoint, _)) => Some(Factory {
            endpoint: endpoint.clone(),
            owner_lease: None,
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

/// The same factory, with an etcd owner lease attached to every write.
async fn owner_lease_factory() -> Option<Factory> {
    let mut f = factory().await?;
    f.owner_lease = Some(Duration::from_secs(5));
    Some(f)
}

/// The whole suite again with owner leases: they change nothing while holders live.
mod with_owner_lease {
    use super::owner_lease_factory;

    lease_elect::conformance_tests!(owner_lease_factory);
}

/// Leader for life on etcd: when the holder's process goes away (its handle is dropped, the
/// keep-alives stop), etcd deletes the record after the owner lease's TTL and a waiting
/// candidate becomes leader, with a larger fencing token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_lease_frees_a_dead_holders_lock() {
    let Some(f) = factory().await else {
        return;
    };
    let name = lease_elect::testing::unique_name("lfl");
    let ttl = Duration::from_secs(2);
    let open = |id: &str| {
        EtcdLock::builder([f.endpoint.as_str()], &name, id)
            .owner_lease(ttl)
            .connect()
    };
    let mut fast = lease_elect::Backoff::default();
    fast.initial = Duration::from_millis(100);
    fast.max = Duration::from_millis(300);
    let a = lease_elect::LeaderForLife::new(open("a").await.expect("connect")).with_backoff(fast);
    let (guard_a, _) = a.become_leader().await;
    let b = lease_elect::LeaderForLife::new(open("b").await.expect("connect")).with_backoff(fast);
    let waiting = tokio::spawn(async move {
        let (guard, _) = b.become_leader().await;
        (guard, std::time::Instant::now())
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !waiting.is_finished(),
        "nobody may lead while the holder lives"
    );
    let token_a = guard_a.token();
    drop(guard_a);
    drop(a); // the holder's process "dies": no more keep-alives
    let died = std::time::Instant::now();
    let (guard_b, led_at) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a candidate leads once the dead holder's lease expired")
        .expect("task");
    let after = led_at.duration_since(died);
    assert!(
        after >= Duration::from_millis(500),
        "the record must outlive its holder by about the TTL, not vanish at once ({after:?})"
    );
    assert!(guard_b.token() > token_a);
    println!(
        "leader-for-life fail-over after the holder died: {after:?} (owner lease TTL {ttl:?})"
    );
}

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
    let factory = Factory {
        endpoint,
        owner_lease: None,
    };
    server_restart_outage(&factory, &mut own).await;
}

/// Coordinated election on etcd: candidates in `EtcdCandidates`, electors and the coordinator
/// on `EtcdLock`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election() {
    // Fails, never skips, without a server.
    let factory = factory()
        .await
        .expect("a etcd server for the coordinated-election check");
    let client = etcd_client::Client::connect([factory.endpoint.as_str()], None)
        .await
        .expect("connect");
    const TTL: Duration = Duration::from_secs(2);
    let election = lease_elect::testing::unique_name("cle");
    let candidates = lease_elect_etcd::EtcdCandidates::new(client, &election, TTL);
    let report = lease_elect::testing::coordinated::coordinated_election(
        &factory,
        Arc::new(candidates),
        TTL,
        Timing::default(),
    )
    .await;
    println!("{report:?}");
}
