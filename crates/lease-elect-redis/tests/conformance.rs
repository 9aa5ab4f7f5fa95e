//! The lease-elect conformance suite against a real Redis server.
//!
//! The server is the one named by `LEASE_ELECT_REDIS_URL` (see `scripts/servers.sh`); without
//! it the test starts its own `redis-server` on a free loopback port. Without either, the tests
//! fail under `CI` and are skipped loudly elsewhere.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_restart_outage};
use lease_elect::testing::process::{
    ServerCommand, ServerProcess, find_program, free_port, server_missing, wait_for_port,
};
use lease_elect::{LockError, ResourceLock};
use lease_elect_redis::{NoPersistence, RedisLock};

struct Factory {
    url: String,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            RedisLock::builder(&self.url, name, identity)
                // scripts/servers.sh runs Redis without persistence: accepted here; its
                // refusal is checked in redis_without_persistence_is_refused.
                .allow_without_persistence(true)
                .build()
                .expect("build a RedisLock"),
        )
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        let mut conn = raw_connection(self.url.as_str()).await;
        let key = format!("lease-elect:{{{name}}}");
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("42\n{not json")
            .query_async(&mut conn)
            .await
            .expect("SET");
        true
    }
}

/// A plain connection to the server at `url`, for what a test does behind the lock's back.
async fn raw_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// Starts `redis-server` on a free port (with the append-only file when `dir` is given).
fn start_redis(port: u16, dir: Option<&std::path::Path>) -> Option<ServerProcess> {
    let program = find_program("redis-server")?;
    let mut args = vec![
        "--port".to_owned(),
        port.to_string(),
        "--bind".to_owned(),
        "127.0.0.1".to_owned(),
        "--save".to_owned(),
        String::new(),
    ];
    match dir {
        Some(dir) => args.extend([
            "--dir".to_owned(),
            dir.display().to_string(),
            "--appendonly".to_owned(),
            "yes".to_owned(),
            "--appendfsync".to_owned(),
            "always".to_owned(),
        ]),
        None => args.extend([
            "--appendonly".to_owned(),
            "no".to_owned(),
            "--dir".to_owned(),
            std::env::temp_dir().display().to_string(),
        ]),
    }
    let server =
        ServerProcess::start(ServerCommand::new(program).args(args)).expect("spawn redis-server");
    wait_for_port(port, Duration::from_secs(10)).expect("redis-server did not start");
    Some(server)
}

async fn factory() -> Option<Factory> {
    if let Ok(url) = std::env::var("LEASE_ELECT_REDIS_URL") {
        return Some(Factory { url });
    }
    static OWN: OnceLock<Option<(ServerProcess, String)>> = OnceLock::new();
    let own = OWN.get_or_init(|| {
        let port = free_port();
        start_redis(port, None).map(|s| (s, format!("redis://127.0.0.1:{port}/")))
    });
    match own {
        Some((_, url)) => Some(Factory { url: url.clone() }),
        None => {
            server_missing(
                "no Redis server: LEASE_ELECT_REDIS_URL is not set and redis-server is not installed",
            );
            None
        }
    }
}

lease_elect::conformance_tests!(factory);

/// A Redis server of this test's own, with the append-only file, that the test stops and
/// starts.
struct OwnRedis {
    server: ServerProcess,
    port: u16,
}

impl ServerControl for OwnRedis {
    async fn stop(&mut self) {
        tokio::task::block_in_place(|| self.server.stop());
    }

    async fn start(&mut self) {
        tokio::task::block_in_place(|| {
            self.server.restart().expect("restart redis-server");
            wait_for_port(self.port, Duration::from_secs(10)).expect("redis-server restarts");
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("redis-data"));
    std::fs::create_dir_all(&dir).expect("create the data directory");
    let port = free_port();
    let Some(server) = start_redis(port, Some(&dir)) else {
        server_missing("redis-server is not installed: the fault test needs a server of its own");
        return;
    };
    let mut own = OwnRedis { server, port };
    let factory = Factory {
        url: format!("redis://127.0.0.1:{port}/"),
    };
    server_restart_outage(&factory, &mut own).await;
    drop(own);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that lost its data (here: both keys deleted) forgets the version counter; a handle
/// that saw a version still writes above it.
#[tokio::test]
async fn versions_stay_above_the_highest_seen_after_the_data_is_lost() {
    let Some(factory) = factory().await else {
        return;
    };
    let name = lease_elect::testing::unique_name("redis-floor");
    let lock = RedisLock::builder(&factory.url, &name, "a")
        // The server loses its data on purpose here.
        .allow_without_persistence(true)
        .build()
        .expect("build a RedisLock");
    let record = lease_elect::LeaderElectionRecord::new("a", 15, std::time::SystemTime::now());
    let mut last = lock.create(&record).await.expect("create");
    for _ in 0..3 {
        last = lock.update(&last, &record).await.expect("update");
    }
    let mut conn = raw_connection(factory.url.as_str()).await;
    let _: () = redis::cmd("DEL")
        .arg(format!("lease-elect:{{{name}}}"))
        .arg(format!("lease-elect:{{{name}}}:seq"))
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let recreated = lock.create(&record).await.expect("create again");
    assert!(
        recreated.sequence() > last.sequence(),
        "{recreated:?} after {last:?}"
    );
}

/// A server that lost its data: a handle started afterwards, which never saw a version, still
/// writes above every earlier version (the counter starts again at the server's clock), and a
/// counter set back below the clock (an RDB snapshot's) is moved past it.
#[tokio::test]
async fn a_fresh_handle_writes_above_a_lost_counter() {
    let Some(factory) = factory().await else {
        return;
    };
    let name = lease_elect::testing::unique_name("redis-fresh");
    let open = |identity: &str| {
        RedisLock::builder(&factory.url, &name, identity)
            .allow_without_persistence(true)
            .build()
            .expect("build a RedisLock")
    };
    let record = lease_elect::LeaderElectionRecord::new("a", 15, std::time::SystemTime::now());
    let old = open("a");
    let mut last = old.create(&record).await.expect("create");
    for _ in 0..3 {
        let next = old.update(&last, &record).await.expect("update");
        assert!(next.sequence() > last.sequence(), "{next:?} after {last:?}");
        last = next;
    }
    let mut conn = raw_connection(factory.url.as_str()).await;
    let record_key = format!("lease-elect:{{{name}}}");
    let seq_key = format!("lease-elect:{{{name}}}:seq");
    let _: () = redis::cmd("DEL")
        .arg(&record_key)
        .arg(&seq_key)
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let fresh = open("b");
    let created = fresh.create(&record).await.expect("create after the loss");
    assert!(
        created.sequence() > last.sequence(),
        "a fresh handle wrote {created:?} after {last:?}"
    );
    // A counter set back (a restart from an older snapshot) keeps no version from going back.
    let _: () = redis::cmd("SET")
        .arg(&seq_key)
        .arg(5)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let updated = open("c")
        .update(&created, &record)
        .await
        .expect("update after the counter went back");
    assert!(
        updated.sequence() > created.sequence(),
        "{updated:?} after {created:?}"
    );
    let stored: String = redis::cmd("GET")
        .arg(&seq_key)
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(
        stored.parse::<u64>().ok(),
        updated.sequence(),
        "the counter is left at the version written"
    );
}

/// Coordinated election on Redis: candidates in `RedisCandidates`, electors and the
/// coordinator on `RedisLock`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election() {
    // Fails, never skips, without a server.
    let factory = factory()
        .await
        .expect("a Redis server for the coordinated-election check");
    const TTL: Duration = Duration::from_secs(2);
    let election = lease_elect::testing::unique_name("cle");
    let candidates =
        lease_elect_redis::RedisCandidates::new(&factory.url, &election, TTL).expect("candidates");
    let report = lease_elect::testing::coordinated::coordinated_election(
        &factory,
        Arc::new(candidates),
        TTL,
        Timing::default(),
    )
    .await;
    println!("{report:?}");
}

/// The shared server of `scripts/servers.sh` runs without persistence (`--save ''
/// --appendonly no`): a handle that did not opt in refuses it on its first call, saying why,
/// and the error is permanent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_without_persistence_is_refused() {
    let Some(factory) = factory().await else {
        return;
    };
    let name = lease_elect::testing::unique_name("redis-no-persistence");
    let lock = RedisLock::builder(&factory.url, &name, "a")
        .build()
        .expect("build a RedisLock");
    let err = lock.get().await.expect_err("a server without persistence");
    assert!(!err.is_retryable(), "{err}");
    let LockError::Backend { source, .. } = &err else {
        panic!("expected a backend error, got {err}");
    };
    let refusal = source
        .downcast_ref::<NoPersistence>()
        .expect("a NoPersistence source");
    assert!(refusal.detail.contains("appendonly no"), "{refusal}");
    assert!(refusal.to_string().contains("allow_without_persistence"));
    // Nothing was written.
    let opted_in = RedisLock::builder(&factory.url, &name, "b")
        .allow_without_persistence(true)
        .build()
        .expect("build a RedisLock");
    assert!(opted_in.get().await.expect("get").is_none());
}
