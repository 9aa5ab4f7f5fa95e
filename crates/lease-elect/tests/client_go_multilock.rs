//! A port of client-go's `testTryAcquireOrRenewMultiLock` table (leaderelection_test.go, run
//! there as `endpointsleases` and `configmapsleases`), in simulated time, over two memory
//! stores. Identity "baz" competes with "bing", as there; the expected outcome, holder and
//! transition of every case are client-go's.
//!
//! Differences, each deliberate:
//! - client-go sets the elector's observed record and time by hand; here the elector observes
//!   the records with a first attempt and simulated time moves past the lease ("unacked",
//!   client-go's observed time in the past) or not ("acked", in the future).
//! - client-go re-reads the secondary before writing it; this `MultiLock` compares and swaps
//!   it from the version it read, so the call lists below have no second secondary `get`.
//! - The records hold a lease of 10 s (client-go's are 0 s and its elector uses its own
//!   configured 10 s); this elector goes by the record's duration.

mod common;

use std::time::Duration;

use common::{CountingLock, held_by, sim_config};
use lease_elect::{
    LeaderElectionRecord, LeaderElector, MemoryStore, MultiLock, SimClock, UNKNOWN_LEADER,
};

struct Case {
    primary: Option<&'static str>,
    secondary: Option<&'static str>,
    /// The lease of the records has run out when the elector tries (client-go: observed time
    /// in the past).
    expired: bool,
    expect_success: bool,
    transition_leader: bool,
    out_holder: &'static str,
    /// Calls on (primary, secondary) during the deciding attempt.
    calls: (&'static [&'static str], &'static [&'static str]),
}

async fn run(name: &str, case: Case) {
    let (p_store, s_store) = (MemoryStore::new("p"), MemoryStore::new("s"));
    let record = |holder: &str| -> LeaderElectionRecord {
        if holder.is_empty() {
            LeaderElectionRecord::default()
        } else {
            held_by(holder, 10)
        }
    };
    if let Some(h) = case.primary {
        p_store.force(record(h));
    }
    if let Some(h) = case.secondary {
        s_store.force(record(h));
    }
    let (p, s) = (
        CountingLock::new(&p_store, "baz"),
        CountingLock::new(&s_store, "baz"),
    );
    let le = LeaderElector::new(sim_config(MultiLock::new(p.clone(), s.clone()), 10));
    let held = case.primary.is_some_and(|h| !h.is_empty());
    if held {
        // The elector observes the record first (client-go's observedRecord).
        assert!(!le.try_acquire_or_renew().await.unwrap(), "{name}");
        if case.expired {
            SimClock::advance(Duration::from_secs(10)).await;
        } else {
            SimClock::advance(Duration::from_secs(5)).await;
        }
        p.clear_calls();
        s.clear_calls();
    }
    let ok = le.try_acquire_or_renew().await.unwrap();
    assert_eq!(ok, case.expect_success, "{name}: success");
    assert_eq!(
        le.leader().as_deref(),
        Some(case.out_holder),
        "{name}: holder"
    );
    assert_eq!(
        (p.calls(), s.calls()),
        (
            case.calls
                .0
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            case.calls
                .1
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
        ),
        "{name}: calls"
    );
    if ok {
        let (pr, _) = p_store.peek().expect("primary");
        let (sr, _) = s_store.peek().expect("secondary");
        assert_eq!(pr, sr, "{name}: both records written alike");
        assert_eq!(
            pr.leader_transitions,
            u64::from(case.transition_leader),
            "{name}: transition"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn acquire_from_no_object() {
    run(
        "acquire from no object",
        Case {
            primary: None,
            secondary: None,
            expired: false,
            expect_success: true,
            transition_leader: false,
            out_holder: "baz",
            calls: (&["get", "create"], &["create"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_unled_old_object() {
    run(
        "acquire from unled old object",
        Case {
            primary: Some(""),
            secondary: None,
            expired: false,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: (&["get", "update"], &["get", "create"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_unled_transition_object() {
    run(
        "acquire from unled transition object",
        Case {
            primary: Some(""),
            secondary: Some(""),
            expired: false,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: (&["get", "update"], &["get", "update"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_led_unack_old_object() {
    run(
        "acquire from led, unack old object",
        Case {
            primary: Some("bing"),
            secondary: None,
            expired: true,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: (&["get", "update"], &["get", "create"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_led_unack_transition_object() {
    run(
        "acquire from led, unack transition object",
        Case {
            primary: Some("bing"),
            secondary: Some("bing"),
            expired: true,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: (&["get", "update"], &["get", "update"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_conflict_led_ack_transition_object() {
    run(
        "acquire from conflict led, ack transition object",
        Case {
            primary: Some("bing"),
            secondary: Some("baz"),
            expired: false,
            expect_success: false,
            transition_leader: false,
            out_holder: UNKNOWN_LEADER,
            calls: (&["get"], &["get"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn acquire_from_led_unack_unknown_object() {
    run(
        "acquire from led, unack unknown object",
        Case {
            primary: Some(UNKNOWN_LEADER),
            secondary: Some(UNKNOWN_LEADER),
            expired: true,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: (&["get", "update"], &["get", "update"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn dont_acquire_from_led_ack_old_object() {
    run(
        "don't acquire from led, ack old object",
        Case {
            primary: Some("bing"),
            secondary: None,
            expired: false,
            expect_success: false,
            transition_leader: false,
            out_holder: "bing",
            calls: (&["get"], &["get"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn dont_acquire_from_led_acked_new_object_observe_new_record() {
    run(
        "don't acquire from led, acked new object, observe new record",
        Case {
            primary: Some("baz"),
            secondary: Some("bing"),
            expired: false,
            expect_success: false,
            transition_leader: false,
            out_holder: UNKNOWN_LEADER,
            calls: (&["get"], &["get"]),
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn dont_acquire_from_led_acked_new_object_observe_transition_record() {
    run(
        "don't acquire from led, acked new object, observe transition record",
        Case {
            primary: Some("bing"),
            secondary: Some("bing"),
            expired: false,
            expect_success: false,
            transition_leader: false,
            out_holder: "bing",
            calls: (&["get"], &["get"]),
        },
    )
    .await;
}

/// client-go's "renew already required object": the leader renews both records, without a
/// transition (here after acquiring them first; the renewal takes the fast path, a write of
/// each record from the versions it last wrote).
#[tokio::test(start_paused = true)]
async fn renew_already_required_object() {
    let (p_store, s_store) = (MemoryStore::new("p"), MemoryStore::new("s"));
    let (p, s) = (
        CountingLock::new(&p_store, "baz"),
        CountingLock::new(&s_store, "baz"),
    );
    let le = LeaderElector::new(sim_config(MultiLock::new(p.clone(), s.clone()), 10));
    assert!(le.try_acquire_or_renew().await.unwrap());
    p.clear_calls();
    s.clear_calls();
    SimClock::advance(Duration::from_secs(2)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(
        (p.calls(), s.calls()),
        (vec!["update".to_owned()], vec!["update".to_owned()])
    );
    assert_eq!(le.leader().as_deref(), Some("baz"));
    let (pr, _) = p_store.peek().unwrap();
    assert_eq!(pr, s_store.peek().unwrap().0);
    assert_eq!(pr.leader_transitions, 0, "a renewal is not a transition");
}

/// Electors that know only the primary (step 1 of the migration) and multi-lock electors
/// (step 2) agree on one leader; multi-lock electors (step 2) and electors that know only the
/// secondary (step 3) too. Neither pair ever leads at once.
#[tokio::test(start_paused = true)]
async fn migration_stages_never_lead_together() {
    use lease_elect::{MemoryLock, ResourceLock};
    let (a, b) = (MemoryStore::new("a"), MemoryStore::new("b"));
    let old = LeaderElector::new(sim_config(MemoryLock::new(&a, "old"), 10));
    let mid = LeaderElector::new(sim_config(
        MultiLock::new(MemoryLock::new(&a, "mid"), MemoryLock::new(&b, "mid")),
        10,
    ));
    let new = LeaderElector::new(sim_config(MemoryLock::new(&b, "new"), 10));
    // Step 1 and 2 side by side: the old elector leads, the multi-lock elector follows it.
    assert!(old.try_acquire_or_renew().await.unwrap());
    for _ in 0..20 {
        SimClock::advance(Duration::from_secs(2)).await;
        assert!(old.try_acquire_or_renew().await.unwrap());
        assert!(!mid.try_acquire_or_renew().await.unwrap());
        assert_eq!(mid.leader().as_deref(), Some("old"));
    }
    // The old elector stops (crash): the multi-lock elector takes over and creates B.
    SimClock::advance(Duration::from_secs(10)).await;
    assert!(mid.try_acquire_or_renew().await.unwrap());
    assert_eq!(
        MemoryLock::new(&b, "x")
            .get()
            .await
            .unwrap()
            .unwrap()
            .0
            .holder_identity,
        "mid"
    );
    // Step 2 and 3 side by side: the new elector follows while mid renews.
    for _ in 0..20 {
        SimClock::advance(Duration::from_secs(2)).await;
        assert!(mid.try_acquire_or_renew().await.unwrap());
        assert!(!new.try_acquire_or_renew().await.unwrap());
        assert_eq!(new.leader().as_deref(), Some("mid"));
    }
    // mid stops: the new elector takes B over; mid, come back, sees B change and waits.
    SimClock::advance(Duration::from_secs(10)).await;
    assert!(new.try_acquire_or_renew().await.unwrap());
    let mid2 = LeaderElector::new(sim_config(
        MultiLock::new(MemoryLock::new(&a, "mid2"), MemoryLock::new(&b, "mid2")),
        10,
    ));
    for _ in 0..20 {
        SimClock::advance(Duration::from_secs(2)).await;
        assert!(new.try_acquire_or_renew().await.unwrap());
        assert!(!mid2.try_acquire_or_renew().await.unwrap());
        assert_eq!(mid2.leader().as_deref(), Some(UNKNOWN_LEADER));
    }
}
