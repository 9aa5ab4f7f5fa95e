//! The exported metrics (feature `metrics`) after a simulated election: two electors on one
//! memory lock, with a failing renewal, a slow-path renewal and a takeover, in simulated time.

mod common;

use std::time::Duration;

use common::{CountingLock, sim_config};
use lease_elect::{
    ElectionConfig, ElectionMetrics, LeaderElector, LockError, MemoryStore, SimClock,
};
use prometheus_client::registry::Registry;

fn config(lock: CountingLock, name: &str, metrics: &ElectionMetrics) -> ElectionConfig {
    let base = sim_config(lock.clone(), 10);
    ElectionConfig::builder()
        .lock(lock)
        .clock(SimClock::new())
        .lease_duration(base.lease_duration())
        .renew_deadline(base.renew_deadline())
        .retry_period(base.retry_period())
        .seed(7)
        // The first term at once, as the expected metrics assume (client-go's behaviour).
        .absent_record_wait(false)
        .name(name)
        .metrics(metrics)
        .build()
        .expect("valid config")
}

/// The registry's text, with each run of samples sorted (a family keeps its label sets in
/// a hash map, so their order is not fixed).
fn text(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).expect("encode");
    let mut lines: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for line in out.lines() {
        if line.starts_with('#') {
            run.sort_unstable();
            lines.extend(run.drain(..).map(str::to_owned));
            lines.push(line.to_owned());
        } else {
            run.push(line);
        }
    }
    run.sort_unstable();
    lines.extend(run.drain(..).map(str::to_owned));
    lines.join("\n") + "\n"
}

/// The lines of `text` for `metric` (its samples, not HELP and TYPE).
fn samples(text: &str, metric: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(metric) && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn exported_text_after_a_simulated_election() {
    let mut registry = Registry::default();
    let metrics = ElectionMetrics::new();
    metrics.register(&mut registry);
    let store = MemoryStore::new("m");
    let a_lock = CountingLock::new(&store, "a");
    let a = LeaderElector::new(config(a_lock.clone(), "sched", &metrics));
    let b = LeaderElector::new(config(CountingLock::new(&store, "b"), "sched-b", &metrics));

    // Before anybody leads: both gauges are 0; families without a sample are not written.
    assert_eq!(
        text(&registry),
        "# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.\n\
         # TYPE leader_election_master_status gauge\n\
         leader_election_master_status{name=\"sched\"} 0\n\
         leader_election_master_status{name=\"sched-b\"} 0\n\
         # EOF\n"
    );

    // a leads and renews through run(): three renewals on the fast path.
    let work = lease_elect::on_leading(|guard| async move { guard.lost().await });
    let a2 = a.clone();
    let run = tokio::spawn(async move {
        a2.run(&work, tokio::time::sleep(Duration::from_secs(5)))
            .await
    });
    // Let b observe a.
    SimClock::advance(Duration::from_millis(100)).await;
    assert!(!b.try_acquire_or_renew().await.unwrap());
    run.await.unwrap();
    let t = text(&registry);
    assert_eq!(
        samples(&t, "leader_election_master_status"),
        [
            "leader_election_master_status{name=\"sched\"} 0",
            "leader_election_master_status{name=\"sched-b\"} 0"
        ],
        "a stopped leading when run() was cancelled"
    );
    assert_eq!(
        samples(&t, "leader_election_transitions"),
        ["leader_election_transitions_total{name=\"sched\"} 1"]
    );
    // The renew loop renews at once after acquiring and then every retry period (1 s): at 0,
    // 1, ..., 5 s (the renewal due at 5 s comes before the shutdown due then). Each takes no
    // simulated time.
    assert_eq!(
        samples(&t, "leader_election_renew_duration_seconds_count"),
        ["leader_election_renew_duration_seconds_count{name=\"sched\"} 6"]
    );
    assert!(samples(&t, "leader_election_renew_duration_seconds_sum")[0].ends_with(" 0.0"));
    assert!(samples(&t, "leader_election_slowpath").is_empty(), "{t}");

    // a leads again by hand; its optimistic write fails once: a slow-path renewal.
    assert!(a.try_acquire_or_renew().await.unwrap());
    a_lock.fail_when(|verb, n| {
        (verb == "update" && n == 0).then(|| LockError::retryable("injected"))
    });
    a_lock.calls.lock().unwrap().clear();
    SimClock::advance(Duration::from_secs(1)).await;
    assert!(a.try_acquire_or_renew().await.unwrap());
    let t = text(&registry);
    assert_eq!(
        samples(&t, "leader_election_slowpath"),
        ["leader_election_slowpath_total{name=\"sched\"} 1"]
    );
    assert_eq!(
        samples(&t, "leader_election_master_status"),
        [
            "leader_election_master_status{name=\"sched\"} 1",
            "leader_election_master_status{name=\"sched-b\"} 0"
        ]
    );

    // a runs; then its lock fails and it loses leadership at its renew deadline; b takes
    // over.
    let work = lease_elect::on_leading(|guard| async move { guard.lost().await });
    let a2 = a.clone();
    let run = tokio::spawn(async move { a2.run(&work, std::future::pending::<()>()).await });
    SimClock::advance(Duration::from_millis(100)).await;
    a_lock.fail_when(|_, _| Some(LockError::retryable("down")));
    let outcome = run.await.unwrap();
    assert_eq!(outcome, lease_elect::RunOutcome::LostLeadership);
    // b sees a's last record, and takes it over once it has not changed for the lease.
    assert!(!b.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_secs(10)).await;
    assert!(b.try_acquire_or_renew().await.unwrap());
    // The whole text: a started two terms; its renew loops renewed 7 times (6 in the first
    // run, 1 at the start of the second; the slow-path renewal by hand is not a renew loop's),
    // then failed 5 times until its renew deadline of 6 s; b leads now.
    assert_eq!(
        text(&registry),
        "# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.\n\
         # TYPE leader_election_master_status gauge\n\
         leader_election_master_status{name=\"sched\"} 0\n\
         leader_election_master_status{name=\"sched-b\"} 1\n\
         # HELP leader_election_slowpath Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.\n\
         # TYPE leader_election_slowpath counter\n\
         leader_election_slowpath_total{name=\"sched\"} 1\n\
         # HELP leader_election_transitions Total number of leadership terms this elector started.\n\
         # TYPE leader_election_transitions counter\n\
         leader_election_transitions_total{name=\"sched\"} 2\n\
         leader_election_transitions_total{name=\"sched-b\"} 1\n\
         # HELP leader_election_renew_duration_seconds Duration of the leader's successful lease renewals.\n\
         # TYPE leader_election_renew_duration_seconds histogram\n\
         leader_election_renew_duration_seconds_bucket{le=\"+Inf\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.001\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.002\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.004\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.008\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.016\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.032\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.064\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.128\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.256\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"0.512\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"1.024\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"16.384\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"2.048\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"4.096\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_bucket{le=\"8.192\",name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_count{name=\"sched\"} 7\n\
         leader_election_renew_duration_seconds_sum{name=\"sched\"} 0.0\n\
         # HELP leader_election_renew_failures Total number of the leader's renewal attempts that did not renew the lease.\n\
         # TYPE leader_election_renew_failures counter\n\
         leader_election_renew_failures_total{name=\"sched\"} 5\n\
         # EOF\n"
    );
}
