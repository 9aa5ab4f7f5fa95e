//! [`ConfigMapLock`] and [`EndpointsLock`] against the loopback API server of
//! [`lease_elect_kube::testing`]: the conformance suite for each, for client-go's
//! `configmapsleases` and `endpointsleases` multi-locks, client-go's `tryAcquireOrRenew` table
//! for `configmaps` and `endpoints`, and the annotation's bytes.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_outage};
use lease_elect::{
    ElectionConfig, LeaderElectionRecord, LeaderElector, MultiLock, ResourceLock, UNKNOWN_LEADER,
};
use lease_elect_kube::testing::{ApiServer, Resource};
use lease_elect_kube::{
    AnnotationLock, AnnotationObject, ConfigMapLock, EndpointsLock, LEADER_ANNOTATION, LeaseLock,
};

const NAMESPACE: &str = "lease-elect-test";

fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_namespace = NAMESPACE.to_owned();
    config.connect_timeout = Some(Duration::from_secs(1));
    config.read_timeout = Some(Duration::from_secs(2));
    kube::Client::try_from(config).expect("a kube client")
}

/// Which lock a factory opens.
#[derive(Clone, Copy)]
enum Kind {
    ConfigMap,
    Endpoints,
    /// client-go's `configmapsleases`: a ConfigMap primary, a Lease secondary.
    ConfigMapsLeases,
    /// client-go's `endpointsleases`.
    EndpointsLeases,
}

struct Factory {
    server: Arc<tokio::sync::Mutex<ApiServer>>,
    url: String,
    kind: Kind,
}

fn annotation_lock<K: AnnotationObject>(url: &str, name: &str, id: &str) -> AnnotationLock<K> {
    AnnotationLock::<K>::new(client(url), NAMESPACE, name, id).with_timeout(Duration::from_secs(2))
}

fn lease_lock(url: &str, name: &str, id: &str) -> LeaseLock {
    LeaseLock::new(client(url), NAMESPACE, name, id).with_timeout(Duration::from_secs(2))
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        let url = &self.url;
        match self.kind {
            Kind::ConfigMap => Arc::new(annotation_lock::<k8s_openapi::api::core::v1::ConfigMap>(
                url, name, identity,
            )),
            Kind::Endpoints => Arc::new(annotation_lock::<k8s_openapi::api::core::v1::Endpoints>(
                url, name, identity,
            )),
            Kind::ConfigMapsLeases => Arc::new(MultiLock::new(
                annotation_lock::<k8s_openapi::api::core::v1::ConfigMap>(url, name, identity),
                lease_lock(url, name, identity),
            )),
            Kind::EndpointsLeases => Arc::new(MultiLock::new(
                annotation_lock::<k8s_openapi::api::core::v1::Endpoints>(url, name, identity),
                lease_lock(url, name, identity),
            )),
        }
    }

    fn time_precision(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        let resource = match self.kind {
            Kind::ConfigMap | Kind::ConfigMapsLeases => Resource::ConfigMap,
            Kind::Endpoints | Kind::EndpointsLeases => Resource::Endpoints,
        };
        self.server
            .lock()
            .await
            .modify(resource, NAMESPACE, name, |object| {
                object["metadata"]["annotations"][LEADER_ANNOTATION] =
                    serde_json::json!("{\"holderIdentity\":");
            });
        true
    }
}

async fn factory_of(kind: Kind) -> Factory {
    let server = ApiServer::start().await;
    let url = server.url();
    Factory {
        server: Arc::new(tokio::sync::Mutex::new(server)),
        url,
        kind,
    }
}

async fn configmaps() -> Option<Factory> {
    Some(factory_of(Kind::ConfigMap).await)
}

async fn endpoints() -> Option<Factory> {
    Some(factory_of(Kind::Endpoints).await)
}

async fn configmapsleases() -> Option<Factory> {
    Some(factory_of(Kind::ConfigMapsLeases).await)
}

async fn endpointsleases() -> Option<Factory> {
    Some(factory_of(Kind::EndpointsLeases).await)
}

mod configmap {
    lease_elect::conformance_tests!(super::configmaps);
}

mod endpoints {
    lease_elect::conformance_tests!(super::endpoints);
}

mod configmaps_leases {
    lease_elect::conformance_tests!(super::configmapsleases);
}

mod endpoints_leases {
    lease_elect::conformance_tests!(super::endpointsleases);
}

/// A ConfigMap written by client-go (its annotation as `kubectl get cm -o json` shows it) reads
/// as that record; our update writes client-go's bytes and keeps the data and the other
/// annotations.
#[tokio::test]
async fn client_go_annotation_bytes_and_content_kept() {
    let factory = factory_of(Kind::ConfigMap).await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client(&factory.url), NAMESPACE);
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
    let factory = factory_of(Kind::Endpoints).await;
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client(&factory.url), NAMESPACE);
    let eps: kube::Api<k8s_openapi::api::core::v1::Endpoints> =
        kube::Api::namespaced(client(&factory.url), NAMESPACE);
    let pp = kube::api::PostParams::default();
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).expect("cm");
    let refused = cms.replace("x", &pp, &cm).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 404),
        "{refused:?}"
    );
    let ep: k8s_openapi::api::core::v1::Endpoints =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).expect("ep");
    eps.replace("x", &pp, &ep)
        .await
        .expect("a PUT without a uid creates Endpoints");
    let ep: k8s_openapi::api::core::v1::Endpoints = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "y", "uid": "00000000-0000-0000-0000-000000000999"}}),
    )
    .expect("ep");
    let refused = eps.replace("y", &pp, &ep).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 409),
        "{refused:?}"
    );
    // The lock: a handle whose cached object was deleted meanwhile gets a conflict, and
    // nothing is created.
    let lock = factory.open("gone", "a").await;
    let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
    let v = lock.create(&record).await.expect("create");
    eps.delete("gone", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    assert!(lock.update(&v, &record).await.unwrap_err().is_conflict());
    assert!(lock.get().await.expect("get").is_none());
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
            .build()
            .expect("config"),
    )
}

async fn table_case(kind: Kind, name: &str, case: &Case) {
    let factory = factory_of(kind).await;
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
                let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                    kube::Api::namespaced(client(&factory.url), NAMESPACE);
                api.create(
                    &kube::api::PostParams::default(),
                    &serde_json::from_value(body).unwrap(),
                )
                .await
                .expect("create");
            }
            _ => {
                let api: kube::Api<k8s_openapi::api::core::v1::Endpoints> =
                    kube::Api::namespaced(client(&factory.url), NAMESPACE);
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
        let factory = factory_of(kind).await;
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
    let factory = factory_of(Kind::ConfigMapsLeases).await;
    let old = ConfigMapLock::new(client(&factory.url), NAMESPACE, "kcm", "old");
    old.create(&LeaderElectionRecord::new("old", 15, SystemTime::now()))
        .await
        .expect("create");
    let multi = factory.open("kcm", "new").await;
    let (record, _) = multi.get().await.unwrap().unwrap();
    assert_eq!(record.holder_identity, "old");
    let lease = LeaseLock::new(client(&factory.url), NAMESPACE, "kcm", "other");
    lease
        .create(&LeaderElectionRecord::new("other", 15, SystemTime::now()))
        .await
        .expect("create");
    let (record, _) = multi.get().await.unwrap().unwrap();
    assert_eq!(record.holder_identity, UNKNOWN_LEADER);
    let typed = MultiLock::new(
        EndpointsLock::new(client(&factory.url), NAMESPACE, "none", "x"),
        LeaseLock::new(client(&factory.url), NAMESPACE, "none", "x"),
    );
    assert!(typed.verify().await.unwrap().is_none());
    let mixed = MultiLock::new(old, lease);
    let err = mixed.verify().await.unwrap_err();
    assert!(err.to_string().contains("\"old\""), "{err}");
}

struct Control(Arc<tokio::sync::Mutex<ApiServer>>);

impl ServerControl for Control {
    async fn stop(&mut self) {
        self.0.lock().await.stop().await;
    }

    async fn start(&mut self) {
        self.0.lock().await.restart().await;
    }
}

/// The fault check of the suite: the API server stops for longer than the lease and comes
/// back; no two electors lead at once, and one leads again soon after.
async fn outage(kind: Kind) {
    let factory = factory_of(kind).await;
    let mut control = Control(Arc::clone(&factory.server));
    let timing = Timing::default();
    let report = server_outage(
        &factory,
        &mut control,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound() + Duration::from_secs(1),
    )
    .await;
    println!("{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_configmap() {
    outage(Kind::ConfigMap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_endpoints() {
    outage(Kind::Endpoints).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage_configmapsleases() {
    outage(Kind::ConfigMapsLeases).await;
}
