//! [`ConfigMapLock`] and [`EndpointsLock`] against the loopback API server of
//! [`lease_elect_kube::testing`]: the conformance suite for each, for client-go's
//! `configmapsleases` and `endpointsleases` multi-locks, client-go's `tryAcquireOrRenew` table
//! for `configmaps` and `endpoints`, and the annotation's bytes.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{Kind, KubeFactory, LoopbackFactory, NAMESPACE, loopback};
use lease_elect::testing::LockFactory;
use lease_elect::{
    ElectionConfig, LeaderElectionRecord, LeaderElector, MultiLock, ResourceLock, UNKNOWN_LEADER,
};
use lease_elect_kube::testing::Resource;
use lease_elect_kube::{ConfigMapLock, EndpointsLock, LEADER_ANNOTATION, LeaseLock};

common::conformance_per_kind!(loopback:
    configmap => ConfigMap,
    endpoints => Endpoints,
    configmaps_leases => ConfigMapsLeases,
    endpoints_leases => EndpointsLeases,
);

/// A ConfigMap written by client-go (its annotation as `kubectl get cm -o json` shows it) reads
/// as that record; our update writes client-go's bytes and keeps the data and the other
/// annotations.
#[tokio::test]
async fn client_go_annotation_bytes_and_content_kept() {
    let factory = LoopbackFactory::start(Kind::ConfigMap).await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = factory.api();
    let client_go = r#"{"holderIdentity":"master-1_6f0c2f6e","leaseDurationSeconds":15,"acquireTime":"2026-11-21T11:59:00Z","renewTime":"2026-11-21T12:00:01Z","leaderTransitions":4}"#;
    let cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-scheduler",
            "annotations": {LEADER_ANNOTATION: client_go, "other": "kept"},
            "labels": {"app": "sched"}
        },
        "data": {"config": "kept too"}
    }))
    .expect("a ConfigMap");
    api.create(&kube::api::PostParams::default(), &cm)
        .await
        .expect("create");
    let lock = factory.open("kube-scheduler", "ours").await;
    let (record, version) = lock.get().await.expect("get").expect("a record");
    assert_eq!(record.holder_identity, "master-1_6f0c2f6e");
    assert_eq!(record.leader_transitions, 4);
    assert_eq!(record.to_json().expect("json"), client_go);
    let mut taken = record.clone();
    taken.holder_identity = "ours".to_owned();
    taken.leader_transitions += 1;
    lock.update(&version, &taken).await.expect("update");
    let stored = factory
        .server
        .lock()
        .await
        .object(Resource::ConfigMap, NAMESPACE, "kube-scheduler")
        .expect("stored");
    assert_eq!(
        stored["metadata"]["annotations"][LEADER_ANNOTATION],
        r#"{"holderIdentity":"ours","leaseDurationSeconds":15,"acquireTime":"2026-11-21T11:59:00Z","renewTime":"2026-11-21T12:00:01Z","leaderTransitions":5}"#
    );
    assert_eq!(stored["metadata"]["annotations"]["other"], "kept");
    assert_eq!(stored["metadata"]["labels"]["app"], "sched");
    assert_eq!(stored["data"]["config"], "kept too");
}

/// What the server does with a PUT to a missing object, and that the lock never creates one
/// by an update: ConfigMaps have no create-on-update (404); Endpoints do, unless the body
/// carries a uid (409).
#[tokio::test]
async fn put_to_a_missing_object() {
    common::a_put_to_a_missing_configmap_or_endpoints(loopback(Kind::Endpoints).await).await;
}

// ---- client-go's testTryAcquireOrRenew table, for "configmaps" and "endpoints" ----

/// One case: the object the server holds (`None`: none; `Some(None)`: no annotation), whether
/// its lease has run out when the elector tries, and client-go's expected outcome and API
/// calls.
struct Case {
    object: Option<Option<&'static str>>,
    expired: bool,
    expect_success: bool,
    transition_leader: bool,
    out_holder: &'static str,
    calls: &'static [&'static str],
}

fn elector(lock: Arc<dyn ResourceLock>) -> LeaderElector {
    LeaderElector::new(
        ElectionConfig::builder()
            .shared_lock(lock)
            .lease_duration(Duration::from_secs(10))
            .renew_deadline(Duration::from_secs(5))
            .retry_period(Duration::from_secs(1))
            // client-go creates a missing object at once, as these ported cases expect.
            .absent_record_wait(false)
            .build()
            .expect("config"),
    )
}

async fn table_case(kind: Kind, name: &str, case: &Case) {
    let factory = LoopbackFactory::start(kind).await;
    let plural = match kind {
        Kind::ConfigMap => "configmaps",
        _ => "endpoints",
    };
    let lock_name = lease_elect::testing::unique_name("table");
    if let Some(holder) = case.object {
        // client-go's createLockObject: an object with the record (lease 1 s, so an unacked
        // one runs out quickly) or without annotations.
        let annotations = holder.map(|h| {
            serde_json::json!({LEADER_ANNOTATION: serde_json::json!({
                "holderIdentity": h, "leaseDurationSeconds": 1,
                "acquireTime": null, "renewTime": null, "leaderTransitions": 0,
            }).to_string()})
        });
        let body = serde_json::json!({"metadata": {"name": lock_name, "annotations": annotations}});
        match kind {
            Kind::ConfigMap => {
                let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = factory.api();
                api.create(
                    &kube::api::PostParams::default(),
                    &serde_json::from_value(body).unwrap(),
                )
                .await
                .expect("create");
            }
            _ => {
                let api: kube::Api<k8s_openapi::api::core::v1::Endpoints> = factory.api();
                api.create(
                    &kube::api::PostParams::default(),
                    &serde_json::from_value(body).unwrap(),
                )
                .await
                .expect("create");
            }
        }
    }
    let le = elector(factory.open(&lock_name, "baz").await);
    let held = matches!(case.object, Some(Some(h)) if !h.is_empty() && h != "baz");
    if held {
        // Observe first (client-go's observedRecord), then let the lease run out or not.
        assert!(!le.try_acquire_or_renew().await.unwrap(), "{name}");
        if case.expired {
            tokio::time::sleep(Duration::from_millis(1_100)).await;
        }
    }
    factory.server.lock().await.clear_requests();
    let ok = le.try_acquire_or_renew().await.unwrap();
    assert_eq!(ok, case.expect_success, "{name}: success");
    assert_eq!(
        le.leader().as_deref(),
        Some(case.out_holder),
        "{name}: holder"
    );
    let expected: Vec<String> = case
        .calls
        .iter()
        .map(|verb| format!("{verb} {plural}"))
        .collect();
    assert_eq!(
        factory.server.lock().await.requests(),
        expected,
        "{name}: API calls"
    );
    if ok {
        let (record, _) = factory
            .open(&lock_name, "reader")
            .await
            .get()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.holder_identity, "baz");
        assert_eq!(
            record.leader_transitions,
            u64::from(case.transition_leader),
            "{name}: transition"
        );
    }
}

const TABLE: &[(&str, Case)] = &[
    (
        "acquire from no object",
        Case {
            object: None,
            expired: false,
            expect_success: true,
            transition_leader: false,
            out_holder: "baz",
            calls: &["get", "create"],
        },
    ),
    (
        "acquire from object without annotations",
        Case {
            object: Some(None),
            expired: false,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: &["get", "update"],
        },
    ),
    (
        "acquire from unled object",
        Case {
            object: Some(Some("")),
            expired: false,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: &["get", "update"],
        },
    ),
    (
        "acquire from led, unacked object",
        Case {
            object: Some(Some("bing")),
            expired: true,
            expect_success: true,
            transition_leader: true,
            out_holder: "baz",
            calls: &["get", "update"],
        },
    ),
    (
        "don't acquire from led, acked object",
        Case {
            object: Some(Some("bing")),
            expired: false,
            expect_success: false,
            transition_leader: false,
            out_holder: "bing",
            calls: &["get"],
        },
    ),
];

#[tokio::test]
async fn try_acquire_or_renew_configmaps() {
    for (name, case) in TABLE {
        table_case(Kind::ConfigMap, name, case).await;
    }
}

#[tokio::test]
async fn try_acquire_or_renew_endpoints() {
    for (name, case) in TABLE {
        table_case(Kind::Endpoints, name, case).await;
    }
}

/// client-go's "renew already acquired object": the leader renews with one `update` (the fast
/// path) and no transition.
#[tokio::test]
async fn renew_already_acquired_object() {
    for kind in [Kind::ConfigMap, Kind::Endpoints] {
        let factory = LoopbackFactory::start(kind).await;
        let le = elector(factory.open("renew", "baz").await);
        assert!(le.try_acquire_or_renew().await.unwrap());
        factory.server.lock().await.clear_requests();
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        assert!(le.try_acquire_or_renew().await.unwrap());
        let requests = factory.server.lock().await.requests();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].starts_with("update "));
        let (record, _) = factory
            .open("renew", "r")
            .await
            .get()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.leader_transitions, 0);
        assert_eq!(le.leader().as_deref(), Some("baz"));
    }
}

/// `configmapsleases` on the API server: a ConfigMap led by an old client-go (no Lease) is
/// followed; records that disagree read as the unknown leader.
#[tokio::test]
async fn configmapsleases_follows_an_old_client_and_reports_a_mismatch() {
    let factory = LoopbackFactory::start(Kind::ConfigMapsLeases).await;
    let old = ConfigMapLock::new(factory.client(), NAMESPACE, "kcm", "old");
    old.create(&LeaderElectionRecord::new("old", 15, SystemTime::now()))
        .await
        .expect("create");
    let multi = factory.open("kcm", "new").await;
    let (record, _) = multi.get().await.unwrap().unwrap();
    assert_eq!(record.holder_identity, "old");
    let lease = LeaseLock::new(factory.client(), NAMESPACE, "kcm", "other");
    lease
        .create(&LeaderElectionRecord::new("other", 15, SystemTime::now()))
        .await
        .expect("create");
    let (record, _) = multi.get().await.unwrap().unwrap();
    assert_eq!(record.holder_identity, UNKNOWN_LEADER);
    let typed = MultiLock::new(
        EndpointsLock::new(factory.client(), NAMESPACE, "none", "x"),
        LeaseLock::new(factory.client(), NAMESPACE, "none", "x"),
    );
    assert!(typed.verify().await.unwrap().is_none());
    let mixed = MultiLock::new(old, lease);
    let err = mixed.verify().await.unwrap_err();
    assert!(err.to_string().contains("\"old\""), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_configmap() {
    common::loopback_outage(Kind::ConfigMap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_endpoints() {
    common::loopback_outage(Kind::Endpoints).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_configmapsleases() {
    common::loopback_outage(Kind::ConfigMapsLeases).await;
}
