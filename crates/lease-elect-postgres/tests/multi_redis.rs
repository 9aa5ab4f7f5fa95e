//! [`MultiLock`] over two real servers, as in a migration from Redis to PostgreSQL: a Redis
//! lock as the primary, a PostgreSQL lock as the secondary. The whole conformance suite, and
//! the migration's stages side by side on the servers.
//!
//! The servers are the ones named by `LEASE_ELECT_REDIS_URL` and `LEASE_ELECT_PG_URL` (run
//! under `bash scripts/servers.sh`). Without them the tests fail under `CI` and are skipped
//! loudly elsewhere.

use std::sync::Arc;
use std::time::Duration;

use lease_elect::testing::LockFactory;
use lease_elect::testing::process::server_missing;
use lease_elect::{ElectionConfig, LeaderElector, MultiLock, ResourceLock};
use lease_elect_postgres::PostgresLock;
use lease_elect_redis::RedisLock;

struct Factory {
    redis: String,
    pg: String,
}

impl Factory {
    fn redis(&self, name: &str, identity: &str) -> RedisLock {
        RedisLock::builder(&self.redis, name, identity)
            // scripts/servers.sh runs Redis without persistence.
            .allow_without_persistence(true)
            .build()
            .expect("build a RedisLock")
    }

    fn pg(&self, name: &str, identity: &str) -> PostgresLock {
        PostgresLock::builder(&self.pg, name, identity)
            .build()
            .expect("build a PostgresLock")
    }
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(MultiLock::new(
            self.redis(name, identity),
            self.pg(name, identity),
        ))
    }

    /// Redis's (the primary's): client-go's JSON, seconds.
    fn time_precision(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }
}

async fn factory() -> Option<Factory> {
    match (
        std::env::var("LEASE_ELECT_REDIS_URL"),
        std::env::var("LEASE_ELECT_PG_URL"),
    ) {
        (Ok(redis), Ok(pg)) => Some(Factory { redis, pg }),
        _ => {
            server_missing(
                "no Redis and PostgreSQL servers: LEASE_ELECT_REDIS_URL or LEASE_ELECT_PG_URL is not set",
            );
            None
        }
    }
}

lease_elect::conformance_tests!(factory);

fn elector(lock: impl ResourceLock + 'static) -> LeaderElector {
    LeaderElector::new(
        ElectionConfig::builder()
            .lock(lock)
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_secs(1))
            .retry_period(Duration::from_millis(200))
            // The first term at once: this checks the migration's stages, step by step.
            .absent_record_wait(false)
            .build()
            .expect("config"),
    )
}

/// The migration's stages on the servers: Redis alone (1) beside the multi-lock (2), then the
/// multi-lock beside PostgreSQL alone (3). In each pair the leader keeps leading and the other
/// follows it, and after the leader stops the other takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_redis_to_postgres() {
    let Some(f) = factory().await else {
        return;
    };
    let name = lease_elect::testing::unique_name("migrate");
    let old = elector(f.redis(&name, "old"));
    let mid = elector(MultiLock::new(f.redis(&name, "mid"), f.pg(&name, "mid")));
    let new = elector(f.pg(&name, "new"));
    let tick = Duration::from_millis(300);

    assert!(old.try_acquire_or_renew().await.unwrap());
    for _ in 0..10 {
        tokio::time::sleep(tick).await;
        assert!(
            old.try_acquire_or_renew().await.unwrap(),
            "stage 1 leader renews"
        );
        assert!(
            !mid.try_acquire_or_renew().await.unwrap(),
            "stage 2 follows"
        );
        assert_eq!(mid.leader().as_deref(), Some("old"));
    }
    // The stage-1 leader goes away: the multi-lock elector takes over and writes PostgreSQL.
    let mut took_over = false;
    for _ in 0..20 {
        tokio::time::sleep(tick).await;
        if mid.try_acquire_or_renew().await.unwrap() {
            took_over = true;
            break;
        }
    }
    assert!(took_over, "the multi-lock elector takes over");
    let (record, _) = f
        .pg(&name, "x")
        .get()
        .await
        .unwrap()
        .expect("PostgreSQL written");
    assert_eq!(record.holder_identity, "mid");
    for _ in 0..10 {
        tokio::time::sleep(tick).await;
        assert!(
            mid.try_acquire_or_renew().await.unwrap(),
            "stage 2 leader renews"
        );
        assert!(
            !new.try_acquire_or_renew().await.unwrap(),
            "stage 3 follows"
        );
        assert_eq!(new.leader().as_deref(), Some("mid"));
    }
    let mut took_over = false;
    for _ in 0..20 {
        tokio::time::sleep(tick).await;
        if new.try_acquire_or_renew().await.unwrap() {
            took_over = true;
            break;
        }
    }
    assert!(took_over, "the PostgreSQL-only elector takes over");
    // A multi-lock elector that starts now sees two holders and never takes over while the
    // PostgreSQL leader renews.
    let late = elector(MultiLock::new(f.redis(&name, "late"), f.pg(&name, "late")));
    for _ in 0..10 {
        tokio::time::sleep(tick).await;
        assert!(new.try_acquire_or_renew().await.unwrap());
        assert!(!late.try_acquire_or_renew().await.unwrap());
        assert_eq!(late.leader().as_deref(), Some(lease_elect::UNKNOWN_LEADER));
    }
}
