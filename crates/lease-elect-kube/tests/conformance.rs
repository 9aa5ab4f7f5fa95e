//! The lease-elect conformance suite on [`LeaseLock`] against the loopback Kubernetes API
//! server of [`lease_elect_kube::testing`]: no API server can be installed here. What this does
//! and does not prove about a real cluster is written in docs/backends.md.

use std::sync::Arc;
use std::time::Duration;

use lease_elect::ResourceLock;
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_outage};
use lease_elect_kube::LeaseLock;

use lease_elect_kube::testing::ApiServer;

const NAMESPACE: &str = "lease-elect-test";

struct Factory {
    server: Arc<tokio::sync::Mutex<ApiServer>>,
    url: String,
}

fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_namespace = NAMESPACE.to_owned();
    config.connect_timeout = Some(Duration::from_secs(1));
    config.read_timeout = Some(Duration::from_secs(2));
    kube::Client::try_from(config).expect("a kube client")
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            LeaseLock::new(client(&self.url), NAMESPACE, name, identity)
                .with_timeout(Duration::from_secs(2)),
        )
    }

    fn time_precision(&self) -> Duration {
        Duration::from_micros(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        self.server.lock().await.set_spec_field(
            NAMESPACE,
            name,
            "leaseDurationSeconds",
            serde_json::json!(-1),
        );
        true
    }
}

async fn new_factory() -> Factory {
    let server = ApiServer::start().await;
    let url = server.url();
    Factory {
        server: Arc::new(tokio::sync::Mutex::new(server)),
        url,
    }
}

async fn factory() -> Option<Factory> {
    Some(new_factory().await)
}

lease_elect::conformance_tests!(factory);

struct Control(Arc<tokio::sync::Mutex<ApiServer>>);

impl ServerControl for Control {
    async fn stop(&mut self) {
        self.0.lock().await.stop().await;
    }

    async fn start(&mut self) {
        self.0.lock().await.restart().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let factory = new_factory().await;
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

/// A Lease written by client-go (as `kubectl get lease -o json` shows one) reads as the record
/// client-go's `LeaseSpecToLeaderElectionRecord` gives, and our update keeps its labels.
#[tokio::test]
async fn reads_client_go_lease_and_keeps_metadata() {
    let factory = new_factory().await;
    let http = client(&factory.url);
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(http, NAMESPACE);
    let lease: k8s_openapi::api::coordination::v1::Lease =
        serde_json::from_value(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kube-controller-manager", "labels": {"app": "kcm"}},
            "spec": {
                "holderIdentity": "master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11",
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-11-21T11:59:00.000000Z",
                "renewTime": "2026-11-21T12:00:01.250000Z",
                "leaseTransitions": 4
            }
        }))
        .expect("a Lease");
    api.create(&kube::api::PostParams::default(), &lease)
        .await
        .expect("create");
    let lock = factory.open("kube-controller-manager", "ours").await;
    let (record, version) = lock.get().await.expect("get").expect("a record");
    assert_eq!(
        record.to_json().expect("json"),
        r#"{"holderIdentity":"master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11","leaseDurationSeconds":15,"acquireTime":"2026-11-21T11:59:00Z","renewTime":"2026-11-21T12:00:01Z","leaderTransitions":4}"#
    );
    let mut taken = record.clone();
    taken.holder_identity = "ours".to_owned();
    taken.leader_transitions += 1;
    lock.update(&version, &taken).await.expect("update");
    let stored = api.get("kube-controller-manager").await.expect("get");
    assert_eq!(
        stored
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app"))
            .map(String::as_str),
        Some("kcm"),
        "an update keeps the Lease's labels"
    );
    let spec = stored.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("ours"));
    assert_eq!(spec.lease_transitions, Some(5));
    assert_eq!(spec.lease_duration_seconds, Some(15));
}

async fn v1_20_factory() -> Option<V120Factory> {
    let server = ApiServer::start_v1_20().await;
    let url = server.url();
    Some(V120Factory(Factory {
        server: Arc::new(tokio::sync::Mutex::new(server)),
        url,
    }))
}

/// A factory on a server that drops `strategy` and `preferredHolder`, as a 1.20 one does.
struct V120Factory(Factory);

impl LockFactory for V120Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        self.0.open(name, identity).await
    }

    fn time_precision(&self) -> Duration {
        self.0.time_precision()
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    fn keeps_newer_fields(&self) -> bool {
        false
    }

    async fn corrupt(&self, name: &str) -> bool {
        self.0.corrupt(name).await
    }
}

/// The whole suite against a server that drops the fields it does not know (Kubernetes 1.20).
mod v1_20 {
    use super::v1_20_factory;

    lease_elect::conformance_tests!(v1_20_factory);
}

/// A PUT that changes nothing keeps the `resourceVersion`, as on a real API server.
#[tokio::test]
async fn an_identical_put_keeps_the_resource_version() {
    let factory = new_factory().await;
    let lock = factory.open("noop", "a").await;
    let record = lease_elect::LeaderElectionRecord::new("a", 15, std::time::SystemTime::now());
    let v1 = lock.create(&record).await.expect("create");
    let v2 = lock.update(&v1, &record).await.expect("identical update");
    assert_eq!(v1, v2, "a no-op PUT keeps the resourceVersion");
    let mut changed = record.clone();
    changed.leader_transitions += 1;
    let v3 = lock.update(&v2, &changed).await.expect("update");
    assert_ne!(v3, v2);
}

/// A PUT to a missing Lease creates it unless the body carries `metadata.uid` (409); the lock
/// always sends the uid, so its update of a missing Lease is a conflict and creates nothing.
#[tokio::test]
async fn a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid() {
    let factory = new_factory().await;
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client(&factory.url), NAMESPACE);
    let bare = |name: &str, uid: Option<&str>| {
        serde_json::from_value::<k8s_openapi::api::coordination::v1::Lease>(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "resourceVersion": "12345", "uid": uid},
            "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15}
        }))
        .expect("a Lease")
    };
    let pp = kube::api::PostParams::default();
    let created = api
        .replace("created-by-put", &pp, &bare("created-by-put", None))
        .await
        .expect("a PUT without a uid creates the Lease");
    assert!(created.metadata.uid.is_some());
    let refused = api
        .replace(
            "refused-put",
            &pp,
            &bare("refused-put", Some("00000000-0000-0000-0000-000000000999")),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 409),
        "{refused:?}"
    );
    assert!(api.get_opt("refused-put").await.expect("get").is_none());

    // The lock: a version from another Lease, on a handle that never read this one.
    let other = factory.open("other", "a").await;
    let record = lease_elect::LeaderElectionRecord::new("a", 15, std::time::SystemTime::now());
    let v = other.create(&record).await.expect("create");
    let absent = factory.open("absent", "a").await;
    assert!(absent.update(&v, &record).await.unwrap_err().is_conflict());
    assert!(absent.get().await.expect("get").is_none());
    // A handle whose cached Lease was deleted meanwhile: the uid makes the PUT a conflict.
    let (_, v) = other.get().await.expect("get").expect("a record");
    api.delete("other", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    assert!(other.update(&v, &record).await.unwrap_err().is_conflict());
    assert!(other.get().await.expect("get").is_none());
}

/// A 1.20 server drops `strategy` and `preferredHolder`; the elector still leads and renews.
#[tokio::test]
async fn an_elector_works_on_a_server_that_drops_newer_fields() {
    let factory = v1_20_factory().await.expect("factory");
    let lock = factory.open("old-server", "a").await;
    let mut record = lease_elect::LeaderElectionRecord::new("b", 15, std::time::SystemTime::now());
    record.strategy = Some("OldestEmulationVersion".to_owned());
    record.preferred_holder = Some("b".to_owned());
    lock.create(&record).await.expect("create");
    let (read, _) = lock.get().await.expect("get").expect("a record");
    assert_eq!((read.strategy, read.preferred_holder), (None, None));
    let elector = lease_elect::LeaderElector::new(
        lease_elect::ElectionConfig::builder()
            .shared_lock(factory.open("old-server-2", "a").await)
            .build()
            .expect("config"),
    );
    assert!(elector.try_acquire_or_renew().await.expect("acquire"));
    assert!(elector.try_acquire_or_renew().await.expect("renew"));
}

/// Coordinated election on the API server: candidates as LeaseCandidate objects, electors and
/// the coordinator on `LeaseLock`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election() {
    const TTL: Duration = Duration::from_secs(2);
    let factory = new_factory().await;
    let election = lease_elect::testing::unique_name("cle");
    let candidates =
        lease_elect_kube::LeaseCandidates::new(client(&factory.url), NAMESPACE, election, TTL);
    let report = lease_elect::testing::coordinated::coordinated_election(
        &factory,
        Arc::new(candidates),
        TTL,
        Timing::default(),
    )
    .await;
    println!("{report:?}");
}

/// LeaseCandidates as the API server stores them, and a PUT without a resourceVersion refused
/// for Leases (422) as the Lease strategy refuses unconditional updates.
#[tokio::test]
async fn lease_candidates_stored_and_unconditional_lease_put_refused() {
    use lease_elect::coordinated::{Candidate, CandidateStore};
    use lease_elect_kube::testing::Resource;
    let factory = new_factory().await;
    let candidates = lease_elect_kube::LeaseCandidates::new(
        client(&factory.url),
        NAMESPACE,
        "sched",
        Duration::from_secs(60),
    );
    let c = Candidate::new("node-a", "1.33".parse().unwrap(), "1.34.1".parse().unwrap())
        .with_strategy("example.com/custom")
        .unwrap();
    candidates.register(&c).await.expect("register");
    candidates.register(&c).await.expect("renew");
    let stored = factory
        .server
        .lock()
        .await
        .object(Resource::LeaseCandidate, NAMESPACE, "sched-node-a")
        .expect("stored");
    assert_eq!(stored["spec"]["leaseName"], "sched");
    assert_eq!(stored["spec"]["binaryVersion"], "1.34.1");
    assert_eq!(stored["spec"]["emulationVersion"], "1.33.0");
    assert_eq!(stored["spec"]["strategy"], "example.com/custom");
    let renew = stored["spec"]["renewTime"].as_str().expect("renewTime");
    assert!(
        renew.len() == 27 && renew.ends_with('Z'),
        "MicroTime: {renew}"
    );
    assert_eq!(candidates.candidates().await.unwrap(), vec![c]);
    candidates.deregister("node-a").await.expect("deregister");
    assert!(candidates.candidates().await.unwrap().is_empty());

    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client(&factory.url), NAMESPACE);
    let lease = |rv: Option<&str>| {
        serde_json::from_value::<k8s_openapi::api::coordination::v1::Lease>(serde_json::json!({
            "metadata": {"name": "l", "resourceVersion": rv},
            "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15}
        }))
        .expect("a Lease")
    };
    let pp = kube::api::PostParams::default();
    api.create(&pp, &lease(None)).await.expect("create");
    let refused = api.replace("l", &pp, &lease(None)).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 422),
        "{refused:?}"
    );
}
