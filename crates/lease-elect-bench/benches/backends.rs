//! try_acquire_or_renew on the lock backends, against real servers.
//!
//! Run under `bash scripts/servers.sh cargo bench --bench backends`: each backend whose
//! server variable is set (`LEASE_ELECT_PG_URL`, `LEASE_ELECT_ETCD_ENDPOINT`,
//! `LEASE_ELECT_REDIS_URL`) is measured; the Kubernetes Lease lock runs against the loopback
//! API server of its tests. Two cases per backend:
//! - `leader`: the holder renews (one compare-and-swap `update`, client-go's fast path);
//! - `candidate`: another elector finds the lease held (one `get`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use lease_elect::{ElectionConfig, LeaderElector, ResourceLock};
use tokio::runtime::Runtime;

use lease_elect_kube::testing as apiserver;

fn name() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("bench-{}-{:x}", std::process::id(), nanos % (1 << 40))
}

fn elector(lock: Arc<dyn ResourceLock>) -> LeaderElector {
    LeaderElector::new(
        ElectionConfig::builder()
            .shared_lock(lock)
            .build()
            .expect("default timings are valid"),
    )
}

fn bench_lock<F>(c: &mut Criterion, rt: &Runtime, backend: &str, open: F)
where
    F: Fn(&str, &str) -> Arc<dyn ResourceLock>,
{
    let lock_name = name();
    let leader = elector(open(&lock_name, "leader"));
    let candidate = elector(open(&lock_name, "candidate"));
    assert!(
        rt.block_on(leader.try_acquire_or_renew())
            .unwrap_or_else(|e| panic!("{backend}: first acquire failed: {e}")),
        "{backend}: the first elector must lead"
    );
    assert!(
        !rt.block_on(candidate.try_acquire_or_renew())
            .unwrap_or_else(|e| panic!("{backend}: candidate attempt failed: {e}")),
        "{backend}: the second elector must not lead"
    );
    let mut group = c.benchmark_group(format!("try_acquire_or_renew/{backend}"));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("leader", |b| {
        b.iter(|| {
            assert!(rt.block_on(leader.try_acquire_or_renew()).expect("renew"));
        });
    });
    group.bench_function("candidate", |b| {
        b.iter(|| {
            assert!(
                !rt.block_on(candidate.try_acquire_or_renew())
                    .expect("attempt")
            );
        });
    });
    group.finish();
}

fn missing(var: &str) {
    eprintln!("backends bench: {var} is not set, skipped (run under scripts/servers.sh)");
}

fn backends(c: &mut Criterion) {
    let rt = Runtime::new().expect("a tokio runtime");

    match std::env::var("LEASE_ELECT_PG_URL") {
        Ok(url) => bench_lock(c, &rt, "postgres", |name, id| {
            Arc::new(
                lease_elect_postgres::PostgresLock::builder(&url, name, id)
                    .build()
                    .expect("a PostgresLock"),
            )
        }),
        Err(_) => missing("LEASE_ELECT_PG_URL"),
    }
    match std::env::var("LEASE_ELECT_ETCD_ENDPOINT") {
        Ok(endpoint) => bench_lock(c, &rt, "etcd", |name, id| {
            Arc::new(
                rt.block_on(
                    lease_elect_etcd::EtcdLock::builder([endpoint.as_str()], name, id).connect(),
                )
                .expect("an EtcdLock"),
            )
        }),
        Err(_) => missing("LEASE_ELECT_ETCD_ENDPOINT"),
    }
    match std::env::var("LEASE_ELECT_REDIS_URL") {
        Ok(url) => bench_lock(c, &rt, "redis", |name, id| {
            Arc::new(
                lease_elect_redis::RedisLock::builder(&url, name, id)
                    // scripts/servers.sh runs Redis without persistence.
                    .allow_without_persistence(true)
                    .build()
                    .expect("a RedisLock"),
            )
        }),
        Err(_) => missing("LEASE_ELECT_REDIS_URL"),
    }
    let server = rt.block_on(apiserver::ApiServer::start());
    let url = server.url();
    bench_lock(c, &rt, "kube-loopback", |name, id| {
        let _guard = rt.enter();
        let config = lease_elect_kube::kube::Config::new(url.parse().expect("url"));
        let client = lease_elect_kube::kube::Client::try_from(config).expect("a kube client");
        Arc::new(lease_elect_kube::LeaseLock::new(client, "bench", name, id))
    });
    drop(server);
}

criterion_group!(benches, backends);
criterion_main!(benches);
