//! The lease-elect conformance suite against a real PostgreSQL server.
//!
//! The server is the one named by `LEASE_ELECT_PG_URL` (see `scripts/servers.sh`); without
//! it the test starts its own (`initdb` + `postgres` from `LEASE_ELECT_PG_BINDIR` or
//! `/usr/lib/postgresql/*/bin`, as an unprivileged user when run as root). Without either, the
//! tests fail under `CI` and are skipped loudly elsewhere.

mod pg;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lease_elect::ResourceLock;
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_restart_outage};
use lease_elect::testing::process::server_missing;
use lease_elect::testing::process::wait_for_port;
use lease_elect_postgres::PostgresLock;

struct Factory {
    url: String,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            PostgresLock::builder(&self.url, name, identity)
                .build()
                .expect("build a PostgresLock"),
        )
    }

    fn time_precision(&self) -> Duration {
        Duration::from_micros(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let n = client
            .execute(
                "UPDATE lease_elect_locks SET lease_duration_seconds = -1,
                 version = nextval('lease_elect_locks_version') WHERE name = $1",
                &[&name],
            )
            .await
            .expect("corrupt the row");
        assert_eq!(n, 1, "the row to corrupt must exist");
        true
    }
}

async fn factory() -> Option<Factory> {
    if let Ok(url) = std::env::var("LEASE_ELECT_PG_URL") {
        return Some(Factory { url });
    }
    static OWN: OnceLock<Option<pg::OwnPostgres>> = OnceLock::new();
    let own = OWN.get_or_init(pg::start_postgres);
    match own {
        Some(own) => Some(Factory {
            url: own.url.clone(),
        }),
        None => {
            server_missing(
                "no PostgreSQL server: LEASE_ELECT_PG_URL is not set and no initdb/postgres found",
            );
            None
        }
    }
}

lease_elect::conformance_tests!(factory);

impl ServerControl for pg::OwnPostgres {
    async fn stop(&mut self) {
        tokio::task::block_in_place(|| self.server.stop());
    }

    async fn start(&mut self) {
        tokio::task::block_in_place(|| {
            self.server.restart().expect("restart postgres");
            wait_for_port(self.port, Duration::from_secs(20)).expect("postgres restarts");
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let Some(mut own) = pg::start_postgres() else {
        server_missing("PostgreSQL is not installed: the fault test needs a server of its own");
        return;
    };
    let factory = Factory {
        url: own.url.clone(),
    };
    server_restart_outage(&factory, &mut own).await;
}

/// Coordinated election on PostgreSQL: candidates in `PostgresCandidates`, electors and the
/// coordinator on `PostgresLock`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election() {
    // Fails, never skips, without a server.
    let factory = factory()
        .await
        .expect("a PostgreSQL server for the coordinated-election check");
    const TTL: Duration = Duration::from_secs(2);
    let election = lease_elect::testing::unique_name("cle");
    let candidates = lease_elect_postgres::PostgresCandidates::new(&factory.url, election, TTL)
        .expect("candidates");
    let report = lease_elect::testing::coordinated::coordinated_election(
        &factory,
        Arc::new(candidates),
        TTL,
        Timing::default(),
    )
    .await;
    println!("{report:?}");
}
